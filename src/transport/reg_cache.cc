#include "transport/reg_cache.h"

#include <unistd.h>

namespace rampart::transport {
namespace {

uintptr_t PageSize() {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// How many entries starting at or before an address a lookup examines. Entries
// overlap only when registrations of neighbouring buffers interleave; a short
// scan finds a cover in practice and a miss just registers anew.
constexpr int kLookupScan = 8;

}  // namespace

RegistrationCache::RegistrationCache(Registrar registrar, size_t capacity_bytes)
    : registrar_(std::move(registrar)), capacity_bytes_(capacity_bytes) {}

RegistrationCache::~RegistrationCache() {
  for (auto& [start, e] : by_start_) {
    registrar_.dereg(e->handle);
    delete e;
  }
}

Result<RegistrationCache::Lease> RegistrationCache::Acquire(std::byte* addr, size_t len) {
  if (len == 0) return InvalidArgument("registration of an empty buffer");
  if (has_invalid_.load(std::memory_order_acquire)) ApplyInvalidations();
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t end = start + len;

  auto it = by_start_.upper_bound(start);
  for (int i = 0; i < kLookupScan && it != by_start_.begin(); ++i) {
    --it;
    Entry* e = it->second;
    if (e->end >= end) {
      if (e->users++ == 0) {
        unused_.erase(e->lru_pos);
        unused_bytes_ -= e->end - e->start;
      }
      ++stats_.hits;
      return Lease{e, e->handle};
    }
  }

  ++stats_.misses;
  const uintptr_t page = PageSize();
  uintptr_t reg_start = start & ~(page - 1);
  uintptr_t reg_end = (end + page - 1) & ~(page - 1);
  auto handle = registrar_.reg(reinterpret_cast<std::byte*>(reg_start), reg_end - reg_start);
  if (!handle.ok()) return handle.status();
  auto* e = new Entry{reg_start, reg_end, *handle, 1, false, {}};
  by_start_.emplace(reg_start, e);
  return Lease{e, e->handle};
}

void RegistrationCache::Release(Lease lease) {
  Entry* e = lease.entry;
  if (e == nullptr) return;
  if (--e->users > 0) return;
  if (e->retired) {
    Destroy(e);
    return;
  }
  unused_.push_front(e);
  e->lru_pos = unused_.begin();
  unused_bytes_ += e->end - e->start;
  EvictOverCapacity();
}

void RegistrationCache::EvictOverCapacity() {
  while (unused_bytes_ > capacity_bytes_ && !unused_.empty()) {
    Entry* victim = unused_.back();
    ++stats_.evictions;
    Retire(victim);
  }
}

// Makes `e` unfindable; destroys it now if unused, else at its last Release.
void RegistrationCache::Retire(Entry* e) {
  if (e->retired) return;
  e->retired = true;
  auto [lo, hi] = by_start_.equal_range(e->start);
  for (auto it = lo; it != hi; ++it) {
    if (it->second == e) {
      by_start_.erase(it);
      break;
    }
  }
  if (e->users == 0) {
    unused_.erase(e->lru_pos);
    unused_bytes_ -= e->end - e->start;
    Destroy(e);
  }
}

void RegistrationCache::Destroy(Entry* e) {
  registrar_.dereg(e->handle);
  delete e;
}

void RegistrationCache::Invalidate(const void* addr, size_t len) {
  uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard<std::mutex> lock(invalid_mu_);
  if (invalid_count_ < invalid_.size()) {
    invalid_[invalid_count_++] = {start, start + len};
  } else {
    invalid_overflow_ = true;
  }
  has_invalid_.store(true, std::memory_order_release);
}

void RegistrationCache::ApplyInvalidations() {
  std::array<std::pair<uintptr_t, uintptr_t>, kMaxPendingInvalidations> ranges;
  size_t count;
  bool overflow;
  {
    std::lock_guard<std::mutex> lock(invalid_mu_);
    ranges = invalid_;
    count = invalid_count_;
    overflow = invalid_overflow_;
    invalid_count_ = 0;
    invalid_overflow_ = false;
    has_invalid_.store(false, std::memory_order_release);
  }
  if (overflow) {  // lost track of what was unmapped: trust nothing
    ranges[0] = {0, UINTPTR_MAX};
    count = 1;
  }
  std::vector<Entry*> hit;
  for (size_t i = 0; i < count; ++i) {
    auto [start, end] = ranges[i];
    for (auto& [s, e] : by_start_) {
      if (s >= end) break;
      if (e->end > start) hit.push_back(e);
    }
  }
  for (Entry* e : hit) {
    if (e->retired) continue;
    ++stats_.invalidations;
    Retire(e);
  }
}

}  // namespace rampart::transport
