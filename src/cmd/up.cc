// rampart up: starts every node of the cluster file as a child process
// (`rampart kv-node --id N`) and the proxy (`rampart proxy`), waits until every partition port accepts a TCP
// connection, prints what runs where and "ready", and stops everything on
// SIGINT or SIGTERM.
//
// Signals: SIGINT, SIGTERM and SIGCHLD are blocked before the first fork and
// taken with sigtimedwait, so a child that dies wakes `up` at once. Children
// restore the original mask before exec and get PR_SET_PDEATHSIG(SIGTERM), so
// they stop when `up` dies, however it dies.
//
// Exit codes: 0 after a requested stop; 1 when a node fails to start or dies
// while running (the others are stopped first); 2 for a bad configuration.
#include <CLI/CLI.hpp>

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cmd/commands.h"
#include "common/tcp_probe.h"
#include "kv/node.h"
#include "kv/placement.h"

namespace rampart::cmd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kReadyTimeout = std::chrono::seconds(20);
constexpr auto kStopTimeout = std::chrono::seconds(5);

struct Child {
  std::string label;  // "node 3", "proxy"
  std::vector<std::string> command;  // after the global flags: {"kv-node", "--id", "3"}
  uint32_t node_id = 0;
  std::string host;
  std::vector<uint32_t> partitions;
  std::vector<uint16_t> ports;
  pid_t pid = -1;
  bool running = false;  // not reaped yet
  int status = 0;        // waitpid status once reaped
};

// "exit status 3", "killed by signal 9 (Killed)"
std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return StrCat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return StrCat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  return StrCat("wait status ", status);
}

std::string JoinNumbers(const auto& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

// Reaps every child that has exited; returns the first newly reaped one, or nullptr.
Child* ReapExited(std::vector<Child>& children) {
  Child* first = nullptr;
  for (Child& c : children) {
    if (!c.running) continue;
    int status = 0;
    const pid_t r = waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid || (r < 0 && errno == ECHILD)) {
      c.running = false;
      c.status = status;
      if (first == nullptr) first = &c;
    }
  }
  return first;
}

bool AnyRunning(const std::vector<Child>& children) {
  for (const Child& c : children) {
    if (c.running) return true;
  }
  return false;
}

