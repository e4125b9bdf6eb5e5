// The write-intent log's on-disk record (docs/volume_format.md,
// "Write-intent log"): pure encode/decode and the geometry that maps stripes
// to groups and groups to records. Persisted: do not change.
//
// The metadata area of each node (VolumeLayout::metadata_offset(), 1 MiB)
// holds up to kIntentMaxBlocks records of kIntentBlockBytes, record b at byte
// b * kIntentBlockBytes. Record b is a bitmap of the stripe groups
// [b * kIntentGroupsPerBlock, (b + 1) * kIntentGroupsPerBlock): a set bit
// means "writes to this group's stripes may have been in progress: resync its
// parity". A group is group_stripes consecutive stripes.
//
// Every write of a record carries a generation that grows across the whole
// volume's life: its high 32 bits are the epoch, one more than the highest
// epoch Open found, its low 32 bits count the record writes of that session.
// Of the copies of one record on the nodes, the valid one with the highest
// generation is the truth, older ones are stale. Each record also names the
// node the volume considers failed (stale until rebuilt), if any: the record
// with the highest generation of all says which.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "storage/volume_layout.h"

namespace rampart::storage {

inline constexpr size_t kIntentBlockBytes = 4096;
inline constexpr size_t kIntentHeaderBytes = 64;
inline constexpr uint64_t kIntentGroupsPerBlock = (kIntentBlockBytes - kIntentHeaderBytes) * 8;
// 1 MiB / 4 KiB = 256 blocks; the last one (kVolumeLabelBlock) holds the
// volume label, not an intent record.
inline constexpr uint32_t kIntentMaxBlocks = 255;
inline constexpr uint32_t kIntentFormatVersion = 1;
// "RPWILOG1" as a little-endian u64.
inline constexpr uint64_t kIntentMagic = 0x31474f4c49575052ull;
// IntentRecord::failed_node when no node is failed.
inline constexpr uint32_t kNoFailedNode = 0xffffffffu;

// How a volume's stripes map onto intent records.
struct IntentGeometry {
  uint64_t group_stripes = 1;  // G: a power of two
  uint64_t groups = 0;         // ceil(stripes / G)
  uint32_t blocks = 0;         // records in use: ceil(groups / kIntentGroupsPerBlock)
  uint32_t fingerprint = 0;    // of the layout's persisted inputs, not its size

  uint64_t GroupOf(uint64_t stripe) const { return stripe / group_stripes; }
  uint32_t BlockOf(uint64_t group) const { return static_cast<uint32_t>(group / kIntentGroupsPerBlock); }
};

// G is the smallest power of two with G stripes holding at least 1 MiB of
// data, doubled until the groups fit kIntentMaxBlocks records.
IntentGeometry IntentGeometryFor(const VolumeLayout& layout);

// One decoded record.
struct IntentRecord {
  uint64_t generation = 0;
  uint32_t block = 0;
  uint32_t fingerprint = 0;
  uint64_t group_stripes = 0;
  uint32_t failed_node = kNoFailedNode;  // a node index, or none
  std::vector<uint64_t> dirty;  // absolute group numbers, ascending

  bool operator==(const IntentRecord&) const = default;
};

// Encodes `record` into exactly kIntentBlockBytes of `out`.
// InvalidArgument when out is smaller or a dirty group lies outside the
// record's block.
Status EncodeIntentRecord(const IntentRecord& record, std::span<std::byte> out);

// Decodes a record. NotFound when the block was never written (no magic: an
// all-zero area is an empty log); Corruption when the magic is there but the
// checksum, version or size does not hold (a torn write).
Result<IntentRecord> DecodeIntentRecord(std::span<const std::byte> in);

// The volume label (docs/volume_format.md, "Volume label"): block
// kVolumeLabelBlock of every node's metadata area names the volume layout
// (fingerprint) and the node's index in it. Open refuses to read a node
// whose label is missing or another's (a replaced or foreign device): it is
// treated as failed until rebuilt; Rebuild writes the label last.
inline constexpr uint32_t kVolumeLabelBlock = 255;
inline constexpr uint32_t kVolumeLabelVersion = 1;
// "RPVLABL1" as a little-endian u64.
inline constexpr uint64_t kVolumeLabelMagic = 0x314c42414c565052ull;

struct VolumeLabel {
  uint32_t fingerprint = 0;  // IntentGeometry::fingerprint
  uint32_t node_index = 0;   // the node's index in the volume's node list
  uint32_t node_id = 0;      // its storage node id (informational)
  uint32_t node_count = 0;   // N

  bool operator==(const VolumeLabel&) const = default;
};

// Encodes `label` into exactly kIntentBlockBytes of `out` (InvalidArgument
// when smaller).
Status EncodeVolumeLabel(const VolumeLabel& label, std::span<std::byte> out);
// NotFound when the block has no label magic; Corruption when the checksum or
// version does not hold (a torn write: treat as no label).
Result<VolumeLabel> DecodeVolumeLabel(std::span<const std::byte> in);

}  // namespace rampart::storage
