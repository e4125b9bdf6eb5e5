// MemoryBudget: the `kv.maxmemory` limit of one kv-node, shared by the arenas
// of all its partitions.
//
//   auto budget = std::make_shared<MemoryBudget>(/*limit=*/8ull << 30);  // 0: no limit
//   if (!budget->TryReserve(bytes)) return OutOfMemory(...);
//   ...
//   budget->Release(bytes);
//
// What is counted is what the arenas hand out in pages (slabs and large
// slots), not what they have registered: registered memory is reserved
// address space that the kernel backs only where it is touched.
//
// Thread-safety: every method may be called from any thread (the partition
// threads of one node share one budget). Arenas reserve whole slabs, not
// single slots, so the counter is touched once per slab, not per version.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace rampart::kv {

// What the message of every allocation the budget refuses contains (status
// ResourceExhausted); the proxy answers it with Redis's -OOM error.
inline constexpr std::string_view kOutOfMemory = "OOM: used memory would exceed kv.maxmemory";

class MemoryBudget {
 public:
  // limit_bytes 0: unlimited (the counter still runs, for INFO memory).
  explicit MemoryBudget(uint64_t limit_bytes = 0) : limit_(limit_bytes) {}

  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Adds `bytes` to the used count if that stays within the limit, or
  // unconditionally when `force` (writes that free memory later, such as
  // deletes, are not refused — as Redis lets DEL run past maxmemory).
  bool TryReserve(uint64_t bytes, bool force = false) {
    uint64_t now = used_.load(std::memory_order_relaxed);
    do {
      if (!force && limit_ != 0 && now + bytes > limit_) return false;
    } while (!used_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
    return true;
  }
  // REQUIRES: bytes were reserved before.
  void Release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace rampart::kv
