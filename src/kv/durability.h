// Durable partitions: how a kv-node keeps each partition's redo log
// (kv/redo.h over wal/), recovers it on start, commits it once per turn of
// the partition's loop, checkpoints it in the background, and syncs it
// every interval (docs/log_format.md; docs/configuration.md, [kv]).
//
//   auto durable = DurablePartition::Open(options, partition, executor, limits, progress,
//                                         /*synced=*/[&] { fabric.Notify(); });
//   // each turn of the loop, after the handlers ran:
//   RAMPART_RETURN_IF_ERROR((*durable)->CommitTurn());
//   // the turn's replies may leave once (*durable)->acked_lsn() reaches
//   // (*durable)->turn_lsn() (at once under interval; after a sync under always)
//   // each tick, and each turn while busy():
//   RAMPART_RETURN_IF_ERROR((*durable)->Background(now));
//
// Syncs. Under kv.sync = "interval" the node's LogSyncer syncs every
// partition's log every interval; a turn's replies leave once its records are
// written. Under "always" each partition has a sync thread (SyncWorker):
// CommitTurn writes the turn's records and wakes it; the partition thread
// goes on serving (the next turn's group forms meanwhile) and releases the
// held replies when the sync that covers them completes (the worker calls
// `synced`, which wakes the partition's loop). So a sync and the execution of
// the next turn overlap, and one sync covers every turn that finished while
// the previous one ran.
//
// Checkpoints start when the log written since the last one passes
// max(checkpoint_log_bytes, the last checkpoint's size) — a restart then
// replays at most about as much log as checkpoint — or when it is older than
// checkpoint_age and the log is not empty, or when a slotted store (a volume)
// has fewer than half its slots free. A checkpoint then scans
// checkpoint_keys_per_turn keys (at most checkpoint_bytes_per_turn of
// versions) per turn between requests, so the partition never pauses for more
// than one such chunk; the log line of a finished checkpoint names the
// longest.
//
// Thread-safety: a DurablePartition belongs to its partition's thread. The
// LogSyncer runs one thread per node; Add/Remove are thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "kv/executor.h"
#include "kv/protocol.h"
#include "kv/redo.h"
#include "wal/log_writer.h"
#include "wal/segment_store.h"

namespace rampart::kv {

struct DurabilityOptions {
  // Opens the segment store of one partition (by partition id). Empty: the
  // node is volatile (kv.log = "none").
  std::function<Result<std::unique_ptr<wal::SegmentStore>>(uint32_t partition)> open_store;
  wal::SyncPolicy sync = wal::SyncPolicy::kInterval;
  std::chrono::milliseconds sync_interval{1000};
  uint64_t checkpoint_log_bytes = uint64_t{64} << 20;
  std::chrono::seconds checkpoint_age{600};
  size_t checkpoint_keys_per_turn = 2048;
  size_t checkpoint_bytes_per_turn = size_t{1} << 20;
  // The cluster's name and partition count, for the logs' identity.
  std::string cluster;
  uint32_t partition_count = 0;
  uint32_t node = 0;

