// rampart up: starts every process of the cluster file as a child — the
// storage nodes (`rampart storage-node --id N`), the kv-nodes (`rampart
// kv-node --id N`, which recover their redo logs first) and the proxy
// (`rampart proxy`) —, waits until every port accepts a TCP connection,
// prints what runs where and "ready", supervises them, and stops everything
// on SIGINT or SIGTERM.
//
// Supervision. A child that dies while the cluster runs is started again
// after a backoff (100 ms, doubling with each death in the last minute, at
// most 5 s); `up` reports the death on stderr and, once the new process
// listens, a "restarted ..." line on stdout. The others keep serving
// meanwhile. A child that dies more than kMaxDeaths times within kDeathWindow
// is crash-looping: `up` stops the cluster and exits 1.
//
// Signals: SIGINT, SIGTERM and SIGCHLD are blocked before the first fork and
// taken with sigtimedwait, so a child that dies wakes `up` at once. Children
// restore the original mask before exec and get PR_SET_PDEATHSIG(SIGTERM), so
// they stop when `up` dies, however it dies.
//
// Exit codes: 0 after a requested stop; 1 when a process fails to start or
// crash-loops (the others are stopped first); 2 for a bad configuration.
#include <CLI/CLI.hpp>

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cmd/commands.h"
#include "common/local_host.h"
#include "common/tcp_probe.h"
#include "kv/node.h"
#include "kv/placement.h"

namespace rampart::cmd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kReadyTimeout = std::chrono::seconds(20);
constexpr auto kStopTimeout = std::chrono::seconds(5);
constexpr auto kFirstBackoff = milliseconds(100);
constexpr auto kMaxBackoff = milliseconds(5000);
constexpr size_t kMaxDeaths = 5;
constexpr auto kDeathWindow = std::chrono::seconds(60);

// Started in this order, each kind once the one before listens: the kv-nodes
// recover from log volumes on the storage nodes, the proxy asks the kv-nodes
// for their newest timestamp.
enum class Kind { kStorageNode, kKvNode, kProxy };

struct Child {
  Kind kind = Kind::kKvNode;
  std::string label;                 // "node 3", "storage node 1", "proxy"
  std::vector<std::string> command;  // after the global flags: {"kv-node", "--id", "3"}
  std::string line;                  // what `ready` prints about it, after "pid P, "
  std::string host;
  std::vector<uint16_t> ports;
  pid_t pid = -1;
  bool running = false;  // not reaped yet
  int status = 0;        // waitpid status once reaped
  // Supervision.
  std::deque<Clock::time_point> deaths;  // within kDeathWindow
  std::optional<Clock::time_point> restart_at;
  bool awaiting_ready = false;  // restarted, not listening yet
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

// Reaps every child that has exited; returns them.
std::vector<Child*> ReapExited(std::vector<Child>& children) {
  std::vector<Child*> reaped;
  for (Child& c : children) {
    if (!c.running) continue;
    int status = 0;
    const pid_t r = waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid || (r < 0 && errno == ECHILD)) {
      c.running = false;
      c.status = status;
      reaped.push_back(&c);
    }
  }
  return reaped;
}

// SIGTERM to every running child of `kind`, up to kStopTimeout for them to
// exit, then SIGKILL for the rest; reaps them.
void StopKind(std::vector<Child>& children, Kind kind) {
  auto running = [&] {
    for (const Child& c : children) {
      if (c.kind == kind && c.running) return true;
    }
    return false;
  };
  for (const Child& c : children) {
    if (c.kind == kind && c.running) kill(c.pid, SIGTERM);
  }
  const auto deadline = Clock::now() + kStopTimeout;
  while (Clock::now() < deadline) {
    ReapExited(children);
    if (!running()) return;
    std::this_thread::sleep_for(milliseconds(10));
  }
  for (Child& c : children) {
    if (c.kind != kind || !c.running) continue;
    spdlog::warn("{} (pid {}) did not stop within {} s; killing it", c.label, c.pid,
                 std::chrono::duration_cast<std::chrono::seconds>(kStopTimeout).count());
    kill(c.pid, SIGKILL);
    waitpid(c.pid, &c.status, 0);
    c.running = false;
  }
}

// Stops every child in the reverse of the start order — the proxy, then the
// kv-nodes (whose last log sync may need the storage nodes), then the storage
// nodes — each kind with StopKind.
void StopAll(std::vector<Child>& children) {
  for (Kind kind : {Kind::kProxy, Kind::kKvNode, Kind::kStorageNode}) StopKind(children, kind);
}

