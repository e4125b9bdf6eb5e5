// Test helper: page-aligned memory for an Arena or a PartitionExecutor, as a
// registered region would be, pre-filled with `fill` (garbage, to show the
// code does not rely on zeroed memory; or zeros). Test-only; header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

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

}  // namespace rampart::kv
