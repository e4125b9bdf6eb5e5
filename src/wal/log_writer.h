// LogWriter: appends one partition's redo records to its SegmentStore in
// group commits, writes checkpoints beside them and removes what a finished
// checkpoint makes obsolete (docs/log_format.md).
//
//   RAMPART_ASSIGN_OR_RETURN(RecoveredLog recovered, Recover(store, identity, callbacks));
//   RAMPART_ASSIGN_OR_RETURN(auto log, LogWriter::Open(store, options, recovered));
//   // a turn of the partition's loop:
//   log->Append(kPrepare, {body});          // buffered
//   log->Append(kCommit, {body});
//   RAMPART_RETURN_IF_ERROR(log->Commit()); // one write; with kAlways one sync
//   ... now the turn's replies may leave ...
//
// Group commit. Append only buffers; Commit writes everything appended since
// the last Commit with one Write (two when the segment fills: the rest goes
// into a new one) and, under SyncPolicy::kAlways, syncs the segment before it
// returns. Under kInterval another thread calls SyncNow() every interval.
// Either way a Commit that returned OK has put its records into the store
// (the page cache, or the storage nodes' memory), which survives the death of
// this process; kAlways also survives the loss of the machine.
//
// Segments. A new log segment starts when the records of a Commit do not fit
// the current one; the old one is synced first, so that no record of a newer
// segment is durable while an older one is not. Every log segment's header
// names its predecessor and where that one's records end, so recovery knows
// the exact end of every segment but the last (whose torn tail, after a
// crash, is dropped). Opening after recovery always starts a new segment.
//
// Checkpoints. BeginCheckpoint fixes the redo start (the next lsn);
// AppendCheckpoint adds records (the caller's scan of its state, which may
// interleave with log appends: redo from the start lsn repairs whatever the
// scan saw half-done); FinishCheckpoint ends it with an END record, syncs it,
// and only then removes the older checkpoints and the log segments whose
// records all precede the new start lsn.
//
// Failures. An error from Commit, or from the checkpoint calls, means the
// store refused a write or a sync: the records of that turn are not safe and
// must not be acknowledged. The kv-node stops (fail-stop) and recovers on
// restart from what is durable.
//
// Thread-safety: one thread (the partition's) makes every call except
// SyncNow(), durable_lsn() and sync_error(), which the sync thread may call
// at any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/status.h"
#include "wal/format.h"
#include "wal/recovery.h"
#include "wal/segment_store.h"

namespace rampart::wal {

enum class SyncPolicy { kAlways, kInterval };

struct LogOptions {
  Identity identity;
  SyncPolicy sync = SyncPolicy::kInterval;
  // AppendCheckpoint writes its buffer once it holds this much.
  size_t checkpoint_write_bytes = size_t{1} << 20;
};

class LogWriter {
 public:
  // Removes the segments recovery found obsolete, then opens a new log segment
  // after the last one recovered. REQUIRES: `store` outlives the writer;
  // `recovered` came from Recover on the same store and identity.
  static Result<std::unique_ptr<LogWriter>> Open(SegmentStore& store, const LogOptions& options,
                                                 const RecoveredLog& recovered);

  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Buffers a record whose body is the concatenation of `body`; returns its
  // lsn. REQUIRES: type < kFirstWalType; FramedBytes(body size) fits an
  // empty segment (max_record_bytes()).
  uint64_t Append(uint8_t type, std::span<const std::span<const std::byte>> body);
  // Writes what was appended since the last Commit (and, kAlways, syncs).
  // Also writes a checkpoint buffer that is due. Nothing appended: OK at once.
  Status Commit();
  // The sync thread's call (kInterval): makes every committed record durable.
  // After one failure every later call (and Commit) returns that error and
  // durable_lsn() stays where it was.
  Status SyncNow();
  // The first sync failure, OK while there is none. Any thread.
  Status sync_error() const;

