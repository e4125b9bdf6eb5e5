// The GET* address cache (seed 000 §3.2, Algorithm 3): for each key, where its
// latest committed version was last seen in a kv-node's arena, so the next
// read can fetch it with one one-sided read instead of a message.
//
//   AddressCache cache(1 << 20);
//   cache.Put(key, {partition, epoch, reply.slot});        // from a GET+ reply
//   if (const AddressCache::Entry* e = cache.Find(key)) {
//     ... read e->slot.bytes at e->slot.offset one-sidedly ...
//     auto got = ParseSlotRead(bytes, key, e->slot);      // checks everything
//     if (!got.ok()) cache.Erase(key);                    // stale: GET+ instead
//   }
//
// An entry is only a hint: a slot is checked on every read (ParseSlotRead), so
// a stale entry costs a fallback, never a wrong answer. That is also why the
// cache keeps no keys: entries are found by a 64-bit hash of the key (XXH3),
// and two keys with one hash would share an entry, which costs a fallback.
// What the cache must not do is outlive the process whose arena it points
// into: entries carry the epoch of the connection they were learnt on, and
// the client bumps a partition's epoch whenever that connection fails
// (docs/ucx_notes.md: reads of a dead process's shared memory keep "succeeding").
//
// Thread-safety: none; it belongs to one Client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <absl/container/flat_hash_map.h>

#include "common/status.h"
#include "kv/protocol.h"

namespace rampart::txn::internal {

class AddressCache {
 public:
  // A key may live on several partitions (the proxy's replicas): an address
  // is only good for reads of the partition it was learnt from, and the
  // epoch is that partition's.
  struct Entry {
    uint32_t partition = 0;
    uint64_t epoch = 0;  // of the partition's connection when learnt
    kv::wire::SlotAddress slot;
  };

  // REQUIRES: capacity >= 1.
  explicit AddressCache(size_t capacity) : capacity_(capacity) {}

  // The entry for `key`, or nullptr. Valid until the next Put or Erase.
  const Entry* Find(std::string_view key) const;
  // Inserts or replaces. When full, arbitrary other entries make room (a
  // sixteenth of the capacity at once, at most 4,096, so that room costs
  // O(1) a Put, amortized).
  void Put(std::string_view key, const Entry& entry);
  void Erase(std::string_view key);
  // For a caller about to Find, Put or Erase the `n` keys key_at(0 .. n-1),
  // at key j: fetches the table's place for the key kLookahead ahead into
  // the cache, so that the misses of a turn's hundreds of keys overlap.
  template <typename KeyAt>
  void PrefetchAhead(size_t j, size_t n, KeyAt key_at) const {
    if (j + kLookahead < n) entries_.prefetch(HashOf(key_at(j + kLookahead)));
  }
  static constexpr size_t kLookahead = 8;

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  // The key's hash is already uniform: the table uses it as it is.
  struct PreHashed {
    size_t operator()(uint64_t hash) const { return hash; }
  };
  static uint64_t HashOf(std::string_view key);

  // Flat (open addressing, the entries inline) and by hash: a lookup is one
  // cache miss, where std::unordered_map<std::string> took three (bucket,
  // node, the key's bytes) and was a tenth of a proxy worker under
  // pipelined SETs of 100,000 keys.
  absl::flat_hash_map<uint64_t, Entry, PreHashed> entries_;
};

// Checks the bytes of a one-sided read of `slot` against `key` and the slot's
// gen (kv::ValidateSlot: length, gen, torn header/trailer, crc32c, key, VALID)
// and turns an accepted slot into the GET result a GET+ reply would have
// carried. The result's views point into `bytes`. Errors say why the read was
// refused (kNotFound: stale gen, other key or superseded; kCorruption: torn).
Result<kv::wire::GetResult> ParseSlotRead(std::span<const std::byte> bytes, std::string_view key,
                                          const kv::wire::SlotAddress& slot,
                                          const kv::wire::ProtocolLimits& limits);

}  // namespace rampart::txn::internal
