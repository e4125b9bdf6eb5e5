// Test helpers for transport tests: child processes that are always stopped.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <optional>
#include <sys/select.h>
#include <thread>

namespace rampart::transport::testing {

// A child process this test owns: killed by PID (SIGKILL) and reaped in the
// destructor, so a failing test never leaves a process behind.
class OwnedProcess {
 public:
  OwnedProcess() = default;
  OwnedProcess(const OwnedProcess&) = delete;
  OwnedProcess& operator=(const OwnedProcess&) = delete;
  ~OwnedProcess() { Kill(); }

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }

  // SIGKILL and reap; idempotent.
  void Kill() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      reaped_ = true;
    }
  }

  // Waits up to `timeout` for the child to exit; returns its exit code, or -1
  // if it is still running (it is then left for the destructor to kill), or
  // 128+signal if a signal ended it.
  int WaitExit(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
        return -1;
      }
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

 protected:
  pid_t pid_ = -1;

 private:
  bool reaped_ = false;
};

// Runs `body` in a forked child process, which exits with body's return value
// and never returns into the test.
class ChildProcess : public OwnedProcess {
 public:
  explicit ChildProcess(const std::function<int()>& body) {
    pid_ = fork();
    if (pid_ == 0) {
      int rc = 1;
      try {
        rc = body();
      } catch (...) {
        rc = 99;
      }
      _exit(rc);
    }
  }
};

// A pipe the child uses to tell the parent something small (a port number).
class Pipe {
 public:
  Pipe() {
    if (pipe(fds_) != 0) std::abort();
  }
  ~Pipe() {
    close(fds_[0]);
    close(fds_[1]);
  }
  void WriteU64(uint64_t v) { (void)!write(fds_[1], &v, sizeof v); }
  int write_fd() const { return fds_[1]; }
  // Returns nullopt after `timeout` without data, or if the writer closed.
  std::optional<uint64_t> ReadU64(std::chrono::milliseconds timeout);

 private:
  int fds_[2];
};

inline std::optional<uint64_t> Pipe::ReadU64(std::chrono::milliseconds timeout) {
  uint64_t value = 0;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t got = 0;
  while (got < sizeof value) {
    fd_set set;
    FD_ZERO(&set);
    FD_SET(fds_[0], &set);
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    timeval tv{static_cast<time_t>(left.count() / 1000000),
               static_cast<suseconds_t>(left.count() % 1000000)};
    if (select(fds_[0] + 1, &set, nullptr, nullptr, &tv) <= 0) continue;
    ssize_t n = read(fds_[0], reinterpret_cast<char*>(&value) + got, sizeof value - got);
    if (n <= 0) return std::nullopt;
    got += static_cast<size_t>(n);
  }
  return value;
}

using PeerMain = int (*)(const std::vector<std::string>& args, int report_fd);
inline std::map<std::string, PeerMain>& PeerRegistry() {
  static std::map<std::string, PeerMain> registry;
  return registry;
}
struct PeerRegistration {
  PeerRegistration(const char* name, PeerMain fn) { PeerRegistry()[name] = fn; }
};
// RAMPART_TEST_PEER(echo) { ...; return 0; }  — args and report_fd in scope.
#define RAMPART_TEST_PEER(name)                                                          \
  static int name##_peer_main(const std::vector<std::string>& args, int report_fd);      \
  static ::rampart::transport::testing::PeerRegistration name##_peer_registration(       \
      #name, &name##_peer_main);                                                         \
  static int name##_peer_main([[maybe_unused]] const std::vector<std::string>& args,     \
                              [[maybe_unused]] int report_fd)

// Runs a registered peer role (RAMPART_TEST_PEER) in a fresh process: this
// test binary exec'd again, so the child starts with no UCX state inherited.
// `args` reach the role's function; the pipe's write end is passed along so
// the child can report a port. The child dies with the test binary.
class PeerProcess : public OwnedProcess {
 public:
  PeerProcess(const std::string& role, const std::vector<std::string>& args) {
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test binary
      std::string fd = std::to_string(pipe_.write_fd());
      setenv("RAMPART_TEST_PEER", role.c_str(), 1);
      setenv("RAMPART_TEST_PEER_FD", fd.c_str(), 1);
      std::vector<char*> argv;
      std::string self = "/proc/self/exe";
      argv.push_back(self.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
  }

  std::optional<uint64_t> ReadReport(std::chrono::milliseconds timeout) { return pipe_.ReadU64(timeout); }

 private:
  Pipe pipe_;
};

// In a peer process: reports a value (e.g. a port) to the parent.
inline void ReportToParent(int report_fd, uint64_t v) { (void)!write(report_fd, &v, sizeof v); }

}  // namespace rampart::transport::testing
