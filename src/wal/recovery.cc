#include "wal/recovery.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace rampart::wal {
namespace {

constexpr size_t kReadChunk = size_t{4} << 20;

uint64_t LoadU64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint32_t LoadU32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Streams the records of one segment, from the end of its header up to
// `limit` bytes, through a window of reads.
class SegmentReader {
 public:
  SegmentReader(SegmentStore& store, uint64_t seq, uint64_t limit)
      : store_(store), seq_(seq), limit_(limit), offset_(kSegmentHeaderBytes) {}

  // The next record. NotFound: no record of this segment starts here (the
  // end, or zeros, or another segment's leftovers); Corruption: one starts
  // here but does not check out. offset() is where it starts either way.
  Result<RecordView> Next() {
    if (offset_ + kRecordHeaderBytes > limit_) return NotFound("end of segment");
    RAMPART_RETURN_IF_ERROR(Load(kRecordHeaderBytes));
    const std::byte* head = window_.data() + (offset_ - window_at_);
    if (LoadU64(head + 8) != seq_) return NotFound("no record of this segment");
    const uint64_t want = std::min<uint64_t>(FramedBytes(LoadU32(head + 4)), limit_ - offset_);
    RAMPART_RETURN_IF_ERROR(Load(want));
    const size_t at = offset_ - window_at_;
    Result<RecordView> r = ParseRecord(
        std::span<const std::byte>(window_.data() + at, std::min<size_t>(want, window_.size() - at)),
        seq_);
    if (r.ok()) offset_ += r->framed_bytes;
    return r;
  }

  // What the intact records of this segment with an lsn above `lsn`, from
  // offset() + 8 on, say: how many there are, and the highest durable lsn
  // their watermark records name (0: none).
  struct After {
    uint64_t intact = 0;
    uint64_t durable = 0;
  };
  Result<After> RecordsAfter(uint64_t lsn) {
    After after;
    for (uint64_t at = offset_ + kRecordAlignment; at + kRecordHeaderBytes <= limit_;) {
      offset_ = at;
      RAMPART_RETURN_IF_ERROR(Load(kRecordHeaderBytes));
      Result<RecordView> r = Next();
      if (r.ok() && r->type == kDurableWatermark) {
        after.durable = std::max(after.durable, r->lsn);
        at = offset_;  // the next record starts right after this one
        continue;
      }
      if (r.ok() && r->lsn > lsn) {
        ++after.intact;
        at = offset_;
        continue;
      }
      at += kRecordAlignment;
    }
    return after;
  }

  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  // Makes [offset_, offset_ + n) (clipped at limit_) readable in window_.
  Status Load(uint64_t n) {
    const uint64_t end = std::min(offset_ + n, limit_);
    if (offset_ >= window_at_ && end <= window_at_ + window_.size()) return Status::Ok();
    const uint64_t size = std::min<uint64_t>(std::max<uint64_t>(end - offset_, kReadChunk),
                                             limit_ - offset_);
    window_.resize(size);
    RAMPART_ASSIGN_OR_RETURN(size_t got, store_.Read(seq_, offset_, window_));
    window_.resize(got);
    window_at_ = offset_;
    bytes_read_ += got;
    return Status::Ok();
  }

  SegmentStore& store_;
  const uint64_t seq_;
  const uint64_t limit_;
  uint64_t offset_;
  std::vector<std::byte> window_;
  uint64_t window_at_ = 0;
  uint64_t bytes_read_ = 0;
};

struct Recovery {
  SegmentStore& store;
  const Identity& identity;
  const RecoveryCallbacks& cb;
  RecoveredLog out;
  std::vector<SegmentHeader> logs;                            // ascending seq
  std::map<uint64_t, std::vector<SegmentHeader>> checkpoints; // id -> parts by part index
  uint64_t total_bytes = 0;
  uint64_t done_bytes = 0;

