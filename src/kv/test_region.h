// Test helpers: page-aligned memory for an Arena or a PartitionExecutor, as a
// registered region would be, pre-filled with `fill` (garbage, to show the
// code does not rely on zeroed memory; or zeros), and an ExtentSource that
// hands out such regions. Test-only; header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "kv/arena.h"

namespace rampart::kv {

struct TestRegion {
  explicit TestRegion(size_t n, uint8_t fill)
      : size(n), mem(static_cast<std::byte*>(std::aligned_alloc(4096, n)), &std::free) {
    std::memset(mem.get(), fill, n);
  }
  std::span<std::byte> span() { return {mem.get(), size}; }
  size_t size;
  std::unique_ptr<std::byte, decltype(&std::free)> mem;
};

// Extents from the heap; `limit_extents` of them at most (then an error, as a
// failed registration would be).
class TestExtents : public ExtentSource {
 public:
  explicit TestExtents(uint8_t fill = 0, size_t limit_extents = 64)
      : fill_(fill), limit_(limit_extents) {}
  Result<std::span<std::byte>> NewExtent(uint64_t bytes) override {
    if (regions.size() >= limit_) return ResourceExhausted("test source: no more extents");
    regions.push_back(std::make_unique<TestRegion>(bytes, fill_));
    return regions.back()->span();
  }
  std::vector<std::unique_ptr<TestRegion>> regions;

 private:
  uint8_t fill_;
  size_t limit_;
};

}  // namespace rampart::kv
