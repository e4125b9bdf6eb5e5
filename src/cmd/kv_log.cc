// rampart kv log info|verify --node N [--partition P]: what a kv-node's redo
// logs hold (docs/log_format.md).
//
//   info    per partition: the store, every segment (seq, kind, first record,
//           records, bytes), the newest checkpoint and the log after it, what
//           a restart would replay, and what recovery would drop.
//   verify  reads every record of every partition's checkpoint and log with
//           its checksum, as recovery does, applying nothing; one line per
//           partition.
//
// Both read only. "dir" logs may be read while the kv-node runs (what it
// appends meanwhile may show as a torn tail); a "volume" log is opened
// exclusively, so stop the kv-node first.
//
// Exit codes: 0 every partition checked out; 1 one did not (its error is
// printed) or its store cannot be opened; 2 usage errors.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cmd/commands.h"
#include "cmd/volume_log.h"
#include "common/size.h"
#include "kv/durability.h"
#include "kv/placement.h"
#include "wal/recovery.h"

namespace rampart::cmd {
namespace {

struct LogFlags {
  int64_t node = -1;
  int64_t partition = -1;
  std::string data_dir;
};

// The stores of node `node`'s partitions, opened for reading.
class NodeLogs {
 public:
  static Result<NodeLogs> Open(const ClusterConfig& config, uint32_t node,
                               const std::string& data_dir) {
    NodeLogs logs;
    if (config.kv.log == "none") {
      return InvalidArgument("kv.log is \"none\" in ", config.origin, ": the kv-nodes keep no log");
    }
    logs.durability = kv::DurabilityOptionsFromConfig(config, node, data_dir);
    logs.dir = data_dir.empty() ? config.kv.data_dir : data_dir;
    if (config.kv.log == "volume") {
      RAMPART_ASSIGN_OR_RETURN(
          logs.volume, VolumeLogService::Open(config, config.FindNode(node)->log_volume,
                                              config.kv.partitions_per_node));
      const uint64_t segment_bytes = kv::LogSegmentBytes(config);
      const uint32_t nodes = static_cast<uint32_t>(config.nodes.size());
      VolumeLogService* raw = logs.volume.get();
      logs.durability.open_store = [raw, segment_bytes, nodes](uint32_t partition)
          -> Result<std::unique_ptr<wal::SegmentStore>> {
        RAMPART_ASSIGN_OR_RETURN(auto s, wal::BlockStore::Open(raw->Area(partition / nodes),
                                                               segment_bytes));
        return std::unique_ptr<wal::SegmentStore>(std::move(s));
      };
    }
    return logs;
  }

  Result<std::unique_ptr<wal::SegmentStore>> Store(uint32_t node, uint32_t partition) {
    if (!volume) {
      const std::string path = kv::PartitionLogDir(dir, node, partition);
      if (!std::filesystem::is_directory(path)) {
        return NotFound("no log directory ", path, " (wrong --data-dir, or the node never ran)");
      }
    }
    return durability.open_store(partition);
  }

