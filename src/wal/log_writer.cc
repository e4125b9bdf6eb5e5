#include "wal/log_writer.h"

#include <algorithm>

namespace rampart::wal {

LogWriter::LogWriter(SegmentStore& store, const LogOptions& options)
    : store_(store), options_(options) {}

Result<std::unique_ptr<LogWriter>> LogWriter::Open(SegmentStore& store, const LogOptions& options,
                                                   const RecoveredLog& recovered) {
  std::unique_ptr<LogWriter> w(new LogWriter(store, options));
  for (const SegmentInfo& s : recovered.live) {
    w->segments_.push_back(
        Segment{s.header.seq, s.header.kind, s.header.first_lsn, s.header.checkpoint});
  }
  w->next_seq_ = recovered.next_seq;
  w->next_lsn_ = recovered.next_lsn;
  w->committed_lsn_ = recovered.next_lsn - 1;
  w->durable_lsn_.store(w->committed_lsn_);
  w->log_bytes_since_checkpoint_ = recovered.log_bytes_replayed;
  w->checkpoint_bytes_ = recovered.checkpoint_bytes;
  w->log_.seq = recovered.last_log_seq;
  w->log_.offset = recovered.last_log_end;
  // The log recovery read may be only in the page cache (a process that died
  // a moment ago): it is durable before a segment that names it as its
  // predecessor can be, as at every rotation.
  if (recovered.last_log_seq != 0) {
    RAMPART_RETURN_IF_ERROR(store.Sync(recovered.last_log_seq));
  }
  // The new segment, durable before any obsolete one goes: its seq (above
  // every seq there is) stays the highest, so a seq is never used twice even
  // if the removals are cut short.
  Status started = w->StartLogSegment(w->next_lsn_);
  if (started.code() == StatusCode::kResourceExhausted && !recovered.obsolete.empty()) {
    // A full store of slots: make room first (the segment gets a fresh seq).
    RAMPART_RETURN_IF_ERROR(store.Remove(recovered.obsolete.front()));
    started = w->StartLogSegment(w->next_lsn_);
  }
  RAMPART_RETURN_IF_ERROR(started);
  RAMPART_RETURN_IF_ERROR(store.Sync(w->log_.seq));
  for (uint64_t seq : recovered.obsolete) {
    Status removed = store.Remove(seq);
    if (!removed.ok() && removed.code() != StatusCode::kNotFound) {
      return removed.WithContext("removing an obsolete log segment");
    }
  }
  return w;
}

uint64_t LogWriter::max_record_bytes() const {
  return store_.segment_bytes() - kSegmentHeaderBytes - kRecordHeaderBytes - kRecordAlignment;
}

Status LogWriter::CreateSegment(const SegmentHeader& header) {
  RAMPART_RETURN_IF_ERROR(store_.Create(header.seq));
  std::vector<std::byte> block(kSegmentHeaderBytes);
  EncodeSegmentHeader(header, block);
  RAMPART_RETURN_IF_ERROR(store_.Write(header.seq, 0, block));
  segments_.push_back(Segment{header.seq, header.kind, header.first_lsn, header.checkpoint});
  return Status::Ok();
}

Status LogWriter::StartLogSegment(uint64_t first_lsn) {
  SegmentHeader h;
  h.kind = SegmentKind::kLog;
  h.seq = next_seq_++;
  h.first_lsn = first_lsn;
  h.prev_seq = log_.seq;
  h.prev_end = log_.seq == 0 ? 0 : log_.offset;
  h.identity = options_.identity;
  RAMPART_RETURN_IF_ERROR(CreateSegment(h));
  log_.seq = h.seq;
  log_.offset = kSegmentHeaderBytes;
  std::lock_guard<std::mutex> lock(sync_mu_);
  sync_seq_ = h.seq;
  return Status::Ok();
}

uint64_t LogWriter::Append(uint8_t type, std::span<const std::span<const std::byte>> body) {
  return AppendRecord(type, body);
}

uint64_t LogWriter::AppendRecord(uint8_t type, std::span<const std::span<const std::byte>> body) {
  const uint64_t lsn = next_lsn_++;
  FrameRecord(log_.buffer, log_.seq, lsn, type, body);
  log_.ends.push_back(log_.buffer.size());
  log_.lsns.push_back(lsn);
  return lsn;
}

Status LogWriter::WriteStream(Stream& s, const std::function<Status(uint64_t)>& next_segment) {
  size_t from = 0;
  size_t record = 0;  // index (in s.ends) of the first record not written
  while (from < s.buffer.size()) {
    const uint64_t room = store_.segment_bytes() - s.offset;
    size_t to = from;
    size_t last = record;
    while (last < s.ends.size() && s.ends[last] - from <= room) to = s.ends[last++];
    if (to == from) {
      if (s.offset == kSegmentHeaderBytes) {
        return ResourceExhausted("a log record of ", s.ends[record] - from,
                                 " bytes does not fit a log segment of ", store_.segment_bytes(),
                                 " bytes");
      }
      // The segment is full: it is durable before a later one may be.
      RAMPART_RETURN_IF_ERROR(SyncSegment(s.seq));
      RAMPART_RETURN_IF_ERROR(next_segment(s.lsns[record]));
      for (size_t r = record; r < s.ends.size(); ++r) {
        const size_t start = r == 0 ? 0 : s.ends[r - 1];
        RestampRecord(std::span(s.buffer).subspan(start, s.ends[r] - start), s.seq);
      }
      continue;
    }
    RAMPART_RETURN_IF_ERROR(
        store_.Write(s.seq, s.offset, std::span(s.buffer).subspan(from, to - from)));
    s.offset += to - from;
    from = to;
    record = last;
  }
  s.buffer.clear();
  s.ends.clear();
  s.lsns.clear();
  return Status::Ok();
}

Status LogWriter::Commit() {
  RAMPART_RETURN_IF_ERROR(sync_error());
  if (checkpoint_.active && checkpoint_.stream.buffer.size() >= options_.checkpoint_write_bytes) {
    RAMPART_RETURN_IF_ERROR(WriteCheckpointBuffer());
  }
  if (log_.buffer.empty()) return Status::Ok();
  // Recovery tells a cut write from damage by these: records after a bad one
  // that say it was durable already make it damage (docs/log_format.md).
  // A watermark takes no lsn of its own: its lsn field is the durable lsn.
  const uint64_t durable = durable_lsn_.load(std::memory_order_acquire);
  if (durable > watermark_) {
    watermark_ = durable;
    FrameRecord(log_.buffer, log_.seq, durable, kDurableWatermark, {});
    log_.ends.push_back(log_.buffer.size());
    log_.lsns.push_back(next_lsn_);
  }
  const uint64_t bytes = log_.buffer.size();
  const uint64_t before_seq = log_.seq;
  RAMPART_RETURN_IF_ERROR(
      WriteStream(log_, [this](uint64_t first_lsn) { return StartLogSegment(first_lsn); }));
  if (log_.seq != before_seq) {
    // The full segment was synced before the new one began.
    durable_lsn_.store(std::max(durable_lsn_.load(), committed_lsn_), std::memory_order_release);
  }
  committed_lsn_ = next_lsn_ - 1;
  log_bytes_since_checkpoint_ += bytes;
  {
    std::lock_guard<std::mutex> lock(sync_mu_);
    sync_seq_ = log_.seq;
    sync_written_lsn_ = committed_lsn_;
  }
  if (options_.sync == SyncPolicy::kAlways) {
    RAMPART_RETURN_IF_ERROR(SyncSegment(log_.seq));
    durable_lsn_.store(committed_lsn_, std::memory_order_release);
  }
  return Status::Ok();
}

Status LogWriter::SyncSegment(uint64_t seq) {
  Status st = store_.Sync(seq);
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(sync_mu_);
    if (sync_error_.ok()) sync_error_ = st;
  }
  return st;
}

