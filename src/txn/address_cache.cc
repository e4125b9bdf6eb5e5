#include "txn/address_cache.h"

#include <xxhash.h>

#include <algorithm>

#include "kv/slot.h"

namespace rampart::txn::internal {

uint64_t AddressCache::HashOf(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

const AddressCache::Entry* AddressCache::Find(std::string_view key) const {
  auto it = entries_.find(HashOf(key));
  return it == entries_.end() ? nullptr : &it->second;
}

void AddressCache::Put(std::string_view key, const Entry& entry) {
  const uint64_t hash = HashOf(key);
  if (entries_.size() >= capacity_ && !entries_.contains(hash)) {
    // Erasing one entry from the front each time would walk the erased
    // slots again on every Put: make room for many at once (not for too
    // many: a Put that erases 65,536 entries stalls its worker).
    size_t n = std::clamp<size_t>(capacity_ / 16, 1, 4096);
    for (auto victim = entries_.begin(); n > 0 && victim != entries_.end(); --n) {
      entries_.erase(victim++);
    }
  }
  entries_.insert_or_assign(hash, entry);
}

void AddressCache::Erase(std::string_view key) { entries_.erase(HashOf(key)); }

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
