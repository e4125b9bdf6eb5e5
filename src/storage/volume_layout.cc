#include "storage/volume_layout.h"

#include <algorithm>
#include <cassert>

#include "common/size.h"

namespace rampart::storage {

Result<VolumeLayout> VolumeLayout::Create(const VolumeConfig& config) {
  const std::string name = StrCat("volume \"", config.name, "\"");
  if (config.nodes.size() < 3) {
    return InvalidArgument(name, " has ", config.nodes.size(),
                           " nodes; a volume needs at least 3");
  }
  const uint64_t cell = config.cell_bytes;
  if (cell < 4 * kKiB || cell > kVolumeMetadataBytes || (cell & (cell - 1)) != 0) {
    return InvalidArgument(name, ": cell_bytes ", cell, " is not a power of two in 4KiB..",
                           FormatSize(kVolumeMetadataBytes));
  }
  if (config.size == 0) return InvalidArgument(name, " has size 0");
  if (config.node_offset % cell != 0) {
    return InvalidArgument(name, ": node_offset ", config.node_offset,
                           " is not a multiple of cell_bytes ", cell);
  }
  VolumeLayout layout;
  layout.size_ = config.size;
  layout.cell_bytes_ = cell;
  layout.stripes_ = config.stripes();
  layout.area_offset_ = config.node_offset;
  layout.area_bytes_ = config.area_bytes();
  layout.node_ids_ = config.nodes;
  return layout;
}

uint32_t VolumeLayout::ParityNode(uint64_t stripe) const {
  assert(stripe < stripes_);
  return static_cast<uint32_t>(data_cells() - stripe % node_count());
}

CellLocation VolumeLayout::DataCell(uint64_t stripe, uint32_t cell) const {
  assert(cell < data_cells());
  return {(ParityNode(stripe) + 1 + cell) % node_count(), StripeOffset(stripe)};
}

std::optional<uint32_t> VolumeLayout::DataCellOnNode(uint64_t stripe, uint32_t node_index) const {
  assert(node_index < node_count());
  const uint32_t parity = ParityNode(stripe);
  if (node_index == parity) return std::nullopt;
  // The inverse of DataCell: node = (parity + 1 + cell) mod (k + 1).
  return (node_index + node_count() - parity - 1) % node_count();
}

Result<std::vector<Piece>> VolumeLayout::Map(uint64_t offset, uint64_t length) const {
  if (offset > size_ || length > size_ - offset) {
    return InvalidArgument(length, " bytes at volume offset ", offset,
                           " are not inside the volume's ", size_, " bytes");
  }
  std::vector<Piece> pieces;
  if (length == 0) return pieces;
  // First and last cell touched, counted in data cells from the volume start.
  const uint64_t first = offset / cell_bytes_;
  const uint64_t last = (offset + length - 1) / cell_bytes_;
  pieces.reserve(last - first + 1);
  uint64_t done = 0;
  for (uint64_t c = first; c <= last; ++c) {
    const uint64_t stripe = c / data_cells();
    const uint32_t cell = static_cast<uint32_t>(c % data_cells());
    const uint64_t in_cell = c == first ? offset % cell_bytes_ : 0;
    const uint64_t n = std::min(cell_bytes_ - in_cell, length - done);
    const CellLocation where = DataCell(stripe, cell);
    pieces.push_back({.stripe = stripe,
                      .cell = cell,
                      .node_index = where.node_index,
                      .node_offset = where.node_offset + in_cell,
                      .length = static_cast<uint32_t>(n),
                      .buffer_offset = done});
    done += n;
  }
  return pieces;
}

}  // namespace rampart::storage
