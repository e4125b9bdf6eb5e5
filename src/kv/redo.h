// A partition's redo records and checkpoints over the wal layer
// (docs/log_format.md, "KV records"; do not change the record bodies).
//
//   PartitionRedo redo(writer);                    // a wal::LogWriter of this partition
//   redo.Prepare(flags, request_body);             // after Partition::Prepare succeeded
//   redo.Commit(ts);
//   ... the node commits the log group, then sends the turn's replies ...
//
//   // on start, before serving:
//   RAMPART_ASSIGN_OR_RETURN(wal::RecoveredLog r,
//                            RecoverPartition(store, identity, partition, limits, progress));
//
// Records:
//   PREPARE  u8 flags (bit 0: commit-now) | the wire PREPARE request body as
//            it arrived (u64 ts, u32 n, n items: docs/kv_protocol.md)
//   COMMIT   u64 ts
//   FLUSH    empty
// Checkpoint records:
//   VERSION  u64 ts | u8 flags (bit 0 committed, bit 1 tombstone) | str key |
//            str value | u32 metadata length | metadata (the slot's siblings)
//
// Replaying is idempotent (a PREPARE of a (key, ts) that is there already
// changes nothing; a COMMIT of a ts with nothing prepared is OK), which is
// what makes a checkpoint taken while the partition serves (a fuzzy one)
// correct: redo from its start lsn brings every key it saw half-changed to
// the state the log ends in.
//
// Thread-safety: the partition's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "common/status.h"
#include "kv/partition.h"
#include "kv/protocol.h"
#include "wal/log_writer.h"
#include "wal/recovery.h"

namespace rampart::kv {

// The items of a decoded PREPARE as Partition::Prepare takes them (views into
// the request).
std::vector<PrepareItem> PartitionItems(const wire::PrepareRequest& request);

enum RedoType : uint8_t {
  kRedoPrepare = 1,
  kRedoCommit = 2,
  kRedoFlush = 3,
  kCheckpointVersion = 16,
};

class PartitionRedo {
 public:
  // REQUIRES: `log` outlives this object.
  explicit PartitionRedo(wal::LogWriter& log) : log_(log) {}

  void Prepare(uint8_t flags, std::span<const std::byte> request_body);
  void Commit(uint64_t ts);
  void Flush();

  // Checkpoints: Begin starts one and a scan of `partition`; Continue adds the
  // versions of up to `max_keys` keys, stopping early once it added
  // `max_bytes`, and returns true while keys are left; Finish installs it.
  // REQUIRES: the partition is the one this log records.
  Status BeginCheckpoint(Partition& partition);
  Result<bool> ContinueCheckpoint(Partition& partition, size_t max_keys, size_t max_bytes);
  Status FinishCheckpoint() { return log_.FinishCheckpoint(); }

  wal::LogWriter& log() { return log_; }

 private:
  wal::LogWriter& log_;
  std::vector<std::byte> scratch_;
};

// Replays the newest checkpoint and the log into `partition` (which must be
// empty), with its budget limit off. `progress` gets bytes read and to read.
Result<wal::RecoveredLog> RecoverPartition(
    wal::SegmentStore& store, const wal::Identity& identity, Partition& partition,
    const wire::ProtocolLimits& limits,
    const std::function<void(uint64_t done, uint64_t total)>& progress = nullptr);

// Applies one log record or one checkpoint record (what RecoverPartition does
// per record). Corruption for a body that does not decode.
Status ApplyRedoRecord(Partition& partition, const wal::RecordView& record,
                       const wire::ProtocolLimits& limits, Clock::time_point now);
Status ApplyCheckpointRecord(Partition& partition, const wal::RecordView& record,
                             Clock::time_point now);

}  // namespace rampart::kv
