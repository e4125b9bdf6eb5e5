#include "kv/partition.h"

#include <xxhash.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "kv/protocol.h"

namespace rampart::kv {

Partition::Partition(std::span<std::byte> arena, PartitionOptions options)
    : options_(options), arena_(arena, options.arena) {}

Status Partition::CheckOptions(const PartitionOptions& options) {
  if (options.max_key_bytes == 0) return InvalidArgument("max_key_bytes must be at least 1");
  constexpr uint64_t kMetadataAllowance = 64 << 10;
  const uint64_t need = SlotBytes(options.max_key_bytes, options.max_value_bytes, kMetadataAllowance);
  if (need > Arena::kMaxSlotCap) {
    return InvalidArgument("max_key_bytes ", options.max_key_bytes, " + max_value_bytes ",
                           options.max_value_bytes, " (+ 64 KiB metadata) need a ", need,
                           "-byte slot, but the arena's slots hold at most ", Arena::kMaxSlotCap,
                           " bytes; lower the limits");
  }
  return Status::Ok();
}

namespace {

// The size of a key that two of `items` name, if any; entries[i] is item
// i's index entry (nullptr: a new key). Indexed keys are told apart by their
// entries, new ones by their bytes, each in a sorted copy (two allocations,
// where a hash set took one per key).
template <typename Entry>
std::optional<size_t> DuplicateKey(std::span<const PrepareItem> items, const std::vector<Entry*>& entries) {
  std::vector<const Entry*> indexed;
  std::vector<std::string_view> fresh;
  indexed.reserve(items.size());
  fresh.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (entries[i] != nullptr) {
      indexed.push_back(entries[i]);
    } else {
      fresh.push_back(items[i].key);
    }
  }
  std::sort(indexed.begin(), indexed.end());
  if (auto twice = std::adjacent_find(indexed.begin(), indexed.end()); twice != indexed.end()) {
    return (*twice)->first.size();
  }
  std::sort(fresh.begin(), fresh.end());
  if (auto twice = std::adjacent_find(fresh.begin(), fresh.end()); twice != fresh.end()) return twice->size();
  return std::nullopt;
}

}  // namespace

std::vector<Partition::IndexNode*> Partition::FindEntries(std::span<const PrepareItem> items) {
  for (const PrepareItem& item : items) index_.prefetch(item.key);
  std::vector<IndexNode*> entries(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = index_.find(items[i].key);
    entries[i] = it == index_.end() ? nullptr : &*it;
  }
  // (Prepare asks each entry's version list whether it holds ts already.)
  for (IndexNode* entry : entries) {
    if (entry != nullptr) entry->second.versions.Prefetch();
  }
  return entries;
}

Status Partition::Prepare(uint64_t ts, std::span<const PrepareItem> items,
                          Clock::time_point now) {
  if (ts == 0) return InvalidArgument("prepare: ts 0 is not a timestamp");

  // Validate everything before writing anything.
  for (size_t i = 0; i < items.size(); ++i) {
    const PrepareItem& item = items[i];
    if (item.key.empty()) return InvalidArgument("prepare ts ", ts, ": item ", i, " has an empty key");
    if (item.key.size() > options_.max_key_bytes) {
      return InvalidArgument("prepare ts ", ts, ": key of ", item.key.size(),
                             " bytes exceeds max_key_bytes ", options_.max_key_bytes);
    }
    if (!item.tombstone && item.value.size() > options_.max_value_bytes) {
      return InvalidArgument("prepare ts ", ts, ": value of ", item.value.size(),
                             " bytes exceeds max_value_bytes ", options_.max_value_bytes);
    }
    const uint64_t bytes = SlotBytes(item.key.size(), item.tombstone ? 0 : item.value.size(),
                                     item.metadata.size());
    if (bytes > arena_.max_slot_bytes()) {
      return InvalidArgument("prepare ts ", ts, ": version needs a ", bytes,
                             "-byte slot, larger than the arena's maximum slot of ",
                             arena_.max_slot_bytes(), " bytes");
    }
  }

  const std::vector<IndexNode*> entries = FindEntries(items);
  if (std::optional<size_t> twice = DuplicateKey(items, entries)) {
    return InvalidArgument("prepare ts ", ts, ": key of ", *twice, " bytes appears twice in one prepare");
  }

  // Write the slots; on failure free this call's slots and touch nothing else.
  struct Written {
    size_t item;
    SlotRef slot;
    IndexNode* entry;  // nullptr: a new key (elements of index_ never move)
  };
  std::vector<Written> written;
  written.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const PrepareItem& item = items[i];
    IndexNode* entry = entries[i];
    if (entry != nullptr && entry->second.versions.contains(ts)) continue;  // re-prepare
    const std::string_view value = item.tombstone ? std::string_view() : item.value;
    Result<SlotRef> ref =
        arena_.Allocate(SlotBytes(item.key.size(), value.size(), item.metadata.size()),
                        item.tombstone || budget_exempt_ ? Budget::kExempt : Budget::kEnforce);
    if (!ref.ok()) {
      for (const Written& w : written) arena_.Free(w.slot);
      return ref.status().WithContext(
          StrCat("prepare ts ", ts, " (", items.size(), " keys, nothing written)"));
    }
    WriteSlot(arena_.At(*ref), SlotContents{.ts = ts,
                                            .gen = ref->gen,
                                            .flags = item.tombstone ? kSlotTombstone : 0u,
                                            .key = item.key,
                                            .value = value,
                                            .metadata = item.metadata});
    written.push_back(Written{i, *ref, entry});
  }
  max_ts_ = std::max(max_ts_, ts);
  if (written.empty()) return Status::Ok();

  // Index them.
  auto [pit, inserted] = pending_.try_emplace(ts);
  if (inserted) {
    pit->second.prepared_at = now;
    prepare_deadlines_.emplace(now + options_.prepared_timeout, ts);
  }
  for (const Written& w : written) {
    const PrepareItem& item = items[w.item];
    IndexNode* entry = w.entry;
    if (entry == nullptr) entry = AddKey(item.key);
    entry->second.versions.emplace(ts, Version{w.slot, false, item.tombstone});
    pit->second.keys.push_back(entry);
    ++versions_;
  }
  return Status::Ok();
}

