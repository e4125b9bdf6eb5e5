// XOR parity of a stripe's cells (docs/design.md §8, seed 002), with ISA-L's
// xor_gen and xor_check (<isa-l/raid.h>, Debian libisal-dev).
//
//   const ConstBytes data[] = {cell0, cell1, cell2};
//   Status st = ComputeParity(data, parity);                  // full-stripe write
//   const ConstBytes rmw[] = {old_parity, old_cell, new_cell};
//   st = ComputeParity(rmw, new_parity);                      // read-modify-write
//   st = Reconstruct(cells, lost);                            // degraded read
//   st = CheckParity(data, parity);                           // verify: OK or Corruption
//
// XOR is its own inverse: the parity of k cells is their XOR, a lost cell is
// the XOR of the k others (the surviving data cells and the parity), and a
// partial-stripe write changes the parity by old cell XOR new cell.
//
// Speed. ISA-L does the bulk when every buffer of a call has the same address
// modulo 32 (best: all 64-byte aligned, as BufferPool and Fabric::Allocate
// hand them out, and lengths a multiple of 64); the bytes before the first
// 32-byte boundary and after the last multiple of 64 go through a plain loop,
// and so do buffers whose alignments differ. Results are the same either way.
//
// Buffers: the caller owns them; the functions only read `sources` and write
// `parity` / the missing cell before they return.
//
// Thread-safety: pure functions; call from any thread on disjoint outputs.
#pragma once

#include <cstddef>
#include <span>

#include "common/status.h"

namespace rampart::storage {

using ConstBytes = std::span<const std::byte>;
using MutableBytes = std::span<std::byte>;

// parity = sources[0] XOR sources[1] XOR ... One source: a copy.
// InvalidArgument when `sources` is empty or a length differs from
// parity.size(). REQUIRES: `parity` overlaps no source.
Status ComputeParity(std::span<const ConstBytes> sources, MutableBytes parity);

// cells[missing] = the XOR of all other cells: rebuilds a lost data cell from
// the rest of its stripe (the data cells and the parity, in any order) or
// recomputes the parity. InvalidArgument when there are fewer than two cells,
// `missing` is out of range or the lengths differ. REQUIRES: the cells do not
// overlap.
Status Reconstruct(std::span<const MutableBytes> cells, size_t missing);

// OK when parity == XOR of the sources; Corruption naming the first byte
// that differs otherwise; InvalidArgument as for ComputeParity.
Status CheckParity(std::span<const ConstBytes> sources, ConstBytes parity);

// ComputeParity without ISA-L: a plain loop over 8-byte words. For
// comparison (`rampart bench xor`); same contract.
Status ComputeParityPlain(std::span<const ConstBytes> sources, MutableBytes parity);

}  // namespace rampart::storage
