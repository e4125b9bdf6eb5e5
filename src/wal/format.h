// The redo log's persisted format (docs/log_format.md; do not change): the
// header that opens every segment and the frame around every record.
//
//   std::vector<std::byte> block(kSegmentHeaderBytes);
//   EncodeSegmentHeader(header, block);
//   Result<SegmentHeader> h = DecodeSegmentHeader(block);   // Corruption if torn
//
//   size_t n = FrameRecord(out, seq, lsn, type, {body});     // appends header + body + pad
//   Result<RecordView> r = ParseRecord(bytes, seq);          // checks crc, length, seq
//
// A segment is `kSegmentHeaderBytes` of header, then records back to back,
// each 8-byte aligned. Every record names the segment it was written into
// (seq) and carries its log sequence number, so bytes left over from an
// earlier use of the same space never pass as records of this segment.
//
// Thread-safety: pure functions and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rampart::wal {

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint64_t kSegmentHeaderBytes = 4096;  // records start here
inline constexpr size_t kRecordHeaderBytes = 32;
inline constexpr size_t kRecordAlignment = 8;
inline constexpr size_t kMaxClusterNameBytes = 128;

enum class SegmentKind : uint32_t { kLog = 1, kCheckpoint = 2 };
std::string_view SegmentKindName(SegmentKind kind);

// Whose log it is. A segment whose identity differs from the opener's is
// refused: it belongs to another cluster, node or partition, or the cluster
// has a different number of partitions (so keys would land elsewhere).
struct Identity {
  std::string cluster;           // at most kMaxClusterNameBytes
  uint32_t node = 0;
  uint32_t partition = 0;
  uint32_t partition_count = 0;  // of the whole cluster
  friend bool operator==(const Identity&, const Identity&) = default;
  std::string ToString() const;  // cluster "x" node 1 partition 5 of 8
};

struct SegmentHeader {
  SegmentKind kind = SegmentKind::kLog;
  uint64_t seq = 0;        // per partition, increasing, never reused; 0 is never a seq
  uint64_t first_lsn = 0;  // log: the lsn of its first record; checkpoint: redo starts here
  // Log: the log segment before this one and the byte offset where its
  // records end, as the writer knew when it opened this one (0, 0: none).
  uint64_t prev_seq = 0;
  uint64_t prev_end = 0;
  // Checkpoint: its id (the seq of its first part) and this part's index.
  uint64_t checkpoint = 0;
  uint32_t part = 0;
  Identity identity;
  friend bool operator==(const SegmentHeader&, const SegmentHeader&) = default;
};

// REQUIRES: out.size() >= kSegmentHeaderBytes (bytes beyond the header are
// zeroed); identity.cluster at most kMaxClusterNameBytes.
void EncodeSegmentHeader(const SegmentHeader& header, std::span<std::byte> out);
// NotFound: no segment magic (never written, or removed); Corruption: the
// magic is there but the checksum or a field does not hold (a torn write);
// InvalidArgument: another format version.
Result<SegmentHeader> DecodeSegmentHeader(std::span<const std::byte> in);
// The seq field of a header block, checked or not (for a header that does
// not decode: is it one whose records were written?).
uint64_t RawHeaderSeq(std::span<const std::byte> in);

// OK when `header` belongs to `expected`, else FailedPrecondition naming both.
Status CheckIdentity(const SegmentHeader& header, const Identity& expected,
                     std::string_view where);

// Record types below kFirstWalType are the user's (kv/redo.h); the log uses
// the ones from kFirstWalType up.
inline constexpr uint8_t kFirstWalType = 0xF0;
inline constexpr uint8_t kCheckpointEnd = 0xF0;    // body: u64 records, u64 bytes
// Log: the lsn field is the lsn durable when the record was written; no body;
// takes no lsn of its own.
inline constexpr uint8_t kDurableWatermark = 0xF1;

struct RecordView {
  uint64_t lsn = 0;
  uint8_t type = 0;
  std::span<const std::byte> body;  // views the parsed bytes
  size_t framed_bytes = 0;          // header + body + padding
};

// Bytes a record with a body of `body_bytes` takes.
constexpr size_t FramedBytes(size_t body_bytes) {
  return kRecordHeaderBytes + (body_bytes + kRecordAlignment - 1) / kRecordAlignment * kRecordAlignment;
}

// Appends one framed record whose body is the concatenation of `body`.
// Returns the bytes appended (FramedBytes of the body's size).
size_t FrameRecord(std::vector<std::byte>& out, uint64_t seq, uint64_t lsn, uint8_t type,
                   std::span<const std::span<const std::byte>> body);

// Moves a framed record (as FrameRecord made it) to segment `seq`: rewrites
// its seq and checksum.
void RestampRecord(std::span<std::byte> record, uint64_t seq);

// The record at the start of `bytes`, if it is a whole, intact record of
// segment `seq`. NotFound: the bytes do not start a record of this segment
// (zeros, another segment's leftovers, a torn header); Corruption: a record of
// this segment whose body or checksum does not hold.
Result<RecordView> ParseRecord(std::span<const std::byte> bytes, uint64_t seq);

}  // namespace rampart::wal