void Partition::PrefetchLatestSlot(const KeyEntry& entry) {
  if (entry.latest_commit == 0) return;
  auto latest = entry.versions.find(entry.latest_commit);
  if (latest != entry.versions.end()) __builtin_prefetch(arena_.At(latest->second.slot), /*rw=*/1);
}

void Partition::PrefetchAhead(std::span<IndexNode* const> keys, size_t i) {
  if (i + kLookahead < keys.size()) __builtin_prefetch(keys[i + kLookahead]);
  if (i + kLookahead / 2 < keys.size()) keys[i + kLookahead / 2]->second.versions.Prefetch();
  if (i + 2 < keys.size()) PrefetchLatestSlot(keys[i + 2]->second);
}

void Partition::PrefetchAhead(const std::deque<std::pair<Clock::time_point, ReclaimItem>>& queue) {
  if (queue.size() > kLookahead) {
    const ReclaimItem& ahead = queue[kLookahead].second;
    __builtin_prefetch(ahead.entry);
    __builtin_prefetch(arena_.At(ahead.slot), /*rw=*/1);
  }
  if (queue.size() > kLookahead / 2) queue[kLookahead / 2].second.entry->second.versions.Prefetch();
}

Status Partition::Commit(uint64_t ts, Clock::time_point now) {
  auto pit = pending_.find(ts);
  if (pit == pending_.end()) return Status::Ok();  // unknown, done or expired
  const Clock::time_point reclaim_at = now + options_.grace_period;
  const std::vector<IndexNode*>& keys = pit->second.keys;
  for (size_t i = 0; i < keys.size(); ++i) {
    PrefetchAhead(keys, i);
    IndexNode* node = keys[i];
    KeyEntry& entry = node->second;
    auto vit = entry.versions.find(ts);
    if (vit == entry.versions.end() || vit->second.committed) continue;
    Version& v = vit->second;
    v.committed = true;
    std::byte* slot = arena_.At(v.slot);
    const uint32_t flags = LoadSlotFlags(slot) | kSlotCommitted;
    if (ts > entry.latest_commit) {
      // New latest: set VALID on the new slot, then clear it on the old one
      // (see "Commit order" in partition.h).
      StoreSlotFlags(slot, flags | kSlotValid);
      bool was_live = false;
      if (entry.latest_commit != 0) {
        auto old = entry.versions.find(entry.latest_commit);
        if (old != entry.versions.end()) {
          was_live = !old->second.tombstone;
          std::byte* old_slot = arena_.At(old->second.slot);
          StoreSlotFlags(old_slot, LoadSlotFlags(old_slot) & ~kSlotValid);
          reclaim_queue_.emplace_back(reclaim_at, ReclaimItem{node, old->first, old->second.slot});
        }
      }
      entry.latest_commit = ts;
      const uint64_t delta_live = (v.tombstone ? 0 : 1) - (was_live ? 1 : 0);
      live_keys_ += delta_live;
      if (node->first.starts_with(wire::kInternalKeyPrefix)) live_internal_keys_ += delta_live;
    } else {
      // Committed behind the latest: readable by ts for the grace period.
      StoreSlotFlags(slot, flags);
      reclaim_queue_.emplace_back(reclaim_at, ReclaimItem{node, ts, v.slot});
    }
  }
  pending_.erase(pit);
  return Status::Ok();
}

