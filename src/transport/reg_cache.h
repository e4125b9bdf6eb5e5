// Registration (pin-down) cache, seed 004 §5: registering a buffer that is
// already registered costs a lookup, and registrations outlive the regions
// that made them until memory pressure or an unmap retires them.
//
// Registrations cover whole pages, so neighbouring buffers in the same pages
// share one. Entries in use are never dropped; unused ones are kept up to
// `capacity_bytes` (least recently used first out). When memory is unmapped,
// Invalidate() (called from the memory hook, any thread) retires every entry
// overlapping it: the next lookup will not find it, and it is deregistered as
// soon as nobody uses it.
//
// Thread-safety: Acquire/Release/stats on the owner thread only; Invalidate
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <array>
#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <vector>

#include "common/status.h"

namespace rampart::transport {

class RegistrationCache {
 public:
  using Handle = void*;
  struct Registrar {
    // Registers [addr, addr + len); called with page-aligned ranges.
    std::function<Result<Handle>(std::byte* addr, size_t len)> reg;
    std::function<void(Handle)> dereg;
  };
  struct Entry;
  // A registration in use. Copyable handle to a cache entry; Release() it.
  struct Lease {
    Entry* entry = nullptr;
    Handle handle = nullptr;
  };
  struct Stats {
    uint64_t hits = 0, misses = 0, evictions = 0, invalidations = 0;
  };

  RegistrationCache(Registrar registrar, size_t capacity_bytes);
  ~RegistrationCache();  // deregisters everything; REQUIRES: no lease outstanding
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // Finds or makes a registration covering [addr, addr + len).
  // REQUIRES: len > 0.
  Result<Lease> Acquire(std::byte* addr, size_t len);
  void Release(Lease lease);

  // Memory [addr, addr + len) is going away. Safe from any thread.
  void Invalidate(const void* addr, size_t len);

  Stats stats() const { return stats_; }

  struct Entry {
    uintptr_t start, end;
    Handle handle;
    int users = 0;
    bool retired = false;                 // not findable; dereg at last release
    std::list<Entry*>::iterator lru_pos;  // valid when users == 0 and !retired
  };

 private:
  void ApplyInvalidations();
  void Retire(Entry* e);
  void Destroy(Entry* e);
  void EvictOverCapacity();

  Registrar registrar_;
  size_t capacity_bytes_;
  std::multimap<uintptr_t, Entry*> by_start_;  // findable entries
  std::list<Entry*> unused_;                   // LRU: front = most recent
  size_t unused_bytes_ = 0;
  Stats stats_;

  // Invalidate runs inside munmap hooks, where allocating could recurse into
  // the hook: a fixed array, and on overflow "retire everything".
  static constexpr size_t kMaxPendingInvalidations = 256;
  std::mutex invalid_mu_;
  std::array<std::pair<uintptr_t, uintptr_t>, kMaxPendingInvalidations> invalid_;  // guarded
  size_t invalid_count_ = 0;                                                       // guarded
  bool invalid_overflow_ = false;                                                  // guarded
  std::atomic<bool> has_invalid_{false};
};

}  // namespace rampart::transport
