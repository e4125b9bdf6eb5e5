#include "wal/format.h"

#include <algorithm>
#include <cstring>

#include "common/crc32c.h"

namespace rampart::wal {
namespace {

constexpr char kMagic[8] = {'R', 'P', 'W', 'A', 'L', 'S', 'E', 'G'};
// Segment header field offsets (docs/log_format.md).
constexpr size_t kVersionAt = 8, kKindAt = 12, kSeqAt = 16, kFirstLsnAt = 24, kPrevSeqAt = 32,
                 kPrevEndAt = 40, kCheckpointAt = 48, kPartAt = 56, kNodeAt = 60,
                 kPartitionAt = 64, kPartitionCountAt = 68, kClusterLenAt = 72, kClusterAt = 76,
                 kHeaderCrcAt = kClusterAt + kMaxClusterNameBytes;
// Record header field offsets.
constexpr size_t kRecCrcAt = 0, kRecLenAt = 4, kRecSeqAt = 8, kRecLsnAt = 16, kRecTypeAt = 24;

template <typename T>
void Put(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
T Get(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::string_view SegmentKindName(SegmentKind kind) {
  switch (kind) {
    case SegmentKind::kLog: return "log";
    case SegmentKind::kCheckpoint: return "checkpoint";
  }
  return "unknown";
}

std::string Identity::ToString() const {
  return StrCat("cluster \"", cluster, "\" node ", node, " partition ", partition, " of ",
                partition_count);
}

void EncodeSegmentHeader(const SegmentHeader& h, std::span<std::byte> out) {
  std::fill(out.begin(), out.begin() + kSegmentHeaderBytes, std::byte{0});
  std::byte* p = out.data();
  std::memcpy(p, kMagic, sizeof kMagic);
  Put<uint32_t>(p + kVersionAt, kFormatVersion);
  Put<uint32_t>(p + kKindAt, static_cast<uint32_t>(h.kind));
  Put<uint64_t>(p + kSeqAt, h.seq);
  Put<uint64_t>(p + kFirstLsnAt, h.first_lsn);
  Put<uint64_t>(p + kPrevSeqAt, h.prev_seq);
  Put<uint64_t>(p + kPrevEndAt, h.prev_end);
  Put<uint64_t>(p + kCheckpointAt, h.checkpoint);
  Put<uint32_t>(p + kPartAt, h.part);
  Put<uint32_t>(p + kNodeAt, h.identity.node);
  Put<uint32_t>(p + kPartitionAt, h.identity.partition);
  Put<uint32_t>(p + kPartitionCountAt, h.identity.partition_count);
  const size_t len = std::min(h.identity.cluster.size(), kMaxClusterNameBytes);
  Put<uint32_t>(p + kClusterLenAt, static_cast<uint32_t>(len));
  std::memcpy(p + kClusterAt, h.identity.cluster.data(), len);
  Put<uint32_t>(p + kHeaderCrcAt, Crc32c(std::span<const std::byte>(p, kHeaderCrcAt)));
}

Result<SegmentHeader> DecodeSegmentHeader(std::span<const std::byte> in) {
  if (in.size() < kHeaderCrcAt + 4) return Corruption("segment header: short read");
  const std::byte* p = in.data();
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) return NotFound("no segment header");
  if (Get<uint32_t>(p + kHeaderCrcAt) != Crc32c(std::span<const std::byte>(p, kHeaderCrcAt))) {
    return Corruption("segment header checksum mismatch (a torn write)");
  }
  const uint32_t version = Get<uint32_t>(p + kVersionAt);
  if (version != kFormatVersion) {
    return InvalidArgument("segment format version ", version, " (this rampart reads version ",
                           kFormatVersion, ")");
  }
  SegmentHeader h;
  const uint32_t kind = Get<uint32_t>(p + kKindAt);
  if (kind != static_cast<uint32_t>(SegmentKind::kLog) &&
      kind != static_cast<uint32_t>(SegmentKind::kCheckpoint)) {
    return Corruption("segment header: unknown kind ", kind);
  }
  h.kind = static_cast<SegmentKind>(kind);
  h.seq = Get<uint64_t>(p + kSeqAt);
  h.first_lsn = Get<uint64_t>(p + kFirstLsnAt);
  h.prev_seq = Get<uint64_t>(p + kPrevSeqAt);
  h.prev_end = Get<uint64_t>(p + kPrevEndAt);
  h.checkpoint = Get<uint64_t>(p + kCheckpointAt);
  h.part = Get<uint32_t>(p + kPartAt);
  h.identity.node = Get<uint32_t>(p + kNodeAt);
  h.identity.partition = Get<uint32_t>(p + kPartitionAt);
  h.identity.partition_count = Get<uint32_t>(p + kPartitionCountAt);
  const uint32_t len = Get<uint32_t>(p + kClusterLenAt);
  if (len > kMaxClusterNameBytes || h.seq == 0) return Corruption("segment header: bad fields");
  h.identity.cluster.assign(reinterpret_cast<const char*>(p + kClusterAt), len);
  return h;
}

uint64_t RawHeaderSeq(std::span<const std::byte> in) {
  return in.size() >= kSeqAt + 8 ? Get<uint64_t>(in.data() + kSeqAt) : 0;
}

Status CheckIdentity(const SegmentHeader& header, const Identity& expected,
                     std::string_view where) {
  if (header.identity == expected) return Status::Ok();
  return FailedPrecondition(where, " belongs to ", header.identity.ToString(), ", not to ",
                            expected.ToString(),
                            ": refusing to replay another cluster's, node's or partition "
                            "layout's log (move the data directory away, or point "
                            "kv.data_dir elsewhere)");
}

size_t FrameRecord(std::vector<std::byte>& out, uint64_t seq, uint64_t lsn, uint8_t type,
                   std::span<const std::span<const std::byte>> body) {
  size_t body_bytes = 0;
  for (auto piece : body) body_bytes += piece.size();
  const size_t framed = FramedBytes(body_bytes);
  const size_t at = out.size();
  out.resize(at + framed);
  std::byte* p = out.data() + at;
  std::memset(p, 0, kRecordHeaderBytes);
  Put<uint32_t>(p + kRecLenAt, static_cast<uint32_t>(body_bytes));
  Put<uint64_t>(p + kRecSeqAt, seq);
  Put<uint64_t>(p + kRecLsnAt, lsn);
  p[kRecTypeAt] = std::byte{type};
  std::byte* b = p + kRecordHeaderBytes;
  for (auto piece : body) {
    if (!piece.empty()) std::memcpy(b, piece.data(), piece.size());
    b += piece.size();
  }
  std::memset(b, 0, framed - kRecordHeaderBytes - body_bytes);
  Put<uint32_t>(p + kRecCrcAt,
                Crc32c(std::span<const std::byte>(p + 4, kRecordHeaderBytes - 4 + body_bytes)));
  return framed;
}

void RestampRecord(std::span<std::byte> record, uint64_t seq) {
  std::byte* p = record.data();
  Put<uint64_t>(p + kRecSeqAt, seq);
  const uint32_t body_bytes = Get<uint32_t>(p + kRecLenAt);
  Put<uint32_t>(p + kRecCrcAt,
                Crc32c(std::span<const std::byte>(p + 4, kRecordHeaderBytes - 4 + body_bytes)));
}

Result<RecordView> ParseRecord(std::span<const std::byte> bytes, uint64_t seq) {
  if (bytes.size() < kRecordHeaderBytes) return NotFound("no room for a record header");
  const std::byte* p = bytes.data();
  if (Get<uint64_t>(p + kRecSeqAt) != seq) return NotFound("not a record of this segment");
  const uint32_t body_bytes = Get<uint32_t>(p + kRecLenAt);
  const uint32_t crc = Get<uint32_t>(p + kRecCrcAt);
  if (body_bytes > bytes.size() - kRecordHeaderBytes) {
    return Corruption("record of ", body_bytes, " bytes runs past the ",
                      bytes.size() - kRecordHeaderBytes, " bytes left in the segment");
  }
  if (crc != Crc32c(std::span<const std::byte>(p + 4, kRecordHeaderBytes - 4 + body_bytes))) {
    return Corruption("record checksum mismatch");
  }
  for (size_t i = kRecTypeAt + 1; i < kRecordHeaderBytes; ++i) {
    if (p[i] != std::byte{0}) return Corruption("record header padding is not zero");
  }
  RecordView r;
  r.lsn = Get<uint64_t>(p + kRecLsnAt);
  r.type = std::to_integer<uint8_t>(p[kRecTypeAt]);
  r.body = bytes.subspan(kRecordHeaderBytes, body_bytes);
  r.framed_bytes = FramedBytes(body_bytes);
  if (r.framed_bytes > bytes.size()) {
    // The padding is cut off: only at the very end of what was read.
    return Corruption("record padding runs past the segment");
  }
  return r;
}

}  // namespace rampart::wal