// SIGTERM to every running child, up to kStopTimeout for them to exit, then
// SIGKILL for the rest; reaps them all.
void StopAll(std::vector<Child>& children) {
  for (const Child& c : children) {
    if (c.running) kill(c.pid, SIGTERM);
  }
  const auto deadline = Clock::now() + kStopTimeout;
  while (Clock::now() < deadline) {
    while (ReapExited(children) != nullptr) {
    }
    if (!AnyRunning(children)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (Child& c : children) {
    if (!c.running) continue;
    spdlog::warn("{} (pid {}) did not stop within {} s; killing it", c.label, c.pid,
                 std::chrono::duration_cast<std::chrono::seconds>(kStopTimeout).count());
    kill(c.pid, SIGKILL);
    waitpid(c.pid, &c.status, 0);
    c.running = false;
  }
}

// Waits up to `timeout` for SIGINT, SIGTERM or SIGCHLD; returns the signal or 0.
int WaitSignal(const sigset_t& set, std::chrono::milliseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000),
              static_cast<long>((timeout.count() % 1000) * 1000000)};
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

int RunUp(CommandContext& ctx) {
  const Result<ClusterConfig>& config = ctx.config();
  if (!config.ok()) return ReportUsageError(config.status());
  auto placement = kv::Placement::Create(config->nodes, config->kv.partitions_per_node);
  if (!placement.ok()) return ReportUsageError(placement.status());
  // What every kv-node would reject at start is a usage error here, once.
  if (auto options = kv::ExecutorOptionsFromConfig(*config); !options.ok()) {
    return ReportUsageError(options.status());
  }

  char exe[4096];
  const ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (exe_len <= 0) return ReportFailure(ErrnoStatus("cannot read /proc/self/exe", errno));
  exe[exe_len] = '\0';

  std::vector<Child> children;
  for (const NodeConfig& node : config->nodes) {
    Child c;
    c.label = StrCat("node ", node.id);
    c.command = {"kv-node", "--id", std::to_string(node.id)};
    c.node_id = node.id;
    c.host = node.host;
    for (uint32_t p : placement->PartitionsOfNode(node.id)) {
      c.partitions.push_back(p);
      c.ports.push_back(placement->Address(p).port);
    }
    children.push_back(std::move(c));
  }
  if (config->proxy.enabled) {
    Child c;
    c.label = "proxy";
    c.command = {"proxy"};
    c.host = config->proxy.host;
    c.ports = {config->proxy.port};
    children.push_back(std::move(c));
  }

  sigset_t signals, old_mask;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGCHLD);
  sigprocmask(SIG_BLOCK, &signals, &old_mask);
  std::fflush(stdout);
  std::fflush(stderr);

  const pid_t parent = getpid();
  for (Child& c : children) {
    // Everything exec needs is built before fork: the child only makes
    // async-signal-safe calls.
    std::vector<std::string> args = {exe};
    if (!ctx.config_path.empty()) {
      args.push_back("--config");
      args.push_back(ctx.config_path);
    }
    args.insert(args.end(), {"--log-level", ctx.log_level});
    args.insert(args.end(), c.command.begin(), c.command.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);  // `up` already died
      sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      execv(exe, argv.data());
      _exit(127);
    }
    if (pid < 0) {
      const int err = errno;
      StopAll(children);
      return ReportFailure(InternalError("fork for ", c.label, ": ", strerror(err)));
    }
    c.pid = pid;
    c.running = true;
    spdlog::debug("{}: started pid {}", c.label, pid);
  }

  // Wait until every partition port accepts a connection.
  const auto deadline = Clock::now() + kReadyTimeout;
  std::vector<bool> ready(children.size(), false);
  for (;;) {
    if (Child* dead = ReapExited(children)) {
      std::fprintf(stderr, "rampart: %s (pid %d) exited during start: %s\n", dead->label.c_str(),
                   static_cast<int>(dead->pid), DescribeStatus(dead->status).c_str());
      StopAll(children);
      return kExitFailure;
    }
    bool all = true;
    for (size_t i = 0; i < children.size(); ++i) {
      if (ready[i]) continue;
      bool node_ready = true;
      for (uint16_t port : children[i].ports) {
        if (!AcceptsTcp(children[i].host, port, /*timeout_ms=*/200)) {
          node_ready = false;
          break;
        }
      }
      ready[i] = node_ready;
      all = all && node_ready;
    }
    if (all) break;
    if (Clock::now() >= deadline) {
      std::string waiting;
      for (size_t i = 0; i < children.size(); ++i) {
        if (!ready[i]) waiting += (waiting.empty() ? "" : ", ") + children[i].label;
      }
      std::fprintf(stderr, "rampart: %s not listening on all ports after %lld s; stopping\n",
                   waiting.c_str(),
                   static_cast<long long>(
                       std::chrono::duration_cast<std::chrono::seconds>(kReadyTimeout).count()));
      StopAll(children);
      return kExitFailure;
    }
    const int sig = WaitSignal(signals, std::chrono::milliseconds(50));
    if (sig == SIGINT || sig == SIGTERM) {
      spdlog::info("{} received during start; stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
      StopAll(children);
      return kExitOk;
    }
  }

  for (const Child& c : children) {
    if (c.label == "proxy") {
      const uint32_t workers = config->proxy.workers != 0
                                   ? config->proxy.workers
                                   : std::max(1u, std::thread::hardware_concurrency());
      std::printf("proxy: pid %d, %s:%u, %u workers, aggregation %s\n", static_cast<int>(c.pid),
                  c.host.c_str(), c.ports[0], workers, config->proxy.aggregate ? "on" : "off");
      continue;
    }
    std::printf("node %u: pid %d, partitions %s on %s:%s over %s\n", c.node_id,
                static_cast<int>(c.pid), JoinNumbers(c.partitions).c_str(), c.host.c_str(),
                JoinNumbers(c.ports).c_str(), config->transport.backend.c_str());
  }
  std::printf("ready: cluster \"%s\", %zu nodes, %u partitions; Ctrl-C or SIGTERM stops it\n",
              config->name.c_str(), config->nodes.size(), placement->partition_count());
  std::fflush(stdout);

  for (;;) {
    const int sig = WaitSignal(signals, std::chrono::milliseconds(500));
    if (Child* dead = ReapExited(children)) {
      std::fprintf(stderr, "rampart: %s (pid %d) died: %s; stopping the cluster\n",
                   dead->label.c_str(), static_cast<int>(dead->pid),
                   DescribeStatus(dead->status).c_str());
      StopAll(children);
      return kExitFailure;
    }
    if (sig == SIGINT || sig == SIGTERM) {
      spdlog::info("{} received; stopping {} processes", sig == SIGINT ? "SIGINT" : "SIGTERM",
                   children.size());
      StopAll(children);
      for (const Child& c : children) {
        if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
          spdlog::warn("{} (pid {}) stopped with {}", c.label, c.pid,
                       DescribeStatus(c.status));
        }
      }
      std::printf("stopped\n");
      std::fflush(stdout);
      return kExitOk;
    }
  }
}

}  // namespace

void RegisterUpCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* cmd = app.add_subcommand(
      "up",
      "Start every node of the cluster file as a child process (`rampart kv-node --id N`) and, "
      "unless proxy.enabled is false, the Redis-protocol proxy (`rampart proxy`); wait until "
      "every partition port and the proxy port accept connections (at most 20 s), print what "
      "runs where and \"ready\"; SIGINT or SIGTERM stops them all (SIGTERM, SIGKILL after 5 s) "
      "and exits 0. A process that fails to start or dies stops the cluster: exit 1. Children "
      "die with `up`.");
  OnRun(cmd, ctx, [&ctx] { return RunUp(ctx); });
}

}  // namespace rampart::cmd
