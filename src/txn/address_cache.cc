#include "txn/address_cache.h"

#include <algorithm>

#include "kv/slot.h"

namespace rampart::txn::internal {

const AddressCache::Entry* AddressCache::Find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void AddressCache::Put(std::string_view key, const Entry& entry) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    it->second = entry;
    return;
  }
  if (entries_.size() >= capacity_) {
    // Erasing one entry from the front each time would walk the erased
    // slots again on every Put: make room for many at once.
    size_t n = std::max<size_t>(capacity_ / 16, 1);
    for (auto victim = entries_.begin(); n > 0 && victim != entries_.end(); --n) {
      entries_.erase(victim++);
    }
  }
  entries_.emplace(std::string(key), entry);
}

void AddressCache::Erase(std::string_view key) {
  auto it = entries_.find(key);
  if (it != entries_.end()) entries_.erase(it);
}

Result<kv::wire::GetResult> ParseSlotRead(std::span<const std::byte> bytes, std::string_view key,
                                          const kv::wire::SlotAddress& slot,
                                          const kv::wire::ProtocolLimits& limits) {
  RAMPART_ASSIGN_OR_RETURN(kv::SlotView view, kv::ValidateSlot(bytes, key, slot.gen));
  if (!view.committed()) {
    // VALID without COMMITTED is never written by a kv-node.
    return Corruption("slot of \"", key, "\" is VALID but not COMMITTED");
  }
  kv::wire::GetResult result;
  result.found = true;
  result.tombstone = view.tombstone();
  result.ts = view.ts;
  result.value = view.value;
  RAMPART_ASSIGN_OR_RETURN(result.siblings, kv::wire::KeyList::Parse(view.metadata, limits));
  result.slot = slot;
  return result;
}

}  // namespace rampart::txn::internal
