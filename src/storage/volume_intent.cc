#include "storage/volume_intent.h"

#include "common/crc32c.h"

#include <cstring>

namespace rampart::storage {
namespace {

template <typename T>
void Store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(v));  // little-endian hosts only (x86-64, aarch64)
}
template <typename T>
T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Header fields (docs/volume_format.md).
constexpr size_t kMagicAt = 0, kCrcAt = 8, kVersionAt = 12, kGenerationAt = 16, kBlockAt = 24,
                 kFingerprintAt = 28, kGroupStripesAt = 32, kFailedNodeAt = 40;
constexpr size_t kCrcFrom = 12;  // the checksum covers [12, kIntentBlockBytes)

}  // namespace

IntentGeometry IntentGeometryFor(const VolumeLayout& layout) {
  IntentGeometry g;
  while (g.group_stripes * layout.stripe_data_bytes() < (1u << 20)) g.group_stripes *= 2;
  for (;;) {
    g.groups = (layout.stripes() + g.group_stripes - 1) / g.group_stripes;
    if (g.groups <= kIntentMaxBlocks * kIntentGroupsPerBlock) break;
    g.group_stripes *= 2;
  }
  g.blocks = static_cast<uint32_t>((g.groups + kIntentGroupsPerBlock - 1) / kIntentGroupsPerBlock);
  // The persisted inputs (docs/volume_format.md), not size: size may grow.
  std::vector<std::byte> in(20 + 4 * layout.node_count());
  Store<uint64_t>(in.data(), layout.cell_bytes());
  Store<uint64_t>(in.data() + 8, layout.area_offset());
  Store<uint32_t>(in.data() + 16, layout.node_count());
  for (uint32_t i = 0; i < layout.node_count(); ++i) {
    Store<uint32_t>(in.data() + 20 + 4 * i, layout.node_id(i));
  }
  g.fingerprint = Crc32c(in);
  return g;
}

Status EncodeIntentRecord(const IntentRecord& record, std::span<std::byte> out) {
  if (out.size() < kIntentBlockBytes) {
    return InvalidArgument("an intent record needs ", kIntentBlockBytes, " bytes, got ", out.size());
  }
  std::byte* b = out.data();
  std::memset(b, 0, kIntentBlockBytes);
  const uint64_t first = uint64_t{record.block} * kIntentGroupsPerBlock;
  for (uint64_t group : record.dirty) {
    if (group < first || group >= first + kIntentGroupsPerBlock) {
      return InvalidArgument("group ", group, " is not in intent record ", record.block);
    }
    const uint64_t bit = group - first;
    b[kIntentHeaderBytes + bit / 8] |= std::byte(1u << (bit % 8));
  }
  Store<uint64_t>(b + kMagicAt, kIntentMagic);
  Store<uint32_t>(b + kVersionAt, kIntentFormatVersion);
  Store<uint64_t>(b + kGenerationAt, record.generation);
  Store<uint32_t>(b + kBlockAt, record.block);
  Store<uint32_t>(b + kFingerprintAt, record.fingerprint);
  Store<uint64_t>(b + kGroupStripesAt, record.group_stripes);
  Store<uint32_t>(b + kFailedNodeAt, record.failed_node);
  Store<uint32_t>(b + kCrcAt, Crc32c({b + kCrcFrom, kIntentBlockBytes - kCrcFrom}));
  return Status::Ok();
}

Result<IntentRecord> DecodeIntentRecord(std::span<const std::byte> in) {
  if (in.size() < kIntentBlockBytes || Load<uint64_t>(in.data() + kMagicAt) != kIntentMagic) {
    return NotFound("no intent record");
  }
  const std::byte* b = in.data();
  const uint32_t crc = Crc32c({b + kCrcFrom, kIntentBlockBytes - kCrcFrom});
  if (crc != Load<uint32_t>(b + kCrcAt)) return Corruption("intent record: checksum mismatch");
  if (Load<uint32_t>(b + kVersionAt) != kIntentFormatVersion) {
    return Corruption("intent record: unknown version ", Load<uint32_t>(b + kVersionAt));
  }
  IntentRecord r;
  r.generation = Load<uint64_t>(b + kGenerationAt);
  r.block = Load<uint32_t>(b + kBlockAt);
  r.fingerprint = Load<uint32_t>(b + kFingerprintAt);
  r.group_stripes = Load<uint64_t>(b + kGroupStripesAt);
  r.failed_node = Load<uint32_t>(b + kFailedNodeAt);
  if (r.block >= kIntentMaxBlocks || r.group_stripes == 0) {
    return Corruption("intent record: block ", r.block, ", group of ", r.group_stripes, " stripes");
  }
  const uint64_t first = uint64_t{r.block} * kIntentGroupsPerBlock;
  for (size_t i = 0; i < kIntentBlockBytes - kIntentHeaderBytes; ++i) {
    const auto byte = static_cast<unsigned>(b[kIntentHeaderBytes + i]);
    if (byte == 0) continue;
    for (unsigned bit = 0; bit < 8; ++bit) {
      if (byte & (1u << bit)) r.dirty.push_back(first + i * 8 + bit);
    }
  }
  return r;
}

namespace {
// Label fields (docs/volume_format.md, "Volume label").
constexpr size_t kLabelFingerprintAt = 16, kLabelNodeIndexAt = 20, kLabelNodeIdAt = 24,
                 kLabelNodeCountAt = 28;
}  // namespace

Status EncodeVolumeLabel(const VolumeLabel& label, std::span<std::byte> out) {
  if (out.size() < kIntentBlockBytes) {
    return InvalidArgument("a volume label needs ", kIntentBlockBytes, " bytes, got ", out.size());
  }
  std::byte* b = out.data();
  std::memset(b, 0, kIntentBlockBytes);
  Store<uint64_t>(b + kMagicAt, kVolumeLabelMagic);
  Store<uint32_t>(b + kVersionAt, kVolumeLabelVersion);
  Store<uint32_t>(b + kLabelFingerprintAt, label.fingerprint);
  Store<uint32_t>(b + kLabelNodeIndexAt, label.node_index);
  Store<uint32_t>(b + kLabelNodeIdAt, label.node_id);
  Store<uint32_t>(b + kLabelNodeCountAt, label.node_count);
  Store<uint32_t>(b + kCrcAt, Crc32c({b + kCrcFrom, kIntentBlockBytes - kCrcFrom}));
  return Status::Ok();
}

Result<VolumeLabel> DecodeVolumeLabel(std::span<const std::byte> in) {
  if (in.size() < kIntentBlockBytes || Load<uint64_t>(in.data() + kMagicAt) != kVolumeLabelMagic) {
    return NotFound("no volume label");
  }
  const std::byte* b = in.data();
  if (Crc32c({b + kCrcFrom, kIntentBlockBytes - kCrcFrom}) != Load<uint32_t>(b + kCrcAt)) {
    return Corruption("volume label: checksum mismatch");
  }
  if (Load<uint32_t>(b + kVersionAt) != kVolumeLabelVersion) {
    return Corruption("volume label: unknown version ", Load<uint32_t>(b + kVersionAt));
  }
  VolumeLabel l;
  l.fingerprint = Load<uint32_t>(b + kLabelFingerprintAt);
  l.node_index = Load<uint32_t>(b + kLabelNodeIndexAt);
  l.node_id = Load<uint32_t>(b + kLabelNodeIdAt);
  l.node_count = Load<uint32_t>(b + kLabelNodeCountAt);
  return l;
}

}  // namespace rampart::storage
