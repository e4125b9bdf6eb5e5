#include "proxy/lock_table.h"

#include <xxhash.h>

#include <algorithm>
#include <cassert>

namespace rampart::proxy {

LockTable::LockTable(size_t slots)
    : slots_(new std::atomic<uint8_t>[slots]), epochs_(new std::atomic<uint32_t>[slots]), mask_(slots - 1) {
  assert(slots > 0 && (slots & (slots - 1)) == 0);
  for (size_t i = 0; i < slots; ++i) {
    slots_[i].store(0, std::memory_order_relaxed);
    epochs_[i].store(0, std::memory_order_relaxed);
  }
}

void LockTable::BumpEpochs(std::span<const uint32_t> slots) {
  for (uint32_t s : slots) epochs_[s].fetch_add(1, std::memory_order_release);
}

std::vector<uint32_t> LockTable::SlotsOf(std::span<const std::string_view> keys) const {
  std::vector<uint32_t> out;
  out.reserve(keys.size());
  for (std::string_view k : keys) out.push_back(static_cast<uint32_t>(XXH3_64bits(k.data(), k.size()) & mask_));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {
// A slot's byte: 0 free, kExclusive held exclusively, else the number of
// shared holders.
constexpr uint8_t kExclusive = 0xFF;
}  // namespace

bool LockTable::TryLock(std::span<const uint32_t> slots, Mode mode) {
  for (size_t i = 0; i < slots.size(); ++i) {
    std::atomic<uint8_t>& slot = slots_[slots[i]];
    bool taken = false;
    if (mode == Mode::kExclusive) {
      uint8_t expected = 0;
      taken = slot.compare_exchange_strong(expected, kExclusive, std::memory_order_acquire);
    } else {
      uint8_t seen = slot.load(std::memory_order_relaxed);
      while (seen < kExclusive - 1 &&
             !slot.compare_exchange_weak(seen, static_cast<uint8_t>(seen + 1),
                                         std::memory_order_acquire, std::memory_order_relaxed)) {
      }
      taken = seen < kExclusive - 1;
    }
    if (!taken) {
      Unlock(slots.first(i), mode);
      return false;
    }
  }
  return true;
}

void LockTable::Unlock(std::span<const uint32_t> slots, Mode mode) {
  for (uint32_t s : slots) {
    if (mode == Mode::kExclusive) {
      slots_[s].store(0, std::memory_order_release);
    } else {
      slots_[s].fetch_sub(1, std::memory_order_release);
    }
  }
}

size_t LockTable::HeldForTesting() const {
  size_t n = 0;
  for (size_t i = 0; i <= mask_; ++i) n += slots_[i].load(std::memory_order_relaxed) != 0;
  return n;
}

}  // namespace rampart::proxy