Status LogWriter::sync_error() const {
  std::lock_guard<std::mutex> lock(sync_mu_);
  return sync_error_;
}

Status LogWriter::SyncNow() {
  uint64_t seq, written;
  {
    std::lock_guard<std::mutex> lock(sync_mu_);
    // A failed sync is final: the kernel may report the lost pages once and
    // then succeed, so nothing after it counts as durable.
    if (!sync_error_.ok()) return sync_error_;
    seq = sync_seq_;
    written = sync_written_lsn_;
  }
  if (written <= durable_lsn_.load(std::memory_order_acquire)) return Status::Ok();
  RAMPART_RETURN_IF_ERROR(SyncSegment(seq));
  uint64_t durable = durable_lsn_.load(std::memory_order_acquire);
  while (durable < written &&
         !durable_lsn_.compare_exchange_weak(durable, written, std::memory_order_acq_rel)) {
  }
  return Status::Ok();
}

// ---- checkpoints

Status LogWriter::StartCheckpointPart() {
  SegmentHeader h;
  h.kind = SegmentKind::kCheckpoint;
  h.seq = next_seq_++;
  h.first_lsn = checkpoint_.start_lsn;
  h.checkpoint = checkpoint_.id == 0 ? h.seq : checkpoint_.id;
  h.part = checkpoint_.id == 0 ? 0 : checkpoint_.part + 1;
  h.identity = options_.identity;
  RAMPART_RETURN_IF_ERROR(CreateSegment(h));
  checkpoint_.id = h.checkpoint;
  checkpoint_.part = h.part;
  checkpoint_.stream.seq = h.seq;
  checkpoint_.stream.offset = kSegmentHeaderBytes;
  return Status::Ok();
}