// Waits up to `timeout` for SIGINT, SIGTERM or SIGCHLD; returns the signal or 0.
int WaitSignal(const sigset_t& set, milliseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000),
              static_cast<long>((timeout.count() % 1000) * 1000000)};
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

bool Listening(const Child& c) {
  for (uint16_t port : c.ports) {
    if (!AcceptsTcp(c.host, port, /*timeout_ms=*/200)) return false;
  }
  return true;
}

// The children in start order: storage nodes (the kv-nodes' log volumes need
// them), kv-nodes, the proxy.
std::vector<Child> PlanChildren(const ClusterConfig& config, const kv::Placement& placement,
                                const std::string& data_dir) {
  std::vector<Child> children;
  for (const StorageNodeConfig& sn : config.storage_nodes) {
    Child c;
    c.kind = Kind::kStorageNode;
    c.label = StrCat("storage node ", sn.id);
    c.command = {"storage-node", "--id", std::to_string(sn.id)};
    c.host = sn.host;
    c.ports = {sn.port};
    c.line = StrCat("serves ", sn.path, " on ", sn.address());
    children.push_back(std::move(c));
  }
  for (const NodeConfig& node : config.nodes) {
    Child c;
    c.kind = Kind::kKvNode;
    c.label = StrCat("node ", node.id);
    c.command = {"kv-node", "--id", std::to_string(node.id)};
    if (!data_dir.empty()) c.command.insert(c.command.end(), {"--data-dir", data_dir});
    c.host = node.host;
    std::vector<uint32_t> partitions;
    for (uint32_t p : placement.PartitionsOfNode(node.id)) {
      partitions.push_back(p);
      c.ports.push_back(placement.Address(p).port);
    }
    c.line = StrCat("partitions ", JoinNumbers(partitions), " on ", node.host, ":",
                    JoinNumbers(c.ports), " over ", config.transport.backend);
    children.push_back(std::move(c));
  }
  for (const ProxyAddressConfig& p : config.ProxyProcesses()) {
    Child c;
    c.kind = Kind::kProxy;
    c.label = config.proxies.empty() ? std::string("proxy") : StrCat("proxy ", p.id);
    c.command = {"proxy", "--id", std::to_string(p.id)};
    c.host = p.host;
    c.ports = {p.port};
    const uint32_t workers = EffectiveProxyWorkers(config, UsableCores());
    c.line = StrCat(c.host, ":", c.ports[0], ", ", workers, workers == 1 ? " worker" : " workers",
                    ", aggregation ",
                    config.proxy.aggregate ? "on" : "off");
    children.push_back(std::move(c));
  }
  return children;
}

// The children this `up` starts: those whose host is one of `hosts` (as
// written, or resolving to the same address), or with no `hosts` those whose
// host is this machine's (common/local_host.h). Error when none is left.
Result<std::vector<Child>> ChildrenOfThisHost(std::vector<Child> all,
                                              const std::vector<std::string>& hosts) {
  std::vector<Child> mine;
  for (Child& c : all) {
    const bool selected = hosts.empty() ? IsLocalHost(c.host)
                                        : std::any_of(hosts.begin(), hosts.end(),
                                                      [&](const std::string& h) { return SameHost(h, c.host); });
    if (selected) mine.push_back(std::move(c));
  }
  if (!mine.empty()) return mine;
  std::string named;
  for (const std::string& h : hosts) named += (named.empty() ? "" : ", ") + h;
  if (!hosts.empty()) {
    return InvalidArgument("no process of the cluster file has host ", named);
  }
  const Result<std::vector<std::string>> local = LocalAddresses();
  std::string addresses;
  if (local.ok()) {
    for (const std::string& a : *local) addresses += (addresses.empty() ? "" : ", ") + a;
  }
  return InvalidArgument("no process of the cluster file runs on this machine (its addresses: ",
                         addresses.empty() ? "none" : addresses,
                         "); give the host to start with --host");
}

class Up {
 public:
  Up(CommandContext& ctx, std::string exe, std::vector<Child> children, const sigset_t& old_mask)
      : ctx_(ctx), exe_(std::move(exe)), children_(std::move(children)), old_mask_(old_mask) {}

  std::vector<Child>& children() { return children_; }

