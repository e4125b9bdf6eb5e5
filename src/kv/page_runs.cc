#include "kv/page_runs.h"

#include <cassert>
#include <iterator>

namespace rampart::kv::internal {

void PageRuns::Insert(uint64_t address, uint64_t bytes) {
  by_address_.emplace(address, bytes);
  by_size_.emplace(bytes, address);
  free_bytes_ += bytes;
}

void PageRuns::Erase(std::map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  free_bytes_ -= it->second;
  by_address_.erase(it);
}

std::optional<uint64_t> PageRuns::Take(uint64_t bytes) {
  assert(bytes > 0);
  auto fit = by_size_.lower_bound({bytes, 0});
  if (fit == by_size_.end()) return std::nullopt;
  const auto [run_bytes, start] = *fit;
  Erase(by_address_.find(start));
  if (run_bytes > bytes) Insert(start + bytes, run_bytes - bytes);
  return start;
}

void PageRuns::Give(uint64_t address, uint64_t bytes) {
  assert(bytes > 0);
  uint64_t start = address;
  uint64_t length = bytes;
  auto next = by_address_.lower_bound(address);
  assert(next == by_address_.end() || next->first >= address + bytes);  // not free twice
  if (next != by_address_.begin()) {
    auto prev = std::prev(next);
    assert(prev->first + prev->second <= address);
    if (prev->first + prev->second == address) {
      start = prev->first;
      length += prev->second;
      Erase(prev);
    }
  }
  if (next != by_address_.end() && next->first == address + bytes) {
    length += next->second;
    Erase(next);
  }
  Insert(start, length);
}

}  // namespace rampart::kv::internal