Status LogWriter::BeginCheckpoint() {
  if (checkpoint_.active) return FailedPrecondition("a checkpoint is in progress already");
  checkpoint_ = CheckpointState{};
  checkpoint_.active = true;
  checkpoint_.start_lsn = next_lsn_;
  checkpoint_.log_bytes_at_start = log_bytes_since_checkpoint_ + log_.buffer.size();
  return StartCheckpointPart();
}

Status LogWriter::AppendCheckpoint(uint8_t type, std::span<const std::span<const std::byte>> body) {
  Stream& s = checkpoint_.stream;
  checkpoint_.bytes += FrameRecord(s.buffer, s.seq, ++checkpoint_.records, type, body);
  s.ends.push_back(s.buffer.size());
  s.lsns.push_back(checkpoint_.records);
  return Status::Ok();
}

Status LogWriter::WriteCheckpointBuffer() {
  return WriteStream(checkpoint_.stream, [this](uint64_t) { return StartCheckpointPart(); });
}

Status LogWriter::FinishCheckpoint() {
  if (!checkpoint_.active) return FailedPrecondition("no checkpoint is in progress");
  // The redo records the scan's view depends on are durable first.
  RAMPART_RETURN_IF_ERROR(Commit());
  RAMPART_RETURN_IF_ERROR(SyncSegment(log_.seq));
  durable_lsn_.store(std::max(durable_lsn_.load(), committed_lsn_), std::memory_order_release);

  uint64_t end_body[2] = {checkpoint_.records, checkpoint_.bytes};
  Stream& s = checkpoint_.stream;
  const std::span<const std::byte> piece = std::as_bytes(std::span(end_body));
  FrameRecord(s.buffer, s.seq, checkpoint_.records + 1, kCheckpointEnd,
              std::span<const std::span<const std::byte>>(&piece, 1));
  s.ends.push_back(s.buffer.size());
  s.lsns.push_back(checkpoint_.records + 1);
  RAMPART_RETURN_IF_ERROR(WriteCheckpointBuffer());
  RAMPART_RETURN_IF_ERROR(SyncSegment(s.seq));

  // Installed: a restart replays it and the log from its start lsn.
  checkpoint_.active = false;
  checkpoint_bytes_ = checkpoint_.bytes;
  log_bytes_since_checkpoint_ -= std::min(log_bytes_since_checkpoint_, checkpoint_.log_bytes_at_start);
  return RemoveObsolete(checkpoint_.start_lsn, checkpoint_.id);
}

Status LogWriter::RemoveObsolete(uint64_t start_lsn, uint64_t keep_checkpoint) {
  std::vector<uint64_t> remove;
  for (size_t i = 0; i < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    if (s.kind == SegmentKind::kCheckpoint) {
      if (s.checkpoint != keep_checkpoint) remove.push_back(s.seq);
      continue;
    }
    // A log segment goes when the next one starts at or before the redo start.
    auto next = std::find_if(segments_.begin() + static_cast<long>(i) + 1, segments_.end(),
                             [](const Segment& n) { return n.kind == SegmentKind::kLog; });
    if (next != segments_.end() && next->first_lsn <= start_lsn) remove.push_back(s.seq);
  }
  for (uint64_t seq : remove) {
    RAMPART_RETURN_IF_ERROR(store_.Remove(seq));
    segments_.erase(std::find_if(segments_.begin(), segments_.end(),
                                 [seq](const Segment& s) { return s.seq == seq; }));
  }
  return Status::Ok();
}

}  // namespace rampart::wal
