// VolumeLayout: where every byte of an erasure-coded volume lives on its
// storage nodes (docs/design.md §8, seed 002), computed from the volume's [[volumes]]
// entry alone, so every process that reads the cluster file agrees on it
// without a metadata service. The format is written up, and marked "do not
// change", in docs/volume_format.md.
//
//   Result<VolumeLayout> layout = VolumeLayout::Create(*config.FindVolume("data"));
//   for (const Piece& p : layout->Map(offset, length)) {
//     // read p.length bytes at p.node_offset of storage node
//     // layout->node_id(p.node_index) into buffer + p.buffer_offset
//   }
//
// The shape. A volume of k + 1 nodes (k = nodes - 1 >= 2) is a sequence of
// stripes; a stripe is one cell of cell_bytes on each node: k data cells and
// one XOR parity cell. Stripe s's cells all sit at the same node offset,
// data_offset() + s * cell_bytes, so a node holds exactly one cell of every
// stripe. The parity rotates left-symmetrically, like md RAID-5: stripe s
// keeps its parity on node index k - (s mod (k + 1)) and its data cells
// 0..k-1 on the node indexes that follow it cyclically. Over any k + 1
// consecutive stripes every node holds the parity once.
//
// Volume byte v lies in stripe v / (k * cell_bytes), data cell
// (v mod (k * cell_bytes)) / cell_bytes, at v mod cell_bytes in that cell.
// The last stripe may be partly past size(): those bytes are zero and count
// in its parity.
//
// Node indexes are positions in VolumeConfig::nodes (node_id() maps them to
// storage node ids); reordering that list moves every cell.
//
// Thread-safety: an immutable value; share and copy freely.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace rampart::storage {

// A run of volume bytes inside one data cell.
struct Piece {
  uint64_t stripe = 0;
  uint32_t cell = 0;            // data cell of the stripe, 0..k-1
  uint32_t node_index = 0;      // the node holding it: index into VolumeConfig::nodes
  uint64_t node_offset = 0;     // byte offset on that node's device
  uint32_t length = 0;          // bytes, 1..cell_bytes; never crosses a cell
  uint64_t buffer_offset = 0;   // where the run starts in the caller's buffer

  bool operator==(const Piece&) const = default;
};

// A whole cell on one node.
struct CellLocation {
  uint32_t node_index = 0;
  uint64_t node_offset = 0;

  bool operator==(const CellLocation&) const = default;
};

class VolumeLayout {
 public:
  // InvalidArgument unless: at least 3 nodes, cell_bytes a power of two in
  // 4KiB..1MiB, size > 0, node_offset a multiple of cell_bytes. (A parsed
  // ClusterConfig has checked that and more: node ids, fit, overlaps.)
  static Result<VolumeLayout> Create(const VolumeConfig& config);

  // Bytes of data: the volume's addressable range is [0, size()).
  uint64_t size() const { return size_; }
  uint64_t cell_bytes() const { return cell_bytes_; }
  // k: data cells per stripe.
  uint32_t data_cells() const { return static_cast<uint32_t>(node_ids_.size() - 1); }
  // k + 1: every node holds one cell of every stripe.
  uint32_t node_count() const { return static_cast<uint32_t>(node_ids_.size()); }
  // Data bytes per stripe: k * cell_bytes.
  uint64_t stripe_data_bytes() const { return data_cells() * cell_bytes_; }
  // size() rounded up to whole stripes.
  uint64_t stripes() const { return stripes_; }
  // The storage node id at `node_index`. REQUIRES: node_index < node_count().
  uint32_t node_id(uint32_t node_index) const { return node_ids_[node_index]; }

  // The volume's area on each node: [area_offset(), area_offset() +
  // area_bytes()). It starts with the metadata area, reserved for the
  // write-intent log: [metadata_offset(), + metadata_bytes()). The cells of
  // stripe 0 follow at data_offset().
  uint64_t area_offset() const { return area_offset_; }
  uint64_t area_bytes() const { return area_bytes_; }
  uint64_t metadata_offset() const { return area_offset_; }
  uint64_t metadata_bytes() const { return kVolumeMetadataBytes; }
  uint64_t data_offset() const { return area_offset_ + kVolumeMetadataBytes; }

  // The node offset of stripe `stripe`'s cells, the same on every node.
  // REQUIRES: stripe < stripes().
  uint64_t StripeOffset(uint64_t stripe) const { return data_offset() + stripe * cell_bytes_; }
  // The node holding stripe `stripe`'s parity. REQUIRES: stripe < stripes().
  uint32_t ParityNode(uint64_t stripe) const;
  CellLocation Parity(uint64_t stripe) const { return {ParityNode(stripe), StripeOffset(stripe)}; }
  // Data cell `cell` of stripe `stripe`. REQUIRES: stripe < stripes(), cell < k.
  CellLocation DataCell(uint64_t stripe, uint32_t cell) const;
  // Which data cell of stripe `stripe` node `node_index` holds; nullopt when
  // it holds the parity. REQUIRES: stripe < stripes(), node_index < node_count().
  std::optional<uint32_t> DataCellOnNode(uint64_t stripe, uint32_t node_index) const;

  // The pieces of the volume range [offset, offset + length), in volume
  // order: one per data cell touched, buffer_offset counting from `offset`.
  // Empty for length 0. InvalidArgument when the range is not inside
  // [0, size()). One Piece per cell touched: callers bound `length` (as
  // storage.max_io_bytes bounds a request).
  Result<std::vector<Piece>> Map(uint64_t offset, uint64_t length) const;

 private:
  VolumeLayout() = default;

  uint64_t size_ = 0;
  uint64_t cell_bytes_ = 0;
  uint64_t stripes_ = 0;
  uint64_t area_offset_ = 0;
  uint64_t area_bytes_ = 0;
  std::vector<uint32_t> node_ids_;
};

}  // namespace rampart::storage