  bool enabled() const { return static_cast<bool>(open_store); }
};

// Segment bytes for a cluster: kv.log_segment_bytes, but at least the
// largest message plus 1 MiB (one request is one record).
uint64_t LogSegmentBytes(const ClusterConfig& config);

// The options [kv] asks for. kv.log = "dir": open_store makes a
// DirectoryStore at <data_dir>/node-<id>/partition-<p> (data_dir: the
// argument, or kv.data_dir when it is empty). kv.log = "none": not enabled().
// kv.log = "volume": everything but open_store, which the caller provides
// (the volume lives in the storage layer).
DurabilityOptions DurabilityOptionsFromConfig(const ClusterConfig& config, uint32_t node_id,
                                              const std::string& data_dir);
// Where node `node_id`'s partition `partition` keeps a "dir" log.
std::string PartitionLogDir(const std::string& data_dir, uint32_t node_id, uint32_t partition);
// kv.log = "dir": whether node `node_id`'s logs under <data_dir>/node-<id>
// were written by a cluster of this shape. A key's partition is its hash mod
// (nodes x partitions_per_node), so logs written with another count hold
// keys this cluster would look for elsewhere and never find. Refused
// (FailedPrecondition, naming the directory and the settings to restore):
// a `layout` file (docs/log_format.md) with another shape, and a partition
// directory holding files for a partition the node does not serve
// (`serving`). Otherwise the layout file is written when missing (a new
// directory, or one from before layout files), and Ok.
Status CheckDataLayout(const std::string& data_dir, uint32_t node_id,
                       const std::vector<uint32_t>& serving, uint32_t nodes,
                       uint32_t partitions_per_node);
// CheckDataLayout for node `node_id` of `config` when kv.log = "dir" (its
// log directory as DurabilityOptionsFromConfig finds it); Ok otherwise.
Status CheckDataLayoutOf(const ClusterConfig& config, uint32_t node_id,
                         const std::string& data_dir);

class DurablePartition {
 public:
  // Opens the partition's store, replays it into the executor's partition
  // (which must be empty), opens the log writer after it and attaches it to
  // the executor. `progress` sees bytes replayed and to replay.
  // `synced` (kAlways) is called from the sync thread after every sync; it
  // must be thread-safe and cheap (Fabric::Notify).
  static Result<std::unique_ptr<DurablePartition>> Open(
      const DurabilityOptions& options, uint32_t partition, PartitionExecutor& executor,
      const wire::ProtocolLimits& limits,
      const std::function<void(uint64_t done, uint64_t total)>& progress,
      std::function<void()> synced = nullptr);
  ~DurablePartition();  // detaches from the executor

  DurablePartition(const DurablePartition&) = delete;
  DurablePartition& operator=(const DurablePartition&) = delete;

  // The group commit of one turn: what the turn's requests changed is in the
  // store when this returns OK; under kAlways its sync has been asked for.
  Status CommitTurn();
  // The last lsn of the turns committed so far: the turn's replies may leave
  // once acked_lsn() reaches it.
  uint64_t turn_lsn() const { return writer_->committed_lsn(); }
  // What has been acknowledged-safe so far: written (kInterval) or synced
  // (kAlways). Any thread.
  uint64_t acked_lsn() const;
  // The first failed sync of the log (by either policy's sync thread), OK
  // while there is none. Any thread.
  Status sync_error() const;
  // Starts or continues a checkpoint (see above).
  Status Background(std::chrono::steady_clock::time_point now);
  // A checkpoint is running: the loop should not sleep.
  bool busy() const { return writer_->checkpoint_in_progress(); }

  wal::LogWriter& writer() { return *writer_; }
  const wal::RecoveredLog& recovered() const { return recovered_; }

 private:
  DurablePartition(const DurabilityOptions& options, PartitionExecutor& executor);

  class SyncWorker;

  const DurabilityOptions& options_;
  PartitionExecutor& executor_;
  uint32_t partition_ = 0;
  std::unique_ptr<wal::SegmentStore> store_;
  std::unique_ptr<wal::LogWriter> writer_;
  std::unique_ptr<PartitionRedo> redo_;
  std::unique_ptr<SyncWorker> sync_worker_;  // kAlways; goes before the writer
  wal::RecoveredLog recovered_;
  std::chrono::steady_clock::time_point last_checkpoint_;
  // The running checkpoint: when it began, its longest chunk.
  std::chrono::steady_clock::time_point checkpoint_started_;
  std::chrono::steady_clock::duration longest_chunk_{};
};

// Calls SyncNow on every added writer every `interval` (kInterval policy).
// A sync error is passed to `on_error` once; syncing goes on for the others.
class LogSyncer {
 public:
  LogSyncer(std::chrono::milliseconds interval, std::function<void(const Status&)> on_error);
  ~LogSyncer();  // stops the thread (after a last sync round)

  void Add(wal::LogWriter* writer);
  // After Remove returns, the syncer does not touch `writer` any more.
  void Remove(wal::LogWriter* writer);

 private:
  void Run();

  const std::chrono::milliseconds interval_;
  std::function<void(const Status&)> on_error_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<wal::LogWriter*> writers_;  // GUARDED_BY(mu_)
  bool stop_ = false;                     // GUARDED_BY(mu_)
  bool syncing_ = false;                  // GUARDED_BY(mu_): a round runs without mu_
  std::thread thread_;
};

}  // namespace rampart::kv
