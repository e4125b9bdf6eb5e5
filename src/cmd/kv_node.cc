// rampart kv-node --id N: serves the partitions the cluster file gives node N
// until SIGINT or SIGTERM, then stops cleanly.
#include <CLI/CLI.hpp>

#include <signal.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "cmd/commands.h"
#include "kv/node.h"
#include "transport/transport.h"

namespace rampart::cmd {
namespace {

// "node 0: partitions 0,4 on 127.0.0.1:7000,7001 over ucx"
std::string Describe(const kv::KvNode& node) {
  std::string partitions, host, ports;
  for (const kv::PartitionAddress& a : node.partitions()) {
    partitions += (partitions.empty() ? "" : ",") + std::to_string(a.partition);
    ports += (ports.empty() ? "" : ",") + std::to_string(a.port);
    host = a.host;
  }
  return StrCat("node ", node.node_id(), ": partitions ", partitions, " on ", host, ":", ports,
                " over ", transport::BackendName(node.backend()));
}

}  // namespace

void RegisterKvNodeCommand(CLI::App& app, CommandContext& ctx) {
  auto id = std::make_shared<int64_t>(-1);
  CLI::App* cmd = app.add_subcommand(
      "kv-node",
      "Serve this node's kv partitions (one thread and port each) until SIGINT or SIGTERM");
  cmd->add_option("--id", *id, "This node's id in the cluster file's [[nodes]]")->required();
  OnRunWithConfig(cmd, ctx, [id](const ClusterConfig& config) {
    if (*id < 0 || *id > 65535 || config.FindNode(static_cast<uint32_t>(*id)) == nullptr) {
      std::string ids;
      for (const NodeConfig& n : config.nodes) ids += (ids.empty() ? "" : ", ") + std::to_string(n.id);
      return ReportUsageError(InvalidArgument("--id ", *id, ": no such node in ", config.origin,
                                              " (node ids: ", ids, ")"));
    }
    // SIGINT/SIGTERM are blocked here, before any thread starts, so every
    // thread inherits the mask and only sigwait below receives them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    auto node = kv::KvNode::Start(config, static_cast<uint32_t>(*id));
    if (!node.ok()) return ReportFailure(node.status());
    spdlog::info("{}", Describe(**node));
    int signal = 0;
    sigwait(&stop_signals, &signal);
    spdlog::info("node {}: {} received, stopping", *id, signal == SIGINT ? "SIGINT" : "SIGTERM");
    (*node)->Stop();
    spdlog::info("node {}: stopped", *id);
    return kExitOk;
  });
}

}  // namespace rampart::cmd
