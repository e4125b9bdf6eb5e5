#include "kv/redo.h"

#include <cstring>

namespace rampart::kv {
namespace {

using Pieces = std::span<const std::span<const std::byte>>;

std::span<const std::byte> AsBytes(const void* p, size_t n) {
  return {static_cast<const std::byte*>(p), n};
}

template <typename T>
void PutLe(std::vector<std::byte>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

void PutString(std::vector<std::byte>& out, std::string_view s) {
  PutLe<uint32_t>(out, static_cast<uint32_t>(s.size()));
  const size_t at = out.size();
  out.resize(at + s.size());
  if (!s.empty()) std::memcpy(out.data() + at, s.data(), s.size());
}

// Reads the fields of a record body, refusing anything that runs past it.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> body) : body_(body) {}
  template <typename T>
  Status Le(T* v) {
    if (body_.size() - at_ < sizeof(T)) return Corruption("record body cut short");
    std::memcpy(v, body_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return Status::Ok();
  }
  Status String(std::string_view* s) {
    uint32_t n = 0;
    RAMPART_RETURN_IF_ERROR(Le(&n));
    if (body_.size() - at_ < n) return Corruption("record body cut short");
    *s = std::string_view(reinterpret_cast<const char*>(body_.data() + at_), n);
    at_ += n;
    return Status::Ok();
  }
  bool done() const { return at_ == body_.size(); }

 private:
  std::span<const std::byte> body_;
  size_t at_ = 0;
};

}  // namespace

std::vector<PrepareItem> PartitionItems(const wire::PrepareRequest& request) {
  std::vector<PrepareItem> items;
  items.reserve(request.items.size());
  for (const wire::PrepareItem& in : request.items) {
    items.push_back(PrepareItem{in.key, in.value,
                                in.siblings.empty() ? std::string_view() : in.siblings.encoded(),
                                in.tombstone});
  }
  return items;
}

void PartitionRedo::Prepare(uint8_t flags, std::span<const std::byte> request_body) {
  const std::span<const std::byte> pieces[] = {AsBytes(&flags, 1), request_body};
  log_.Append(kRedoPrepare, pieces);
}

void PartitionRedo::Commit(uint64_t ts) {
  const std::span<const std::byte> piece = AsBytes(&ts, sizeof ts);
  log_.Append(kRedoCommit, Pieces(&piece, 1));
}

void PartitionRedo::Flush() { log_.Append(kRedoFlush, {}); }

Status PartitionRedo::BeginCheckpoint(Partition& partition) {
  RAMPART_RETURN_IF_ERROR(log_.BeginCheckpoint());
  partition.StartScan();
  return Status::Ok();
}

Result<bool> PartitionRedo::ContinueCheckpoint(Partition& partition, size_t max_keys,
                                               size_t max_bytes) {
  Status st;
  size_t bytes = 0;
  auto visit = [&](const VersionView& v) {
    if (!st.ok()) return;
    scratch_.clear();
    PutLe<uint64_t>(scratch_, v.ts);
    PutLe<uint8_t>(scratch_, static_cast<uint8_t>((v.committed ? 1 : 0) | (v.tombstone ? 2 : 0)));
    PutString(scratch_, v.key);
    PutString(scratch_, v.value);
    PutString(scratch_, v.metadata);
    const std::span<const std::byte> piece(scratch_);
    bytes += scratch_.size();
    st = log_.AppendCheckpoint(kCheckpointVersion, Pieces(&piece, 1));
  };
  bool more = true;
  for (size_t keys = 0; more && keys < max_keys && bytes < max_bytes && st.ok(); ++keys) {
    more = partition.ScanNext(1, visit);
  }
  RAMPART_RETURN_IF_ERROR(st);
  return more;
}

Status ApplyRedoRecord(Partition& partition, const wal::RecordView& record,
                       const wire::ProtocolLimits& limits, Clock::time_point now) {
  switch (record.type) {
    case kRedoPrepare: {
      if (record.body.empty()) return Corruption("PREPARE record without flags");
      wire::RequestFrame frame;
      frame.header.type = wire::MsgType::kPrepare;
      frame.header.flags = std::to_integer<uint8_t>(record.body[0]);
      frame.header.body_len = static_cast<uint32_t>(record.body.size() - 1);
      frame.body = record.body.subspan(1);
      RAMPART_ASSIGN_OR_RETURN(wire::Request request, wire::DecodeRequest(frame, limits));
      const auto& prepare = std::get<wire::PrepareRequest>(request.body);
      const std::vector<PrepareItem> items = PartitionItems(prepare);
      RAMPART_RETURN_IF_ERROR(partition.Prepare(prepare.ts, items, now));
      if ((frame.header.flags & wire::kFlagCommitNow) != 0) {
        RAMPART_RETURN_IF_ERROR(partition.Commit(prepare.ts, now));
      }
      return Status::Ok();
    }
    case kRedoCommit: {
      Reader r(record.body);
      uint64_t ts = 0;
      RAMPART_RETURN_IF_ERROR(r.Le(&ts));
      if (!r.done()) return Corruption("COMMIT record with trailing bytes");
      return partition.Commit(ts, now);
    }
    case kRedoFlush:
      partition.Flush();
      return Status::Ok();
    default:
      return Corruption("unknown redo record type ", record.type);
  }
}

Status ApplyCheckpointRecord(Partition& partition, const wal::RecordView& record,
                             Clock::time_point now) {
  if (record.type != kCheckpointVersion) {
    return Corruption("unknown checkpoint record type ", record.type);
  }
  Reader r(record.body);
  uint64_t ts = 0;
  uint8_t flags = 0;
  PrepareItem item;
  RAMPART_RETURN_IF_ERROR(r.Le(&ts));
  RAMPART_RETURN_IF_ERROR(r.Le(&flags));
  RAMPART_RETURN_IF_ERROR(r.String(&item.key));
  RAMPART_RETURN_IF_ERROR(r.String(&item.value));
  RAMPART_RETURN_IF_ERROR(r.String(&item.metadata));
  if (!r.done() || flags > 3) return Corruption("VERSION record with bad fields");
  item.tombstone = (flags & 2) != 0;
  if (!item.metadata.empty()) {
    RAMPART_RETURN_IF_ERROR(wire::KeyList::Parse(item.metadata).status());
  }
  RAMPART_RETURN_IF_ERROR(partition.Prepare(ts, std::span<const PrepareItem>(&item, 1), now));
  if ((flags & 1) != 0) RAMPART_RETURN_IF_ERROR(partition.Commit(ts, now));
  return Status::Ok();
}

Result<wal::RecoveredLog> RecoverPartition(
    wal::SegmentStore& store, const wal::Identity& identity, Partition& partition,
    const wire::ProtocolLimits& limits,
    const std::function<void(uint64_t done, uint64_t total)>& progress) {
  partition.set_budget_exempt(true);
  const Clock::time_point now = Clock::now();
  // Superseded versions are not needed once recovered (no reader spans the
  // restart): reclaim them as replay goes instead of keeping them for the
  // grace — unless that would also expire the prepared versions (a grace
  // period as long as the prepared timeout).
  const PartitionOptions& o = partition.options();
  const Clock::time_point reclaim_all =
      o.grace_period < o.prepared_timeout ? now + o.grace_period : now;
  uint64_t applied = 0;
  auto gc_now_and_then = [&] {
    if (++applied % 4096 == 0) partition.Gc(reclaim_all);
  };
  wal::RecoveryCallbacks cb;
  cb.on_checkpoint_record = [&](const wal::RecordView& r) {
    gc_now_and_then();
    return ApplyCheckpointRecord(partition, r, now);
  };
  cb.on_log_record = [&](const wal::RecordView& r) {
    gc_now_and_then();
    return ApplyRedoRecord(partition, r, limits, now);
  };
  cb.progress = progress;
  // Grow the key index once instead of rehashing all the way up: a record of
  // a new key takes at least ~100 bytes of log.
  cb.on_plan = [&](uint64_t total) { partition.ReserveKeys(total / 128); };
  Result<wal::RecoveredLog> recovered = wal::Recover(store, identity, cb);
  partition.Gc(reclaim_all);
  partition.set_budget_exempt(false);
  return recovered;
}

}  // namespace rampart::kv