  // Whether an intact record of segment `seq` opens its records.
  Result<bool> HasFirstRecord(uint64_t seq) {
    std::vector<std::byte> first(kRecordHeaderBytes);
    RAMPART_ASSIGN_OR_RETURN(size_t got, store.Read(seq, kSegmentHeaderBytes, first));
    if (got < kRecordHeaderBytes) return false;
    uint32_t body = 0;
    std::memcpy(&body, first.data() + 4, sizeof body);
    first.resize(FramedBytes(std::min<uint64_t>(body, store.segment_bytes())));
    RAMPART_ASSIGN_OR_RETURN(got, store.Read(seq, kSegmentHeaderBytes, first));
    return ParseRecord(std::span(first).first(got), seq).ok();
  }

  Status ReadHeaders() {
    RAMPART_ASSIGN_OR_RETURN(std::vector<uint64_t> seqs, store.List());
    std::sort(seqs.begin(), seqs.end());
    std::vector<std::byte> block(kSegmentHeaderBytes);
    for (uint64_t seq : seqs) {
      out.next_seq = std::max(out.next_seq, seq + 1);
      RAMPART_ASSIGN_OR_RETURN(size_t got, store.Read(seq, 0, block));
      Result<SegmentHeader> h = DecodeSegmentHeader(std::span(block).first(got));
      if (!h.ok() && h.status().code() != StatusCode::kInvalidArgument) {
        // Records follow the header: a segment with a record of its own is
        // one whose header was written, and damaged since.
        RAMPART_ASSIGN_OR_RETURN(bool written, HasFirstRecord(seq));
        if (written) {
          return Corruption(store.SegmentName(seq), ": ", h.status().message(),
                            ", but records of the segment follow it: the header is damaged");
        }
        // Created, but its header never completely written: nothing in it
        // was ever acknowledged.
        out.notes.push_back(StrCat(store.SegmentName(seq), ": ", h.status().message(),
                                   "; dropped"));
        out.obsolete.push_back(seq);
        continue;
      }
      if (!h.ok()) return h.status().WithContext(store.SegmentName(seq));
      RAMPART_RETURN_IF_ERROR(CheckIdentity(*h, identity, store.SegmentName(seq)));
      if (h->seq != seq) {
        return Corruption(store.SegmentName(seq), ": its header names segment ", h->seq);
      }
      if (h->kind == SegmentKind::kLog) {
        logs.push_back(*h);
      } else {
        checkpoints[h->checkpoint].push_back(*h);
      }
    }
    return Status::Ok();
  }

