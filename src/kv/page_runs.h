// PageRuns: the free page runs of an Arena — best-fit allocation of runs of
// whole pages, with neighbours merged when a run is given back. Private to
// the arena (kv/arena.cc); here so that it is tested on its own.
//
//   PageRuns runs;
//   runs.Add(extent_address, extent_bytes);   // a new extent: one free run
//   std::optional<uint64_t> at = runs.Take(3 * kPageBytes);
//   ...
//   runs.Give(*at, 3 * kPageBytes);
//
// Addresses are arena addresses (kv/arena.h): runs of different extents are
// never adjacent, because extents are 2^40 bytes apart, so they never merge.
// Take picks the smallest run that fits (the lowest address among equals) and
// cuts the request from its front, which keeps the used part of each extent
// dense at its low addresses.
//
// Thread-safety: none; it belongs to one Arena.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace rampart::kv::internal {

class PageRuns {
 public:
  // REQUIRES: [address, address + bytes) is not free already and touches no
  // free run of another extent; bytes > 0.
  void Add(uint64_t address, uint64_t bytes) { Give(address, bytes); }

  // The start of `bytes` free bytes taken from the best-fitting run, or
  // nullopt when no run is that long.
  std::optional<uint64_t> Take(uint64_t bytes);

  // Returns a run taken before. Merged with free neighbours.
  void Give(uint64_t address, uint64_t bytes);

  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t largest_run() const { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }
  size_t runs() const { return by_address_.size(); }

 private:
  void Insert(uint64_t address, uint64_t bytes);
  void Erase(std::map<uint64_t, uint64_t>::iterator it);

  std::map<uint64_t, uint64_t> by_address_;          // start -> bytes
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (bytes, start)
  uint64_t free_bytes_ = 0;
};

}  // namespace rampart::kv::internal