  kv::DurabilityOptions durability;
  std::string dir;
  std::unique_ptr<VolumeLogService> volume;  // after `durability`: goes first
};

void PrintInfo(const wal::SegmentStore& store, const wal::RecoveredLog& r) {
  std::printf("  store: %s\n", store.name().c_str());
  if (r.checkpoint_id != 0) {
    std::printf("  checkpoint %llu: redo from record %llu, %llu records, %s\n",
                static_cast<unsigned long long>(r.checkpoint_id),
                static_cast<unsigned long long>(r.checkpoint_start_lsn),
                static_cast<unsigned long long>(r.checkpoint_records),
                FormatSize(r.checkpoint_bytes).c_str());
  } else {
    std::printf("  checkpoint: none yet\n");
  }
  std::printf("  log to replay: %llu records, %s; next record %llu\n",
              static_cast<unsigned long long>(r.log_records_replayed),
              FormatSize(r.log_bytes_replayed).c_str(),
              static_cast<unsigned long long>(r.next_lsn));
  std::printf("  %-8s %-10s %-14s %-10s %s\n", "segment", "kind", "first record", "records", "bytes");
  for (const wal::SegmentInfo& s : r.live) {
    std::printf("  %-8llu %-10s %-14llu %-10llu %s\n",
                static_cast<unsigned long long>(s.header.seq),
                std::string(wal::SegmentKindName(s.header.kind)).c_str(),
                static_cast<unsigned long long>(s.header.first_lsn),
                static_cast<unsigned long long>(s.records), FormatSize(s.bytes).c_str());
  }
  if (!r.obsolete.empty()) {
    std::printf("  obsolete (removed when the node starts): %zu segments\n", r.obsolete.size());
  }
  for (const std::string& note : r.notes) std::printf("  note: %s\n", note.c_str());
}

int RunKvLog(const ClusterConfig& config, const LogFlags& flags, bool verify) {
  if (flags.node < 0 || flags.node > 65535 ||
      config.FindNode(static_cast<uint32_t>(flags.node)) == nullptr) {
    return ReportUsageError(InvalidArgument("--node ", flags.node, ": no such node in ",
                                            config.origin));
  }
  const uint32_t node = static_cast<uint32_t>(flags.node);
  auto placement = kv::Placement::Create(config.nodes, config.kv.partitions_per_node);
  if (!placement.ok()) return ReportUsageError(placement.status());
  std::vector<uint32_t> partitions = placement->PartitionsOfNode(node);
  if (flags.partition >= 0) {
    if (std::find(partitions.begin(), partitions.end(), flags.partition) == partitions.end()) {
      return ReportUsageError(InvalidArgument("--partition ", flags.partition,
                                              " is not one of node ", node, "'s partitions"));
    }
    partitions = {static_cast<uint32_t>(flags.partition)};
  }
  auto logs = NodeLogs::Open(config, node, flags.data_dir);
  if (!logs.ok()) return ReportFailure(logs.status());
  int exit = kExitOk;
  for (uint32_t p : partitions) {
    const wal::Identity identity{config.name, node, p, placement->partition_count()};
    auto store = logs->Store(node, p);
    Result<wal::RecoveredLog> r =
        store.ok() ? wal::Recover(**store, identity, {}) : Result<wal::RecoveredLog>(store.status());
    if (!r.ok()) {
      std::printf("partition %u: %s\n", p, r.status().ToString().c_str());
      exit = kExitFailure;
      continue;
    }
    if (verify) {
      std::printf("partition %u: OK: checkpoint of %llu records, %llu log records, %s checked\n", p,
                  static_cast<unsigned long long>(r->checkpoint_records),
                  static_cast<unsigned long long>(r->log_records_replayed),
                  FormatSize(r->checkpoint_bytes + r->log_bytes_replayed).c_str());
    } else {
      std::printf("partition %u:\n", p);
      PrintInfo(**store, *r);
    }
  }
  return exit;
}

}  // namespace

void RegisterKvLogCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* kv = app.add_subcommand("kv", "The kv tier's on-disk state");
  kv->require_subcommand(1);
  CLI::App* log = kv->add_subcommand(
      "log",
      "Look at and check a kv-node's redo logs (kv.log): `info` and `verify`. Read only. A "
      "\"volume\" log needs its kv-node stopped (the volume is opened exclusively)");
  log->require_subcommand(1);
  auto flags = std::make_shared<LogFlags>();
  auto add_flags = [&](CLI::App* cmd) {
    cmd->add_option("--node", flags->node, "The kv-node's id in [[nodes]]")->required();
    cmd->add_option("--partition", flags->partition, "Only this partition (default: all of the node's)");
    cmd->add_option("--data-dir", flags->data_dir,
                    "Directory of \"dir\" logs (default: kv.data_dir)");
  };
  CLI::App* info = log->add_subcommand(
      "info",
      "Per partition: the store, its segments, the newest checkpoint, the log a restart would "
      "replay and what recovery would drop. Exit 1 if a partition's log cannot be read");
  add_flags(info);
  OnRunWithConfig(info, ctx, [flags](const ClusterConfig& config) {
    return RunKvLog(config, *flags, /*verify=*/false);
  });
  CLI::App* verify = log->add_subcommand(
      "verify",
      "Read every record of every partition's newest checkpoint and log with its checksum, as "
      "recovery would; one line per partition. Exit 0 when all check out, 1 otherwise");
  add_flags(verify);
  OnRunWithConfig(verify, ctx, [flags](const ClusterConfig& config) {
    return RunKvLog(config, *flags, /*verify=*/true);
  });
}

}  // namespace rampart::cmd
