#include "cmd/commands.h"

#include "transport/config_options.h"

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
                      "First GET round: rpc (two-sided), ring (GET+, message channel) or read "
                      "(GET*, one-sided reads + address cache). Default: client.get")
      ->check(CLI::IsMember({"rpc", "ring", "read"}));
  command->add_option("--put", flags.put,
                      "PREPARE/COMMIT: rpc (two-sided) or ring (PUT+). Default: client.put")
      ->check(CLI::IsMember({"rpc", "ring"}));
}

Result<txn::ClientOptions> ClusterClientOptions(const ClusterConfig& config,
                                                const ClientFlags& flags) {
  txn::ClientOptions options;
  options.nodes = config.nodes;
  options.partitions_per_node = config.kv.partitions_per_node;
  options.fabric = transport::FabricOptionsFromConfig(config.transport);
  options.channel = transport::ChannelOptionsFromConfig(config.transport);
  options.address_cache_entries = config.client.address_cache_entries;
  if (!flags.transport.empty()) {
    RAMPART_ASSIGN_OR_RETURN(options.fabric.backend, transport::ParseBackend(flags.transport));
  }
  RAMPART_ASSIGN_OR_RETURN(options.isolation, txn::ParseIsolation(flags.isolation));
  RAMPART_ASSIGN_OR_RETURN(options.get_mode,
                           txn::ParseGetMode(flags.get.empty() ? config.client.get : flags.get));
  RAMPART_ASSIGN_OR_RETURN(options.put_mode,
                           txn::ParsePutMode(flags.put.empty() ? config.client.put : flags.put));
  if (options.fabric.backend != transport::Backend::kUcx &&
      (options.get_mode != txn::GetMode::kRpc || options.put_mode != txn::PutMode::kRpc)) {
    return InvalidArgument("get mode ", txn::GetModeName(options.get_mode), " and put mode ",
                           txn::PutModeName(options.put_mode),
                           ": ring and read need the ucx transport (tcp has no one-sided "
                           "operations); use --get rpc --put rpc with tcp");
  }
  return options;
}

}  // namespace rampart::cmd