void Partition::Reclaim(IndexNode* node, VersionList::iterator vit) {
  KeyEntry& entry = node->second;
  ReleaseSlot(vit->second.slot);
  entry.versions.erase(vit);
  --versions_;
  ++reclaimed_;
  // No versions means no latest either (it is never reclaimed).
  if (entry.versions.empty()) EraseKey(node);
}

uint64_t Partition::KeyHash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

Partition::IndexNode* Partition::AddKey(std::string_view key) {
  IndexNode* node = &*index_.try_emplace(std::string(key)).first;
  by_hash_.emplace(KeyHash(key), node);
  node->second.scan_prev = keys_tail_;
  if (keys_tail_ != nullptr) keys_tail_->second.scan_next = node;
  keys_tail_ = node;
  if (keys_head_ == nullptr) keys_head_ = node;
  return node;
}

void Partition::EraseKey(IndexNode* node) {
  KeyEntry& e = node->second;
  by_hash_.erase({KeyHash(node->first), node});
  if (scan_cursor_ == node) scan_cursor_ = e.scan_next;
  (e.scan_prev != nullptr ? e.scan_prev->second.scan_next : keys_head_) = e.scan_next;
  (e.scan_next != nullptr ? e.scan_next->second.scan_prev : keys_tail_) = e.scan_prev;
  index_.erase(index_.find(std::string_view(node->first)));
}

std::optional<uint64_t> Partition::ScanKeys(uint64_t from, size_t max_keys,
                                            const std::function<void(const VersionView&)>& visit) const {
  constexpr uint64_t kGrainMask = ~((uint64_t{1} << kScanGrainBits) - 1);
  auto it = by_hash_.lower_bound({from, nullptr});
  size_t looked = 0;
  uint64_t grain = 0;  // of the last key looked at
  for (; it != by_hash_.end(); ++it) {
    if (looked >= max_keys && (it->first & kGrainMask) != grain) return it->first & kGrainMask;
    const KeyEntry& entry = it->second->second;
    ++looked;
    grain = it->first & kGrainMask;
    if (entry.latest_commit == 0) continue;
    auto v = entry.versions.find(entry.latest_commit);
    if (v == entry.versions.end() || v->second.tombstone) continue;
    visit(View(entry, v->first, v->second));
  }
  return std::nullopt;
}

void Partition::StartScan() { scan_cursor_ = keys_head_; }

bool Partition::ScanNext(size_t max_keys, const std::function<void(const VersionView&)>& visit) {
  for (size_t n = 0; n < max_keys && scan_cursor_ != nullptr; ++n) {
    const KeyEntry& entry = scan_cursor_->second;
    for (const auto& [ts, v] : entry.versions) visit(View(entry, ts, v));
    scan_cursor_ = entry.scan_next;
  }
  return scan_cursor_ != nullptr;
}

void Partition::ReleaseSlot(const SlotRef& slot) {
  StoreSlotFlags(arena_.At(slot), 0);
  arena_.Free(slot);
}

size_t Partition::Flush() {
  const size_t n = versions_;
  for (const auto& [key, entry] : index_) {
    for (const auto& [ts, v] : entry.versions) ReleaseSlot(v.slot);
  }
  index_.clear();
  keys_head_ = keys_tail_ = scan_cursor_ = nullptr;
  pending_.clear();
  prepare_deadlines_.clear();
  reclaim_queue_.clear();
  versions_ = 0;
  live_keys_ = live_internal_keys_ = 0;
  by_hash_.clear();
  flushed_ += n;
  return n;
}

