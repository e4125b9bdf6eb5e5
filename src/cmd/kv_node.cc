// rampart kv-node --id N: recovers and serves the partitions the cluster file
// gives node N until SIGINT or SIGTERM, then stops cleanly (logs synced).
//
// Exit codes: 0 after SIGINT/SIGTERM; 1 when the node cannot start (a log
// that cannot be recovered, a port in use, ...) or a redo log write or sync
// failed while serving (fail-stop: a restart recovers what is durable);
// 2 for usage errors.
#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "cmd/commands.h"
#include "cmd/volume_log.h"
#include "kv/durability.h"
#include "kv/node.h"
#include "transport/transport.h"
#include "wal/segment_store.h"

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

// The redo logs of kv.log = "volume": the node's log volume, one area per
// partition, each a BlockStore. The service outlives the node (the caller
// stops the node first).
Result<std::unique_ptr<VolumeLogService>> OpenLogVolume(const ClusterConfig& config,
                                                        uint32_t node_id,
                                                        kv::DurabilityOptions& durability) {
  const NodeConfig& node = *config.FindNode(node_id);
  const uint32_t per_node = config.kv.partitions_per_node;
  RAMPART_ASSIGN_OR_RETURN(auto service,
                           VolumeLogService::Open(config, node.log_volume, per_node));
  const uint64_t segment_bytes = kv::LogSegmentBytes(config);
  const uint32_t nodes = static_cast<uint32_t>(config.nodes.size());
  VolumeLogService* raw = service.get();
  durability.open_store = [raw, segment_bytes, nodes](uint32_t partition)
      -> Result<std::unique_ptr<wal::SegmentStore>> {
    // Partition p of a node sits in its slot p / nodes (kv/placement.h).
    RAMPART_ASSIGN_OR_RETURN(auto store,
                             wal::BlockStore::Open(raw->Area(partition / nodes), segment_bytes));
    return std::unique_ptr<wal::SegmentStore>(std::move(store));
  };
  return service;
}

}  // namespace

void RegisterKvNodeCommand(CLI::App& app, CommandContext& ctx) {
  auto id = std::make_shared<int64_t>(-1);
  auto data_dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "kv-node",
      "Recover this node's kv partitions from their redo logs (kv.log), then serve them (one "
      "thread and port each) until SIGINT or SIGTERM. Exit 1 when it cannot start or a log "
      "write fails while serving");
  cmd->add_option("--id", *id, "This node's id in the cluster file's [[nodes]]")->required();
  cmd->add_option("--data-dir", *data_dir,
                  "Directory of the redo logs when kv.log = \"dir\" (default: kv.data_dir)");
  OnRunWithConfig(cmd, ctx, [id, data_dir](const ClusterConfig& config) {
    if (*id < 0 || *id > 65535 || config.FindNode(static_cast<uint32_t>(*id)) == nullptr) {
      std::string ids;
      for (const NodeConfig& n : config.nodes) ids += (ids.empty() ? "" : ", ") + std::to_string(n.id);
      return ReportUsageError(InvalidArgument("--id ", *id, ": no such node in ", config.origin,
                                              " (node ids: ", ids, ")"));
    }
    // SIGINT/SIGTERM are blocked here, before any thread starts, so every
    // thread inherits the mask and only sigwait below receives them.
    // SIGUSR1 is the node's own: a partition's log failed (fatal, below).
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    const uint32_t node_id = static_cast<uint32_t>(*id);
    if (Status layout = kv::CheckDataLayoutOf(config, node_id, *data_dir); !layout.ok()) {
      return ReportFailure(layout);
    }
    kv::KvNodeOptions options;
    options.durability = kv::DurabilityOptionsFromConfig(config, node_id, *data_dir);
    auto fatal = std::make_shared<std::pair<std::mutex, Status>>();
    options.on_fatal = [fatal](const Status& status) {
      {
        std::lock_guard<std::mutex> lock(fatal->first);
        if (fatal->second.ok()) fatal->second = status;
      }
      kill(getpid(), SIGUSR1);
    };
    std::unique_ptr<VolumeLogService> log_volume;
    if (config.kv.log == "volume") {
      auto opened = OpenLogVolume(config, node_id, options.durability);
      if (!opened.ok()) return ReportFailure(opened.status().WithContext(StrCat("node ", node_id)));
      log_volume = std::move(*opened);
    }
    auto node = kv::KvNode::Start(config, node_id, options);
    if (!node.ok()) return ReportFailure(node.status());
    spdlog::info("{}", Describe(**node));
    int signal = 0;
    sigwait(&stop_signals, &signal);
    if (signal == SIGUSR1) {
      (*node)->Stop();
      std::lock_guard<std::mutex> lock(fatal->first);
      return ReportFailure(fatal->second.WithContext(StrCat("node ", node_id, " stopped")));
    }
    spdlog::info("node {}: {} received, stopping", *id, signal == SIGINT ? "SIGINT" : "SIGTERM");
    (*node)->Stop();
    spdlog::info("node {}: stopped", *id);
    return kExitOk;
  });
}

}  // namespace rampart::cmd