  // Forks and execs `c`. Everything exec needs is built before fork: the
  // child only makes async-signal-safe calls.
  Status Spawn(Child& c) {
    std::vector<std::string> args = {exe_};
    if (!ctx_.config_path.empty()) args.insert(args.end(), {"--config", ctx_.config_path});
    args.insert(args.end(), {"--log-level", ctx_.log_level});
    args.insert(args.end(), c.command.begin(), c.command.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);  // `up` already died
      sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      execv(exe_.c_str(), argv.data());
      _exit(127);
    }
    if (pid < 0) return InternalError("fork for ", c.label, ": ", strerror(errno));
    c.pid = pid;
    c.running = true;
    spdlog::debug("{}: started pid {}", c.label, pid);
    return Status::Ok();
  }

  // Starts the children of `kind` and waits until they listen. Returns an
  // exit code when `up` must end (a child failed to start or died, a timeout,
  // a stop signal), nullopt when they are ready.
  std::optional<int> StartKind(Kind kind, const sigset_t& signals) {
    for (Child& c : children_) {
      if (c.kind != kind) continue;
      if (Status st = Spawn(c); !st.ok()) return ReportFailure(st);
    }
    const auto deadline = Clock::now() + kReadyTimeout;
    std::vector<bool> ready(children_.size(), false);
    for (size_t i = 0; i < children_.size(); ++i) ready[i] = children_[i].kind != kind;
    for (;;) {
      if (auto dead = ReapExited(children_); !dead.empty()) {
        std::fprintf(stderr, "rampart: %s (pid %d) exited during start: %s\n",
                     dead[0]->label.c_str(), static_cast<int>(dead[0]->pid),
                     DescribeStatus(dead[0]->status).c_str());
        return kExitFailure;
      }
      bool all = true;
      for (size_t i = 0; i < children_.size(); ++i) {
        if (!ready[i]) ready[i] = Listening(children_[i]);
        all = all && ready[i];
      }
      if (all) return std::nullopt;
      if (Clock::now() >= deadline) {
        std::string waiting;
        for (size_t i = 0; i < children_.size(); ++i) {
          if (!ready[i]) waiting += (waiting.empty() ? "" : ", ") + children_[i].label;
        }
        std::fprintf(stderr, "rampart: %s not listening on all ports after %lld s; stopping\n",
                     waiting.c_str(),
                     static_cast<long long>(
                         std::chrono::duration_cast<std::chrono::seconds>(kReadyTimeout).count()));
        return kExitFailure;
      }
      const int sig = WaitSignal(signals, milliseconds(50));
      if (sig == SIGINT || sig == SIGTERM) {
        spdlog::info("{} received during start; stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
        return kExitOk;
      }
    }
  }

  // A child died while the cluster ran: schedule its restart, or give up when
  // it crash-loops (returns false).
  bool OnDeath(Child& c, Clock::time_point now) {
    c.awaiting_ready = false;
    c.deaths.push_back(now);
    while (!c.deaths.empty() && now - c.deaths.front() > kDeathWindow) c.deaths.pop_front();
    if (c.deaths.size() > kMaxDeaths) {
      std::fprintf(stderr,
                   "rampart: %s (pid %d) died: %s; it died %zu times within %lld s "
                   "(crash-looping): stopping the cluster\n",
                   c.label.c_str(), static_cast<int>(c.pid), DescribeStatus(c.status).c_str(),
                   c.deaths.size(),
                   static_cast<long long>(
                       std::chrono::duration_cast<std::chrono::seconds>(kDeathWindow).count()));
      return false;
    }
    const auto backoff =
        std::min<milliseconds>(kFirstBackoff * (1 << (c.deaths.size() - 1)), kMaxBackoff);
    c.restart_at = now + backoff;
    std::fprintf(stderr, "rampart: %s (pid %d) died: %s; restarting it in %lld ms (%zu deaths "
                 "in the last %lld s)\n",
                 c.label.c_str(), static_cast<int>(c.pid), DescribeStatus(c.status).c_str(),
                 static_cast<long long>(backoff.count()), c.deaths.size(),
                 static_cast<long long>(
                     std::chrono::duration_cast<std::chrono::seconds>(kDeathWindow).count()));
    return true;
  }

  // Restarts children whose backoff passed and reports those that listen again.
  Status Supervise(Clock::time_point now) {
    for (Child& c : children_) {
      if (c.restart_at && *c.restart_at <= now && !c.running) {
        c.restart_at.reset();
        RAMPART_RETURN_IF_ERROR(Spawn(c));
        c.awaiting_ready = true;
      }
      if (c.awaiting_ready && c.running && Listening(c)) {
        c.awaiting_ready = false;
        std::printf("restarted %s: pid %d, %s\n", c.label.c_str(), static_cast<int>(c.pid),
                    c.line.c_str());
        std::fflush(stdout);
      }
    }
    return Status::Ok();
  }

  // Serves until a stop signal (exit 0) or a crash loop (exit 1).
  int Run(const sigset_t& signals) {
    for (;;) {
      const int sig = WaitSignal(signals, milliseconds(100));
      if (sig == SIGINT || sig == SIGTERM) {
        spdlog::info("{} received; stopping {} processes", sig == SIGINT ? "SIGINT" : "SIGTERM",
                     children_.size());
        StopAll(children_);
        for (const Child& c : children_) {
          if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
            spdlog::warn("{} (pid {}) stopped with {}", c.label, c.pid, DescribeStatus(c.status));
          }
        }
        std::printf("stopped\n");
        std::fflush(stdout);
        return kExitOk;
      }
      const auto now = Clock::now();
      for (Child* dead : ReapExited(children_)) {
        if (!OnDeath(*dead, now)) {
          StopAll(children_);
          return kExitFailure;
        }
      }
      if (Status st = Supervise(now); !st.ok()) {
        StopAll(children_);
        return ReportFailure(st);
      }
    }
  }

 private:
  CommandContext& ctx_;
  const std::string exe_;
  std::vector<Child> children_;
  const sigset_t old_mask_;
};