  uint64_t appended_lsn() const { return next_lsn_ - 1; }  // last lsn handed out
  uint64_t committed_lsn() const { return committed_lsn_; }
  uint64_t durable_lsn() const { return durable_lsn_.load(std::memory_order_acquire); }
  // Largest body a record may have.
  uint64_t max_record_bytes() const;
  // Log bytes written since the newest checkpoint started (or since the log
  // began): what a restart would replay.
  uint64_t log_bytes_since_checkpoint() const { return log_bytes_since_checkpoint_; }
  // Bytes of the newest finished checkpoint (0: none yet).
  uint64_t checkpoint_bytes() const { return checkpoint_bytes_; }

  // ---- checkpoints (one at a time) ----
  Status BeginCheckpoint();
  // REQUIRES: a checkpoint is in progress; type < kFirstWalType.
  Status AppendCheckpoint(uint8_t type, std::span<const std::span<const std::byte>> body);
  // Ends, syncs and installs the checkpoint; then removes what it made obsolete.
  Status FinishCheckpoint();
  bool checkpoint_in_progress() const { return checkpoint_.active; }

 private:
  struct Segment {
    uint64_t seq;
    SegmentKind kind;
    uint64_t first_lsn;   // log: first record; checkpoint: start lsn
    uint64_t checkpoint;  // checkpoint id (checkpoint parts only)
  };
  // Records framed for a segment and not written yet, and where they go.
  struct Stream {
    uint64_t seq = 0;      // the segment being written (0: none yet)
    uint64_t offset = 0;   // where its next record goes
    std::vector<std::byte> buffer;
    std::vector<size_t> ends;    // end of each buffered record in `buffer`
    std::vector<uint64_t> lsns;  // each record's lsn (a watermark's: the next record's)
  };
  struct CheckpointState {
    bool active = false;
    uint64_t id = 0;  // seq of part 0
    uint32_t part = 0;
    uint64_t start_lsn = 0;
    uint64_t records = 0;
    uint64_t bytes = 0;
    uint64_t log_bytes_at_start = 0;
    Stream stream;
  };

  LogWriter(SegmentStore& store, const LogOptions& options);
  uint64_t AppendRecord(uint8_t type, std::span<const std::span<const std::byte>> body);
  // store_.Sync, remembering a failure for good (see SyncNow).
  Status SyncSegment(uint64_t seq);
  // Creates segment `header.seq` and writes `header` into it.
  Status CreateSegment(const SegmentHeader& header);
  // A new log segment whose first record will be `first_lsn`.
  Status StartLogSegment(uint64_t first_lsn);
  Status StartCheckpointPart();
  // Writes the stream's buffer into its segment, whole records only; when the
  // next record does not fit, syncs the segment and calls next_segment(lsn of
  // that record), which moves the stream to a new one.
  Status WriteStream(Stream& s, const std::function<Status(uint64_t)>& next_segment);
  Status WriteCheckpointBuffer();
  Status RemoveObsolete(uint64_t start_lsn, uint64_t keep_checkpoint);

  SegmentStore& store_;
  const LogOptions options_;
  uint64_t next_seq_ = 1;
  uint64_t next_lsn_ = 1;
  std::vector<Segment> segments_;  // every live segment, ascending seq

  Stream log_;  // the current log segment and the group being built

  uint64_t committed_lsn_ = 0;
  uint64_t watermark_ = 0;  // the last durable lsn written into the log
  uint64_t log_bytes_since_checkpoint_ = 0;
  uint64_t checkpoint_bytes_ = 0;

  // What SyncNow may sync: the current segment and the lsn written to it.
  mutable std::mutex sync_mu_;
  uint64_t sync_seq_ = 0;         // GUARDED_BY(sync_mu_)
  uint64_t sync_written_lsn_ = 0; // GUARDED_BY(sync_mu_)
  Status sync_error_;             // GUARDED_BY(sync_mu_)
  std::atomic<uint64_t> durable_lsn_{0};

  CheckpointState checkpoint_;
};

}  // namespace rampart::wal
