// Recovery of a partition's redo log: the newest complete checkpoint, then
// the log from that checkpoint's start lsn, record by record, to the caller
// (docs/log_format.md, "Recovery").
//
//   RecoveryCallbacks cb;
//   cb.on_checkpoint_record = [&](const RecordView& r) { return ApplyVersion(r); };
//   cb.on_log_record = [&](const RecordView& r) { return ApplyChange(r); };
//   Result<RecoveredLog> recovered = Recover(store, identity, cb);
//
// What is refused (an error naming the segment and, where it applies, the
// byte offset; nothing is replayed past it):
//   - a segment of another cluster, node, partition or partition count, or of
//     another format version;
//   - a record that does not check out anywhere but at the tail of the newest
//     log segment, or a bad record there that has an intact record of the same
//     segment with a higher lsn after it (corruption, not a torn write);
//   - a log that does not continue where the checkpoint (or its previous
//     segment) left off.
// What is dropped: the torn tail of the newest log segment (everything from
// its first incomplete record on), checkpoints that never finished, and
// segments whose header was never completely written. Those, and segments a
// finished checkpoint made obsolete, are listed in RecoveredLog::obsolete for
// the writer to remove.
//
// Thread-safety: none; runs on the thread that owns the store.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "wal/format.h"
#include "wal/segment_store.h"

namespace rampart::wal {

struct RecoveryCallbacks {
  // The newest complete checkpoint's records, in order (not its END).
  std::function<Status(const RecordView&)> on_checkpoint_record;
  // Then every log record from the checkpoint's start lsn on, in lsn order.
  std::function<Status(const RecordView&)> on_log_record;
  // Bytes read so far out of the bytes to read; called between reads.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // Once, before the first record: the bytes of the checkpoint and the log
  // segments to read (an upper bound of what is replayed).
  std::function<void(uint64_t total)> on_plan;
};

// One live segment as recovery found it.
struct SegmentInfo {
  SegmentHeader header;
  uint64_t bytes = 0;    // header + the records recovery read or accepted
  uint64_t records = 0;
};

struct RecoveredLog {
  uint64_t next_lsn = 1;   // the first lsn to write
  uint64_t next_seq = 1;   // the first segment seq never used
  // The newest log segment and where its records end (0, 0: no log yet).
  uint64_t last_log_seq = 0;
  uint64_t last_log_end = 0;
  // The newest complete checkpoint (id 0: none).
  uint64_t checkpoint_id = 0;
  uint64_t checkpoint_start_lsn = 0;
  uint64_t checkpoint_records = 0;
  uint64_t checkpoint_bytes = 0;
  uint64_t log_records_replayed = 0;
  uint64_t log_bytes_replayed = 0;
  bool torn_tail = false;  // a cut record at the end of the newest log segment was dropped
  // The segments recovery keeps, ascending seq, and those to remove.
  std::vector<SegmentInfo> live;
  std::vector<uint64_t> obsolete;
  // What was dropped or refused on the way, one line each, for the log.
  std::vector<std::string> notes;
};

// Reads and replays. With empty callbacks it only checks (rampart kv log verify).
Result<RecoveredLog> Recover(SegmentStore& store, const Identity& identity,
                             const RecoveryCallbacks& callbacks);

}  // namespace rampart::wal
