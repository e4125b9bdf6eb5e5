// rampart storage-node --id N: serves the device the cluster file's
// [[storage_nodes]] entry N names until SIGINT or SIGTERM (docs/storage.md).
#include <CLI/CLI.hpp>

#include <signal.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "cmd/commands.h"
#include "storage/node.h"

namespace rampart::cmd {

void RegisterStorageNodeCommand(CLI::App& app, CommandContext& ctx) {
  auto id = std::make_shared<int64_t>(-1);
  CLI::App* cmd = app.add_subcommand(
      "storage-node",
      "Serve this storage node's device (a file or RAM) over the transport until SIGINT or SIGTERM");
  cmd->add_option("--id", *id, "This node's id in the cluster file's [[storage_nodes]]")->required();
  OnRunWithConfig(cmd, ctx, [id](const ClusterConfig& config) {
    if (*id < 0 || *id > 65535) {
      return ReportUsageError(InvalidArgument("--id ", *id, ": must be 0..65535"));
    }
    auto options = storage::StorageNodeOptionsFromConfig(config, static_cast<uint32_t>(*id));
    if (!options.ok()) return ReportUsageError(options.status());
    // Blocked before any thread starts, so only sigwait below receives them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    auto node = storage::StorageNode::Start(*options);
    if (!node.ok()) {
      return ReportFailure(node.status().WithContext(StrCat("storage node ", *id)));
    }
    spdlog::info("storage node {}: {}", *id, (*node)->description());
    int signal = 0;
    sigwait(&stop_signals, &signal);
    spdlog::info("storage node {}: {} received, stopping", *id,
                 signal == SIGINT ? "SIGINT" : "SIGTERM");
    (*node)->Stop();
    spdlog::info("storage node {}: stopped", *id);
    return kExitOk;
  });
}

}  // namespace rampart::cmd