int RunUp(CommandContext& ctx, const std::string& data_dir, const std::vector<std::string>& hosts) {
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

  sigset_t signals, old_mask;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGCHLD);
  sigprocmask(SIG_BLOCK, &signals, &old_mask);
  std::fflush(stdout);
  std::fflush(stderr);

  auto children = ChildrenOfThisHost(PlanChildren(*config, *placement, data_dir), hosts);
  if (!children.ok()) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return ReportUsageError(children.status());
  }
  Up up(ctx, exe, std::move(*children), old_mask);
  for (Kind kind : {Kind::kStorageNode, Kind::kKvNode, Kind::kProxy}) {
    if (std::optional<int> exit = up.StartKind(kind, signals)) {
      StopAll(up.children());
      return *exit;
    }
  }
  for (const Child& c : up.children()) {
    std::printf("%s: pid %d, %s\n", c.label.c_str(), static_cast<int>(c.pid), c.line.c_str());
  }
  size_t here = 0;
  for (const Child& c : up.children()) here += c.kind == Kind::kKvNode ? 1 : 0;
  std::printf("ready: cluster \"%s\", %zu of %zu nodes here, %u partitions; Ctrl-C or SIGTERM "
              "stops it\n",
              config->name.c_str(), here, config->nodes.size(), placement->partition_count());
  std::fflush(stdout);
  return up.Run(signals);
}

}  // namespace

void RegisterUpCommand(CLI::App& app, CommandContext& ctx) {
  auto data_dir = std::make_shared<std::string>();
  auto hosts = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "up",
      "Start this host's processes of the cluster file as children — those whose host is an "
      "address of this machine, or the --host given: the [[storage_nodes]] (`rampart "
      "storage-node --id N`), the kv-nodes (`rampart kv-node --id N`, which first recover "
      "their redo logs) and, unless proxy.enabled is false, the Redis-protocol proxies "
      "(`rampart proxy --id N`); wait until every port accepts connections (at most 20 s), "
      "print what runs where and \"ready\". On several hosts, run it on each with the same "
      "cluster file (docs/deploy.md). A process that dies is restarted (backoff from 100 ms "
      "to 5 s) and reported; one that dies more than 5 times in 60 s stops the cluster "
      "(exit 1), as does one that fails to start. SIGINT or SIGTERM stops them all "
      "(SIGTERM, SIGKILL after 5 s) and exits 0. Children die with `up`.");
  cmd->add_option("--data-dir", *data_dir,
                  "Directory of the kv-nodes' redo logs when kv.log = \"dir\" (default: "
                  "kv.data_dir, ./rampart-data)");
  cmd->add_option("--host", *hosts,
                  "Start the processes of this host (as the cluster file names it; repeatable) "
                  "instead of those whose host is an address of this machine");
  OnRun(cmd, ctx, [&ctx, data_dir, hosts] { return RunUp(ctx, *data_dir, *hosts); });
}

}  // namespace rampart::cmd
