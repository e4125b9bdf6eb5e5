#include "cmd/commands.h"

#include "txn/client_config.h"

#include <CLI/CLI.hpp>

#include <cstdio>

namespace rampart::cmd {

const Result<ClusterConfig>& CommandContext::config() {
  if (!config_) config_.emplace(LoadClusterConfig(config_path));
  return *config_;
}

void OnRun(CLI::App* command, CommandContext& ctx, std::function<int()> action) {
  // CLI11 runs a subcommand's callback after the whole command line parsed
  // cleanly; only record the choice here, main runs it.
  command->callback([&ctx, action = std::move(action)] { ctx.action = action; });
}

void OnRunWithConfig(CLI::App* command, CommandContext& ctx,
                     std::function<int(const ClusterConfig&)> action) {
  OnRun(command, ctx, [&ctx, action = std::move(action)] {
    const Result<ClusterConfig>& config = ctx.config();
    if (!config.ok()) return ReportUsageError(config.status());
    return action(*config);
  });
}

int ReportUsageError(const Status& status) {
  std::fprintf(stderr, "rampart: %.*s\n", static_cast<int>(status.message().size()),
               status.message().data());
  return kExitUsage;
}

int ReportFailure(const Status& status) {
  std::fprintf(stderr, "rampart: %s\n", status.ToString().c_str());
  return kExitFailure;
}

void AddClientFlags(CLI::App* command, ClientFlags& flags) {
  command->add_option("--isolation", flags.isolation, "ramp, s2pl or none")
      ->check(CLI::IsMember({"ramp", "s2pl", "none"}))
      ->capture_default_str();
  command->add_option("--transport", flags.transport,
                      "tcp or ucx. Default: the configuration's transport.backend")
      ->check(CLI::IsMember({"tcp", "ucx"}));
  command->add_option("--get", flags.get,
                      "First GET round: rpc (two-sided), ring (GET+, message channel), read "
                      "(GET*, one-sided reads + address cache) or auto (read for partitions on "
                      "this host, rpc for the others). Default: client.get")
      ->check(CLI::IsMember({"rpc", "ring", "read", "auto"}));
  command->add_option("--put", flags.put,
                      "PREPARE/COMMIT: rpc (two-sided) or ring (PUT+). Default: client.put")
      ->check(CLI::IsMember({"rpc", "ring"}));
}

Result<txn::ClientOptions> ClusterClientOptions(const ClusterConfig& config,
                                                const ClientFlags& flags) {
  return txn::ClientOptionsFromConfig(config, flags.isolation, flags.get, flags.put,
                                      flags.transport);
}

}  // namespace rampart::cmd