  // The END record of checkpoint `parts` (sorted by part), or nullopt when the
  // checkpoint never finished.
  Result<std::optional<uint64_t>> CheckpointEnd(const std::vector<SegmentHeader>& parts) {
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].part != i) return std::optional<uint64_t>();
    }
    RAMPART_ASSIGN_OR_RETURN(uint64_t size, store.Size(parts.back().seq));
    SegmentReader reader(store, parts.back().seq, size);
    std::optional<uint64_t> records;
    for (;;) {
      Result<RecordView> r = reader.Next();
      if (!r.ok()) break;
      if (r->type == kCheckpointEnd && r->body.size() >= 8) records = LoadU64(r->body.data());
    }
    return records;
  }

  Status ChooseCheckpoint() {
    for (auto it = checkpoints.rbegin(); it != checkpoints.rend(); ++it) {
      std::vector<SegmentHeader>& parts = it->second;
      std::sort(parts.begin(), parts.end(),
                [](const SegmentHeader& a, const SegmentHeader& b) { return a.part < b.part; });
      std::optional<uint64_t> end;
      if (out.checkpoint_id == 0) {
        RAMPART_ASSIGN_OR_RETURN(end, CheckpointEnd(parts));
        if (end.has_value()) {
          out.checkpoint_id = it->first;
          out.checkpoint_start_lsn = parts.front().first_lsn;
          out.checkpoint_records = *end;
          continue;
        }
        out.notes.push_back(StrCat("checkpoint ", it->first, " (", parts.size(),
                                   " parts) never finished; dropped"));
      }
      for (const SegmentHeader& p : parts) out.obsolete.push_back(p.seq);
    }
    return Status::Ok();
  }

  void Progress(uint64_t add) {
    done_bytes += add;
    if (cb.progress) cb.progress(done_bytes, total_bytes);
  }

  Status ReplayCheckpoint() {
    if (out.checkpoint_id == 0) return Status::Ok();
    const std::vector<SegmentHeader>& parts = checkpoints[out.checkpoint_id];
    uint64_t expected = 1;
    bool ended = false;
    for (const SegmentHeader& part : parts) {
      RAMPART_ASSIGN_OR_RETURN(uint64_t size, store.Size(part.seq));
      SegmentReader reader(store, part.seq, size);
      SegmentInfo info{part, kSegmentHeaderBytes, 0};
      for (;;) {
        Result<RecordView> r = reader.Next();
        if (!r.ok() && r.status().code() == StatusCode::kNotFound) break;
        // Built only for an error: this loop runs once per record.
        auto where = [&] { return StrCat(store.SegmentName(part.seq), " at offset ", reader.offset()); };
        if (!r.ok()) {
          return r.status().WithContext(StrCat("checkpoint ", out.checkpoint_id, ": ", where()));
        }
        if (ended || r->lsn != expected) {
          return Corruption("checkpoint ", out.checkpoint_id, ": ", where(), ": record ", r->lsn,
                            " where ", ended ? "the end was" : StrCat("record ", expected, " was"),
                            " expected");
        }
        ++expected;
        ++info.records;
        info.bytes = reader.offset();
        if (r->type == kCheckpointEnd) {
          ended = true;
          continue;
        }
        out.checkpoint_bytes += r->framed_bytes;
        if (cb.on_checkpoint_record) {
          if (Status st = cb.on_checkpoint_record(*r); !st.ok()) return st.WithContext(where());
        }
      }
      Progress(reader.bytes_read());
      out.live.push_back(info);
    }
    if (!ended || expected - 2 != out.checkpoint_records) {
      return Corruption("checkpoint ", out.checkpoint_id, ": ", expected - 1,
                        " records read, its end record counts ", out.checkpoint_records);
    }
    return Status::Ok();
  }

  // Index of the first log segment to replay: the last one whose first lsn is
  // at most the start lsn (the ones before hold only older records).
  size_t FirstLogSegment(uint64_t start_lsn) {
    size_t first = 0;
    for (size_t i = 0; i < logs.size(); ++i) {
      if (logs[i].first_lsn <= start_lsn) first = i;
    }
    for (size_t i = 0; i < first; ++i) out.obsolete.push_back(logs[i].seq);
    return first;
  }

  Status ReplayLog() {
    const uint64_t start_lsn = out.checkpoint_id != 0 ? out.checkpoint_start_lsn : 1;
    out.next_lsn = start_lsn;
    if (logs.empty()) return Status::Ok();
    const size_t first = FirstLogSegment(start_lsn);
    if (logs[first].first_lsn > start_lsn) {
      return Corruption(store.SegmentName(logs[first].seq), " starts at record ",
                        logs[first].first_lsn, " but recovery needs the log from record ",
                        start_lsn, (out.checkpoint_id != 0 ? " (the checkpoint's start)" : ""),
                        ": records ", start_lsn, "..", logs[first].first_lsn - 1, " are missing");
    }
    uint64_t expected = logs[first].first_lsn;
    for (size_t i = first; i < logs.size(); ++i) {
      const SegmentHeader& seg = logs[i];
      const bool last = i + 1 == logs.size();
      const std::string name = store.SegmentName(seg.seq);
      if (seg.first_lsn != expected) {
        return Corruption(name, " starts at record ", seg.first_lsn, " but the log before it ends at ",
                          expected - 1);
      }
      uint64_t limit;
      if (last) {
        RAMPART_ASSIGN_OR_RETURN(limit, store.Size(seg.seq));
      } else {
        const SegmentHeader& next = logs[i + 1];
        if (next.prev_seq != seg.seq) {
          return Corruption(store.SegmentName(next.seq), " follows segment ", next.prev_seq,
                            ", not ", seg.seq, " (a log segment is missing)");
        }
        limit = next.prev_end;
      }
      SegmentReader reader(store, seg.seq, limit);
      SegmentInfo info{seg, kSegmentHeaderBytes, 0};
      Status ended = Status::Ok();
      for (;;) {
        Result<RecordView> r = reader.Next();
        if (!r.ok()) {
          ended = r.status();
          break;
        }
        if (r->type == kDurableWatermark) continue;  // the log's own, no lsn of its own
        if (r->lsn != expected) {
          return Corruption(name, " at offset ", reader.offset() - r->framed_bytes, ": record ",
                            r->lsn, " where record ", expected, " was expected");
        }
        ++expected;
        ++info.records;
        if (r->lsn >= start_lsn) {
          ++out.log_records_replayed;
          out.log_bytes_replayed += r->framed_bytes;
          if (cb.on_log_record) {
            if (Status st = cb.on_log_record(*r); !st.ok()) {
              return st.WithContext(StrCat(name, " record ", r->lsn));
            }
          }
        }
      }
      info.bytes = reader.offset();
      if (!last && reader.offset() != limit) {
        return Corruption(name, " at offset ", reader.offset(), ": ", ended.message(),
                          " (the segment's records end at ", limit, ")");
      }
      if (last && reader.offset() < limit) {
        RAMPART_RETURN_IF_ERROR(CheckTornTail(reader, expected - 1, name, ended));
      }
      Progress(reader.bytes_read());
      out.live.push_back(info);
      out.last_log_seq = seg.seq;
      out.last_log_end = info.bytes;
    }
    out.next_lsn = expected;
    return Status::Ok();
  }

  // The newest segment's records stop before its end. What follows was
  // written but not durable when the machine stopped (a torn tail: a write
  // cut short, or its pages persisted out of order) — unless a later record's
  // watermark says the first missing record (last_lsn + 1) was durable
  // already: then the log is damaged.
  Status CheckTornTail(SegmentReader& reader, uint64_t last_lsn, const std::string& name,
                       const Status& why) {
    const uint64_t end = reader.offset();
    RAMPART_ASSIGN_OR_RETURN(SegmentReader::After after, reader.RecordsAfter(last_lsn));
    if (after.durable > last_lsn) {
      return Corruption(name, " at offset ", end, ": ", why.message(), "; a later record says "
                        "records up to ", after.durable, " were durable: the log is damaged, "
                        "not torn");
    }
    reader.set_offset(end);
    if (why.code() == StatusCode::kCorruption || after.intact > 0) {
      out.torn_tail = true;
      out.notes.push_back(StrCat(name, ": the log ends at offset ", end, " (", why.message(),
                                 "): a torn tail", after.intact > 0
                                     ? StrCat("; ", after.intact, " intact records written after "
                                              "it, never durable, dropped too")
                                     : std::string()));
    }
    return Status::Ok();
  }
};

}  // namespace