size_t Partition::Gc(Clock::time_point now) {
  size_t n = 0;
  while (!reclaim_queue_.empty() && reclaim_queue_.front().first <= now) {
    PrefetchAhead(reclaim_queue_);
    const ReclaimItem item = reclaim_queue_.front().second;
    reclaim_queue_.pop_front();
    KeyEntry& entry = item.entry->second;
    auto vit = entry.versions.find(item.ts);
    // (Defensive: a version is reclaimed only through its own item, but the
    // slot check would make a stale item — version reclaimed, then the same
    // (key, ts) prepared again — harmless.)
    if (vit == entry.versions.end() || !(vit->second.slot == item.slot) ||
        !vit->second.committed || item.ts == entry.latest_commit) {
      continue;
    }
    Reclaim(item.entry, vit);
    ++n;
  }
  while (!prepare_deadlines_.empty() && prepare_deadlines_.begin()->first <= now) {
    const uint64_t ts = prepare_deadlines_.begin()->second;
    prepare_deadlines_.erase(prepare_deadlines_.begin());
    auto pit = pending_.find(ts);
    if (pit == pending_.end() || pit->second.prepared_at + options_.prepared_timeout > now) {
      continue;  // committed since, or prepared again later (a newer deadline exists)
    }
    for (IndexNode* node : pit->second.keys) {
      auto vit = node->second.versions.find(ts);
      if (vit == node->second.versions.end() || vit->second.committed) continue;
      Reclaim(node, vit);  // may erase the entry: `node` is not used after it
      ++expired_prepares_;
      ++n;
    }
    pending_.erase(pit);
  }
  return n;
}

VersionView Partition::View(const KeyEntry& entry, uint64_t ts, const Version& v) const {
  const SlotView s = ReadLocalSlot(arena_.At(v.slot.offset));
  VersionView out;
  out.ts = ts;
  out.key = s.key;
  out.value = s.value;
  out.metadata = s.metadata;
  out.tombstone = s.tombstone();
  out.committed = v.committed;
  out.latest = v.committed && ts == entry.latest_commit;
  out.slot_offset = v.slot.offset;
  out.slot_bytes = s.slot_bytes;
  out.gen = v.slot.gen;
  return out;
}

std::optional<VersionView> Partition::Get(std::string_view key) const {
  auto it = index_.find(key);
  if (it == index_.end() || it->second.latest_commit == 0) return std::nullopt;
  auto vit = it->second.versions.find(it->second.latest_commit);
  if (vit == it->second.versions.end()) return std::nullopt;
  return View(it->second, vit->first, vit->second);
}

std::vector<std::optional<VersionView>> Partition::Get(std::span<const std::string> keys) const {
  std::vector<std::optional<VersionView>> out;
  out.reserve(keys.size());
  for (const std::string& key : keys) out.push_back(Get(std::string_view(key)));
  return out;
}

std::optional<VersionView> Partition::GetByTs(std::string_view key, uint64_t ts) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  auto vit = it->second.versions.find(ts);
  if (vit == it->second.versions.end()) return std::nullopt;
  return View(it->second, vit->first, vit->second);
}

uint64_t Partition::LatestCommit(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? 0 : it->second.latest_commit;
}

bool Partition::Absent(std::string_view key, uint64_t ts) const {
  auto it = index_.find(key);
  if (it == index_.end()) return true;
  const KeyEntry& entry = it->second;
  for (const auto& [vts, v] : entry.versions) {
    if (!v.committed || vts >= ts) return false;
  }
  auto latest = entry.versions.find(entry.latest_commit);
  return latest == entry.versions.end() || latest->second.tombstone;
}

bool Partition::Unchanged(std::string_view key, uint64_t read_ts, uint64_t ts,
                          Clock::time_point now) const {
  auto it = index_.find(key);
  if (it == index_.end()) return read_ts == 0;
  const KeyEntry& entry = it->second;
  if (entry.latest_commit != read_ts) return false;
  // What is newer than read_ts is prepared (latest_commit is the newest
  // committed): from the newest down.
  for (auto v = entry.versions.end(); v != entry.versions.begin();) {
    --v;
    if (v->first <= read_ts) break;
    if (v->second.committed) return false;
    if (v->first > ts) continue;
    auto pending = pending_.find(v->first);
    if (pending != pending_.end() && now - pending->second.prepared_at < kInFlightPrepare) return false;
  }
  return true;
}

PartitionStats Partition::Stats() const {
  PartitionStats st;
  st.keys = index_.size();
  st.versions = versions_;
  st.pending_txns = pending_.size();
  st.reclaim_queued = reclaim_queue_.size();
  st.reclaimed = reclaimed_;
  st.expired_prepares = expired_prepares_;
  st.flushed = flushed_;
  st.arena = arena_.Stats();
  return st;
}

}  // namespace rampart::kv
