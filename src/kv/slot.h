// Version slots: the byte layout of one immutable version in the arena.
//
// A slot is what a GET* client reads one-sidedly from a kv-node's registered
// arena, so this layout is a wire format: docs/kv_format.md documents it and
// says which parts must not change. Summary (little-endian, 8-byte aligned):
//
//   header  (32 B)  u64 ts | u32 gen | u32 key_len | u32 val_len | u32 meta_len
//                   | u32 flags | u32 crc32c
//   body            key bytes | value bytes | metadata bytes
//   padding         zeros up to the next multiple of 8
//   trailer (16 B)  u64 ts | u32 gen | u32 zero
//
// crc32c (Castagnoli, the standard CRC-32C) covers header bytes [0, 24) — ts,
// gen and the three lengths — followed by the body. It does not cover flags,
// which change after the slot is written (COMMITTED at commit, VALID at commit
// and when superseded).
//
// Metadata is the list of the other keys of the transaction's write set
// ("siblings"): u32 count, then per key u32 len + bytes.
//
// Thread-safety: WriteSlot and the flag setters are called by the one writer
// thread of a partition. Readers (the writer itself, or remote peers reading
// one-sidedly) may read a slot at any time; flags are only ever changed with a
// single 4-byte atomic store, so no reader sees a torn flags word. Everything
// else a concurrent reader may see torn; ValidateSlot detects it.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rampart::kv {

static_assert(std::endian::native == std::endian::little,
              "slots are stored little-endian and read in place");

// Field offsets inside a slot. Clients depend on these; do not change.
inline constexpr size_t kSlotTsOffset = 0;
inline constexpr size_t kSlotGenOffset = 8;
inline constexpr size_t kSlotKeyLenOffset = 12;
inline constexpr size_t kSlotValLenOffset = 16;
inline constexpr size_t kSlotMetaLenOffset = 20;
inline constexpr size_t kSlotFlagsOffset = 24;
inline constexpr size_t kSlotCrcOffset = 28;
inline constexpr size_t kSlotHeaderBytes = 32;
inline constexpr size_t kSlotTrailerBytes = 16;
inline constexpr size_t kSlotAlignment = 8;
// The crc covers header bytes [0, kSlotCrcCoveredHeader) and then the body.
inline constexpr size_t kSlotCrcCoveredHeader = kSlotFlagsOffset;

// An arena address (a GET reply's slot offset) is (extent index <<
// kArenaExtentShift) + the offset in that extent (docs/kv_format.md). Clients
// depend on this; do not change.
inline constexpr int kArenaExtentShift = 40;

// Flag bits. Clients depend on these; do not change.
inline constexpr uint32_t kSlotValid = 1u << 0;      // key's latest committed version
inline constexpr uint32_t kSlotTombstone = 1u << 1;  // a delete
inline constexpr uint32_t kSlotCommitted = 1u << 2;  // committed (maybe not latest)

// Bytes a slot with these lengths occupies: header + body rounded up to 8 +
// trailer. The smallest slot (empty key, value and metadata) is 48 bytes.
constexpr size_t SlotBytes(size_t key_len, size_t val_len, size_t meta_len) {
  size_t body = key_len + val_len + meta_len;
  body = (body + kSlotAlignment - 1) & ~(kSlotAlignment - 1);
  return kSlotHeaderBytes + body + kSlotTrailerBytes;
}

// Everything written into a slot. The views must stay valid during WriteSlot.
struct SlotContents {
  uint64_t ts = 0;
  uint32_t gen = 0;
  uint32_t flags = 0;
  std::string_view key;
  std::string_view value;
  std::string_view metadata;  // an EncodeSiblings() result
};

// Writes a complete slot at `at` (8-byte aligned, at least SlotBytes(...)
// writable bytes). Writes the body and trailer before the header's lengths and
// crc, then issues a release fence. The gen word is written last but one, the
// flags word last (with an atomic store).
// REQUIRES: key, value and metadata each shorter than 4 GiB.
void WriteSlot(std::byte* at, const SlotContents& contents);

// A parsed slot. The views point into the bytes that were parsed.
struct SlotView {
  uint64_t ts = 0;
  uint32_t gen = 0;
  uint32_t flags = 0;
  std::string_view key;
  std::string_view value;
  std::string_view metadata;
  size_t slot_bytes = 0;  // SlotBytes(key, value, metadata)

  bool valid() const { return (flags & kSlotValid) != 0; }
  bool tombstone() const { return (flags & kSlotTombstone) != 0; }
  bool committed() const { return (flags & kSlotCommitted) != 0; }
};

// Checks bytes read (typically one-sidedly, so possibly torn or stale) from a
// slot address that a client cached together with `expected_key` and
// `expected_gen`. Accepts only if, in this order:
//   - the bytes hold at least a header and a trailer    else kCorruption "short read"
//   - header gen == expected_gen                        else kNotFound   "stale gen"
//   - the header's lengths fit in the bytes             else kCorruption "lengths ..."
//   - trailer ts == header ts and trailer gen == header gen
//                                                       else kCorruption "torn read"
//   - the crc32c matches                                else kCorruption "bad crc"
//   - the key equals expected_key                       else kNotFound   "key mismatch"
//   - flags has VALID                                   else kNotFound   "superseded"
// Error messages start with the quoted phrase. On success the view points
// into `bytes`.
Result<SlotView> ValidateSlot(std::span<const std::byte> bytes,
                              std::string_view expected_key,
                              uint32_t expected_gen);

// Parses a slot this process wrote itself (no gen, crc or VALID checks).
// REQUIRES: `at` points to a completely written slot.
SlotView ReadLocalSlot(const std::byte* at);

// The crc32c a slot with these fields carries.
uint32_t SlotCrc(uint64_t ts, uint32_t gen, std::string_view key,
                 std::string_view value, std::string_view metadata);

// Flag and gen words, read and written with atomic 4-byte accesses so that a
// concurrent one-sided reader never sees a torn word.
// REQUIRES: `slot` is 8-byte aligned.
uint32_t LoadSlotFlags(const std::byte* slot);
void StoreSlotFlags(std::byte* slot, uint32_t flags);
uint32_t LoadSlotGen(const std::byte* slot);
void StoreSlotGen(std::byte* slot, uint32_t gen);

// Metadata: the sibling keys of a transaction's write set.
// Encoding: u32 count, then per key u32 len + bytes.
size_t EncodedSiblingsBytes(std::span<const std::string> siblings);
std::string EncodeSiblings(std::span<const std::string> siblings);
// kCorruption when `metadata` is not a well-formed encoding (including
// trailing bytes). An empty string decodes to an empty list.
Result<std::vector<std::string_view>> DecodeSiblings(std::string_view metadata);

}  // namespace rampart::kv
