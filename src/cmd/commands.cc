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

int ReportUsageError(const Status& status) {
  std::fprintf(stderr, "rampart: %.*s\n", static_cast<int>(status.message().size()),
               status.message().data());
  return kExitUsage;
}

int ReportFailure(const Status& status) {
  std::fprintf(stderr, "rampart: %s\n", status.ToString().c_str());
  return kExitFailure;
}

Result<txn::ClientOptions> ClusterClientOptions(const ClusterConfig& config,
                                                std::string_view transport_flag,
                                                std::string_view isolation_flag) {
  txn::ClientOptions options;
  options.nodes = config.nodes;
  options.partitions_per_node = config.kv.partitions_per_node;
  options.fabric = transport::FabricOptionsFromConfig(config.transport);
  if (!transport_flag.empty()) {
    RAMPART_ASSIGN_OR_RETURN(options.fabric.backend, transport::ParseBackend(transport_flag));
  }
  RAMPART_ASSIGN_OR_RETURN(options.isolation, txn::ParseIsolation(isolation_flag));
  return options;
}

}  // namespace rampart::cmd
