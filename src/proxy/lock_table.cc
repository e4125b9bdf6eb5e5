#include "proxy/lock_table.h"

#include <xxhash.h>

#include <algorithm>
#include <cassert>

namespace rampart::proxy {

LockTable::LockTable(size_t slots)
    : slots_(new std::atomic<uint8_t>[slots]), mask_(slots - 1) {
  assert(slots > 0 && (slots & (slots - 1)) == 0);
  for (size_t i = 0; i < slots; ++i) slots_[i].store(0, std::memory_order_relaxed);
}

std::vector<uint32_t> LockTable::SlotsOf(std::span<const std::string_view> keys) const {
  std::vector<uint32_t> out;
  out.reserve(keys.size());
  for (std::string_view k : keys) out.push_back(static_cast<uint32_t>(XXH3_64bits(k.data(), k.size()) & mask_));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool LockTable::TryLock(std::span<const uint32_t> slots) {
  for (size_t i = 0; i < slots.size(); ++i) {
    uint8_t expected = 0;
    if (!slots_[slots[i]].compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
      Unlock(slots.first(i));
      return false;
    }
  }
  return true;
}

void LockTable::Unlock(std::span<const uint32_t> slots) {
  for (uint32_t s : slots) slots_[s].store(0, std::memory_order_release);
}

size_t LockTable::HeldForTesting() const {
  size_t n = 0;
  for (size_t i = 0; i <= mask_; ++i) n += slots_[i].load(std::memory_order_relaxed);
  return n;
}

}  // namespace rampart::proxy