Result<RecoveredLog> Recover(SegmentStore& store, const Identity& identity,
                             const RecoveryCallbacks& callbacks) {
  Recovery r{store, identity, callbacks, {}, {}, {}, 0, 0};
  RAMPART_RETURN_IF_ERROR(r.ReadHeaders());
  RAMPART_RETURN_IF_ERROR(r.ChooseCheckpoint());
  for (const SegmentHeader& h : r.logs) {
    Result<uint64_t> size = store.Size(h.seq);
    if (size.ok()) r.total_bytes += *size;
  }
  if (r.out.checkpoint_id != 0) {
    for (const SegmentHeader& p : r.checkpoints[r.out.checkpoint_id]) {
      Result<uint64_t> size = store.Size(p.seq);
      if (size.ok()) r.total_bytes += *size;
    }
  }
  if (callbacks.on_plan) callbacks.on_plan(r.total_bytes);
  RAMPART_RETURN_IF_ERROR(r.ReplayCheckpoint());
  RAMPART_RETURN_IF_ERROR(r.ReplayLog());
  std::sort(r.out.live.begin(), r.out.live.end(), [](const SegmentInfo& a, const SegmentInfo& b) {
    return a.header.seq < b.header.seq;
  });
  std::sort(r.out.obsolete.begin(), r.out.obsolete.end());
  return std::move(r.out);
}

}  // namespace rampart::wal
