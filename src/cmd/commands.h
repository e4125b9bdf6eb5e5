// The subcommands of the `rampart` binary and what they share.
//
// Each subcommand lives in its own file and registers itself on the app:
//
//   void RegisterConfigCommand(CLI::App& app, CommandContext& ctx) {
//     CLI::App* show = app.add_subcommand("show", "...");
//     OnRun(show, ctx, [&ctx] {
//       const Result<ClusterConfig>& config = ctx.config();
//       if (!config.ok()) return ReportUsageError(config.status());
//       ...
//       return kExitOk;
//     });
//   }
//
// Adding a subcommand is one new file plus one Register...() call in main.cc.
// main.cc parses the command line first, then sets up logging, then runs the
// action of the selected subcommand. Nothing heavy happens during parsing, so
// `--help` works anywhere without a configuration, a network or a device.
//
// Output: results (tables, TOML, JSON) go to stdout; logs and errors go to
// stderr. An error is one line, "rampart: <what went wrong>".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/config.h"
#include "common/status.h"
#include "txn/client.h"

namespace CLI {
class App;
}  // namespace CLI

namespace rampart::cmd {

// Exit codes of the binary.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and failed
inline constexpr int kExitUsage = 2;    // bad flags, unknown command, bad configuration

// State shared by all subcommands: the global flags and the configuration.
// Lives in main() for the whole run; single-threaded.
class CommandContext {
 public:
  // --config FILE; empty: the embedded default (config/default.toml).
  std::string config_path;
  // --log-level; $RAMPART_LOG overrides it (see common/log.h).
  std::string log_level = "info";

  // The cluster configuration from config_path over the embedded default.
  // Loaded on the first call, after the command line has been parsed; later
  // calls return the same result. On error, commands usually
  // `return ReportUsageError(config.status());`.
  const Result<ClusterConfig>& config();

  // Set by OnRun when a subcommand is selected; run by main after parsing.
  std::function<int()> action;

 private:
  std::optional<Result<ClusterConfig>> config_;
};

// Makes main run `action` (returning an exit code) once parsing succeeded and
// `command` was selected. `command` is a leaf subcommand.
void OnRun(CLI::App* command, CommandContext& ctx, std::function<int()> action);
// OnRun for a command that needs the cluster configuration: loads it first
// (a bad one is a usage error, exit 2) and hands it to `action`.
void OnRunWithConfig(CLI::App* command, CommandContext& ctx,
                     std::function<int(const ClusterConfig&)> action);

// Print "rampart: <status message>" on stderr and return kExitUsage / kExitFailure.
// ReportUsageError omits the status code name (configuration errors already say
// file, line, key and problem); ReportFailure includes it.
int ReportUsageError(const Status& status);
int ReportFailure(const Status& status);

// The flags of every command that runs transaction clients:
//   --isolation ramp|s2pl|none  --transport tcp|ucx  --get rpc|ring|read|auto  --put rpc|ring
// Empty transport/get/put keep the configuration's ([transport] backend,
// [client] get and put).
struct ClientFlags {
  std::string isolation = "ramp";
  std::string transport;
  std::string get;
  std::string put;
};
// Adds the four flags to `command`; `flags` must outlive the parse.
void AddClientFlags(CLI::App* command, ClientFlags& flags);

// Client options for a command that talks to the cluster of `config`: its
// nodes, partitions per node, [transport] and [client] settings, overridden
// by the flags. Client id and the rest keep their defaults. InvalidArgument
// for a combination that cannot work (ring or read modes over tcp).
Result<txn::ClientOptions> ClusterClientOptions(const ClusterConfig& config,
                                                const ClientFlags& flags);

// ---- registration: one function per file ----

// `rampart config show|check|default|docs` (config_command.cc).
void RegisterConfigCommand(CLI::App& app, CommandContext& ctx);
// `rampart bench ...` (bench_transport.cc and later bench drivers).
void RegisterBenchCommands(CLI::App& app, CommandContext& ctx);
// `rampart bench txn`: seed 000's transaction micro-benchmark (bench_txn.cc);
// adds to the `bench` command, so it is called after RegisterBenchCommands.
void RegisterBenchTxnCommand(CLI::App& app, CommandContext& ctx);
// `rampart bench iops` and `bench replay`: seed 001 against a storage-node or a
// local file (bench_iops.cc); called after RegisterBenchCommands too.
void RegisterBenchIopsCommands(CLI::App& app, CommandContext& ctx);
// `rampart bench xor`: seed 002's parity throughput (bench_xor.cc); after RegisterBenchCommands.
void RegisterBenchXorCommand(CLI::App& app, CommandContext& ctx);
// `rampart bench volume NAME`: seed 002's volume throughput, healthy, degraded and with hot-node
// steering off (bench_volume.cc); after RegisterBenchCommands.
void RegisterBenchVolumeCommand(CLI::App& app, CommandContext& ctx);
// `rampart bench connect`: the cost of one connection and its handshake (bench_connect.cc);
// after RegisterBenchCommands.
void RegisterBenchConnectCommand(CLI::App& app, CommandContext& ctx);
// `rampart check read-atomic`: the read-atomic checker against a running cluster (check.cc).
void RegisterCheckCommand(CLI::App& app, CommandContext& ctx);
// `rampart check write|read` (check_keys.cc), registered by RegisterCheckCommand.
void RegisterKeysCheckCommands(CLI::App* check, CommandContext& ctx);
// `rampart run`: transport self-check and benchmark on the configuration (run.cc).
void RegisterRunCommand(CLI::App& app, CommandContext& ctx);
// `rampart kv-node --id N`: serve a node's kv partitions (kv_node.cc).
void RegisterKvNodeCommand(CLI::App& app, CommandContext& ctx);
void RegisterStorageNodeCommand(CLI::App& app, CommandContext& ctx);
// `rampart up`: start every node as a child process, stop them on SIGINT/SIGTERM (up.cc).
void RegisterProxyCommand(CLI::App& app, CommandContext& ctx);
void RegisterUpCommand(CLI::App& app, CommandContext& ctx);
// `rampart nbd --volume NAME | --ram SIZE`: serve a volume over NBD (nbd.cc).
void RegisterNbdCommand(CLI::App& app, CommandContext& ctx);
// `rampart volume info|verify|rebuild NAME` (volume.cc).
void RegisterVolumeCommands(CLI::App& app, CommandContext& ctx);
// `rampart kv log info|verify --node N` (kv_log.cc).
void RegisterKvLogCommands(CLI::App& app, CommandContext& ctx);
// `rampart secret generate FILE` (secret.cc).
void RegisterSecretCommand(CLI::App& app, CommandContext& ctx);

}  // namespace rampart::cmd
