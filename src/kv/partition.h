// Partition: one partition's multi-version store — the slots in its arena and
// the index over them — and the RAMP-Fast operations on it.
//
//   Partition p(arena_span, PartitionOptions{});
//   const std::string b = EncodeSiblings({{"b"}}), a = EncodeSiblings({{"a"}});
//   std::vector<PrepareItem> items = {{"a", "1", b}, {"b", "2", a}};
//   RAMPART_RETURN_IF_ERROR(p.Prepare(ts, items, now));
//   RAMPART_RETURN_IF_ERROR(p.Commit(ts, now));
//   auto latest = p.Get(std::vector<std::string>{"a", "b"});  // latest committed
//   auto exact = p.GetByTs("a", ts);        // a RAMP repair read
//   p.Gc(now);                              // reclaim what the grace period allows
//
// Index: key -> {versions by ts (prepared or committed), latest_commit}. The
// latest committed version's slot has VALID set; that bit is what a GET*
// client's one-sided read checks (see docs/kv_format.md).
//
// Commit order. When a commit makes a version the key's latest, the new slot's
// VALID is set first and the old slot's VALID cleared second. For a moment both
// are VALID; a one-sided reader that accepts the old one reads a version that
// was committed-and-latest an instant earlier, which RAMP allows (its repair
// round fetches newer siblings by ts). Clearing first would instead leave a
// window in which neither is VALID and every GET* reader falls back to a
// message for no reason.
//
// Reclamation. A version that stops being (or never becomes) the latest
// committed one is kept for `grace_period` so that repair reads by ts find it,
// then its VALID is cleared (already is) and its slot freed; the arena gives
// the slot a new gen before reuse, so a cached (offset, gen) fails
// ValidateSlot. The latest committed version of a key is never reclaimed
// (tombstones included). Prepared versions whose COMMIT never arrives are
// reclaimed `prepared_timeout` after their PREPARE: RAMP readers only ask for a
// prepared version by ts when they saw a committed sibling naming it, which
// happens within moments of the PREPARE (the coordinator commits right after
// preparing everywhere), so a version still uncommitted after the timeout
// belongs to a writer that died before any COMMIT, and no committed sibling
// references it. The tradeoff: a COMMIT that arrives after the timeout finds
// nothing and is acknowledged (Commit of an unknown ts is OK), so a coordinator
// stalled longer than prepared_timeout loses that partition's writes. Keep the
// timeout far above any plausible stall. Counted in Stats().expired_prepares.
//
// Flush. Drops every version at once, committed and prepared, and frees each
// slot the way GC does (flags cleared, VALID with them, before the slot goes
// back to the arena, whose next Allocate of it bumps the gen), with no grace
// period. Resetting the arena instead would re-carve slots with gen 0 and let
// a cached (offset, gen) match again, so Flush never does that.
//
// Live keys. LiveKeys() is a counter kept by Commit, the only call that
// changes which version is a key's latest committed one; Gc never reclaims
// that version and Flush zeroes the counter, so neither needs to adjust it.
//
// Scans. A checkpoint visits every key's versions in chunks, between other
// calls (StartScan, then ScanNext until it returns false). Keys are kept in a
// list in the order they were created; the scan walks it, a key erased under
// the cursor moves the cursor on, and keys created meanwhile are appended (so
// they may or may not be visited). A key that exists from StartScan until the
// scan passes it is visited exactly once; what changes meanwhile is the redo
// log's business (docs/log_format.md, "Checkpoints").
//
// Thread-safety: not thread-safe. One writer thread owns a Partition and makes
// every call (Prepare, Commit, Get, GetByTs, Gc, Flush, the scan). Remote peers
// only read slots one-sidedly; they never touch the index.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <absl/container/btree_set.h>
#include <absl/container/node_hash_map.h>

#include "common/status.h"
#include "common/string_map.h"
#include "kv/arena.h"
#include "kv/slot.h"

namespace rampart::kv {

using Clock = std::chrono::steady_clock;

struct PartitionOptions {
  // How long a superseded committed version (or one committed behind the
  // latest) stays readable by ts before its slot is reclaimed.
  // Default: 5 s.
  Clock::duration grace_period = std::chrono::seconds(5);

  // How long a prepared version may wait for its COMMIT before it is reclaimed.
  // Default: 30 s.
  Clock::duration prepared_timeout = std::chrono::seconds(30);

  // Largest key accepted by Prepare. Default: 1 KiB.
  uint64_t max_key_bytes = uint64_t{1} << 10;

  // Largest value accepted by Prepare. Default: 1 MiB.
  uint64_t max_value_bytes = uint64_t{1} << 20;

  // How the arena grows beyond its first extent and what limits it
  // (kv/arena.h). Default: it does not grow, no budget.
  ArenaOptions arena;
};

// One key's write in a PREPARE. Views: the caller keeps the bytes alive
// during Prepare (the kv-node passes views into the request message; nothing
// is copied before it lands in the slot).
struct PrepareItem {
  std::string_view key;
  std::string_view value;     // ignored (stored empty) for tombstones
  // The other keys of the write set as slot metadata: an EncodeSiblings()
  // result, which is also the wire's KeyList encoding, or "" for none.
  // REQUIRES: well-formed (the wire decoder checked it).
  std::string_view metadata;
  bool tombstone = false;
};

// A version as stored. The views point into the arena and stay valid until the
// next Prepare, Commit or Gc on the partition.
struct VersionView {
  uint64_t ts = 0;
  std::string_view key;
  std::string_view value;
  std::string_view metadata;            // encoded siblings (DecodeSiblings)
  bool tombstone = false;
  bool committed = false;
  bool latest = false;                  // the key's latest committed version
  uint64_t slot_offset = 0;             // from the start of the arena
  uint64_t slot_bytes = 0;              // SlotBytes(...): how much to read
  uint32_t gen = 0;
};

struct PartitionStats {
  uint64_t keys = 0;               // keys with at least one version
  uint64_t versions = 0;           // prepared + committed versions held
  uint64_t pending_txns = 0;       // timestamps prepared but not committed
  uint64_t reclaim_queued = 0;     // versions waiting for their grace period
  uint64_t reclaimed = 0;          // versions freed by Gc, ever
  uint64_t expired_prepares = 0;   // prepared versions freed by the timeout, ever
  uint64_t flushed = 0;            // versions dropped by Flush, ever
  ArenaStats arena;
};

class Partition {
 public:
  // `arena` is the arena's first extent. REQUIRES: as for Arena (page-aligned,
  // at least Arena::kMinArenaBytes). CheckOptions(options) is OK (otherwise
  // the largest versions the options allow are refused by Prepare; so are
  // versions larger than a fixed arena's — one without options.arena.grow —
  // largest slot).
  Partition(std::span<std::byte> arena, PartitionOptions options);

  // InvalidArgument unless a growing arena can hold a version with a
  // max_key_bytes key and a max_value_bytes value (plus 64 KiB of sibling
  // metadata): its largest slot is Arena::kMaxSlotCap (64 MiB). Call before
  // constructing a Partition from configuration.
  static Status CheckOptions(const PartitionOptions& options);

  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  // Writes one slot per item (VALID and COMMITTED clear) and indexes it under
  // (key, ts). A (key, ts) already present is left as it is (idempotent
  // re-prepare). All or nothing: on error no slot of this call remains and
  // nothing else is touched.
  //   InvalidArgument: empty or too long key, too long value, a key twice in
  //     `items`, ts 0, or a slot larger than the arena's maximum slot.
  //   ResourceExhausted: no memory for a slot: the node's kv.maxmemory is
  //     reached (kOutOfMemory; tombstones are exempt) or the arena cannot
  //     grow (kv/arena.h).
  Status Prepare(uint64_t ts, std::span<const PrepareItem> items, Clock::time_point now);

  // Commits every version prepared under `ts` here. For each key: COMMITTED is
  // set; if ts > the key's latest_commit, the version becomes the latest (its
  // VALID set, then the old latest's cleared) and the old one is scheduled for
  // reclamation at now + grace_period; otherwise it is committed but not
  // latest, readable by ts until now + grace_period. A ts with nothing
  // prepared (never prepared, already committed, or expired) is OK.
  Status Commit(uint64_t ts, Clock::time_point now);

  // The latest committed version of each key (tombstones included, with
  // tombstone set), or nullopt when the key has no committed version.
  std::vector<std::optional<VersionView>> Get(std::span<const std::string> keys) const;
  std::optional<VersionView> Get(std::string_view key) const;

  // The version of `key` with exactly timestamp `ts`, prepared or committed,
  // or nullopt (never written, or reclaimed).
  std::optional<VersionView> GetByTs(std::string_view key, uint64_t ts) const;

  // The key's latest committed ts, or 0 when it has none.
  uint64_t LatestCommit(std::string_view key) const;

  // True when a version of `key` committed at `ts` would create the key: it
  // has no version, or only committed versions older than `ts` of which the
  // latest is a tombstone. A prepared version (a write in flight) or one at
  // `ts` or later makes it not absent. (PREPARE's kFlagIfAbsent.)
  bool Absent(std::string_view key, uint64_t ts) const;

  // True when a write at `ts` of `key` may go over the version committed at
  // `read_ts` (0: none) that its writer read (PREPARE's kFlagIfUnchanged):
  // that version is still the latest committed one, and no write in flight
  // would land between the two — a version prepared after read_ts and before
  // ts, less than kInFlightPrepare ago. (One prepared later than ts lands
  // after the write anyway; one prepared longer ago is taken for a write
  // whose writer gave up — a PREPARE that failed on another partition is
  // never committed — so that it does not hold up the key until
  // prepared_timeout.)
  bool Unchanged(std::string_view key, uint64_t read_ts, uint64_t ts, Clock::time_point now) const;
  static constexpr std::chrono::milliseconds kInFlightPrepare{1000};

  // Reclaims superseded committed versions whose grace period ended by `now`
  // and prepared versions older than prepared_timeout. Returns how many
  // versions were reclaimed.
  size_t Gc(Clock::time_point now);

  // Keys whose latest committed version is not a tombstone. O(1) (a counter,
  // see "Live keys" above).
  uint64_t LiveKeys() const { return live_keys_; }
  // The largest timestamp ever prepared here (0: none), recovered ones too:
  // a client that restarted with a clock behind it issues timestamps above it
  // (Client::ObserveTimestamp), so its writes are not ordered before them.
  uint64_t max_ts() const { return max_ts_; }

  // Removes every version, committed and prepared, freeing their slots as Gc
  // does (see "Flush" above); pending prepares, deadlines and the reclaim
  // queue go with them, so a later COMMIT of a flushed ts finds nothing and
  // is OK. Returns how many versions were dropped.
  size_t Flush();

  // Keys whose latest committed version is not a tombstone, leaving out the
  // proxy's internal keys (wire::kInternalKeyPrefix): what COUNT answers.
  uint64_t LiveUserKeys() const { return live_keys_ - live_internal_keys_; }

  // Key scans for SCAN requests, in the order of KeyHash(key): visits (its
  // latest committed version) every key from hash position `from` on whose
  // latest committed version is not a tombstone, looking at `max_keys` keys
  // and then at the rest of those in the last one's 2^kScanGrainBits-wide
  // hash range, so that a range is never split between two calls. Returns
  // the position to continue from (a multiple of 2^kScanGrainBits, greater
  // than `from`), or nullopt when no keys are left. A key present for a
  // whole scan (from position 0 to the end) is visited at least once.
  static constexpr int kScanGrainBits = 16;
  static uint64_t KeyHash(std::string_view key);
  std::optional<uint64_t> ScanKeys(uint64_t from, size_t max_keys,
                                   const std::function<void(const VersionView&)>& visit) const;

  // Checkpoint scans (see "Scans" above); one at a time. ScanNext visits
  // every version (prepared or committed, tombstones too) of up to `max_keys`
  // more keys and returns true while keys are left.
  void StartScan();
  bool ScanNext(size_t max_keys, const std::function<void(const VersionView&)>& visit);

  // Makes room in the key index for `keys` keys (recovery, which knows
  // roughly how many are coming).
  void ReserveKeys(size_t keys) { index_.reserve(keys); }

  // While set, Prepare does not count its slots against the memory budget's
  // limit: recovery restores what was acknowledged whatever kv.maxmemory says.
  void set_budget_exempt(bool exempt) { budget_exempt_ = exempt; }

  PartitionStats Stats() const;
  const PartitionOptions& options() const { return options_; }
  // The arena: its extents (for registration and DESCRIBE) and, in tests,
  // the slots.
  const Arena& arena() const { return arena_; }

 private:
  struct Version {
    SlotRef slot;
    bool committed = false;
    bool tombstone = false;
  };
  // A key's versions in ascending ts. Most keys hold one to three (the
  // latest, one being prepared, superseded ones in their grace period); a
  // hot key holds thousands, since every superseded version waits out
  // kv.grace_ms (redis-benchmark's SET of one key: 30,000 a second). So: one
  // vector, searched by binary search; a new ts, nearly always the newest,
  // goes to the back; an erased item is closed up from the nearer end, and
  // erasing from the front only moves `head_` (Reclaim frees versions about
  // in the order they were superseded, so erases are near the front: one
  // stuck prepare at the front costs a move of the few items before the
  // erased one, not of all after it). The dead front is dropped once it is
  // as long as the live part, and a vector four times larger than its items
  // is shrunk, so a key that was hot gives its memory back.
  class VersionList {
   public:
    using Item = std::pair<uint64_t, Version>;
    using iterator = std::vector<Item>::iterator;
    using const_iterator = std::vector<Item>::const_iterator;

    iterator find(uint64_t ts) {
      auto it = LowerBound(begin(), end(), ts);
      return it != end() && it->first == ts ? it : end();
    }
    const_iterator find(uint64_t ts) const {
      auto it = LowerBound(begin(), end(), ts);
      return it != end() && it->first == ts ? it : end();
    }
    bool contains(uint64_t ts) const { return find(ts) != end(); }
    // REQUIRES: !contains(ts).
    void emplace(uint64_t ts, Version v) {
      if (empty() || items_.back().first < ts) {
        items_.emplace_back(ts, v);
      } else {
        items_.emplace(LowerBound(begin(), end(), ts), ts, v);
      }
    }
    void erase(iterator it) {
      if (it - begin() >= end() - it) {
        items_.erase(it);
      } else {
        std::move_backward(begin(), it, it + 1);  // the items before it, one up
        ++head_;
      }
      if (head_ == items_.size()) {
        items_.clear();
        head_ = 0;
      } else if (head_ >= size()) {
        items_.erase(items_.begin(), items_.begin() + head_);
        head_ = 0;
      }
      if (items_.capacity() > kMinCapacity && 4 * items_.size() < items_.capacity()) {
        items_.shrink_to_fit();
      }
    }
    bool empty() const { return head_ == items_.size(); }
    size_t size() const { return items_.size() - head_; }
    // Fetches the list's first line (a key's versions are few) for a find()
    // soon.
    void Prefetch() const {
      if (!empty()) __builtin_prefetch(items_.data() + head_);
    }
    iterator begin() { return items_.begin() + head_; }
    iterator end() { return items_.end(); }
    const_iterator begin() const { return items_.begin() + head_; }
    const_iterator end() const { return items_.end(); }

   private:
    // Capacity never given back (a key's usual few versions).
    static constexpr size_t kMinCapacity = 8;
    template <typename It>
    static It LowerBound(It first, It last, uint64_t ts) {
      return std::lower_bound(first, last, ts, [](const Item& i, uint64_t t) { return i.first < t; });
    }
    std::vector<Item> items_;
    uint32_t head_ = 0;  // items_[0, head_) were erased
  };
  struct KeyEntry;
  using IndexNode = std::pair<const std::string, KeyEntry>;
  struct KeyEntry {
    VersionList versions;
    uint64_t latest_commit = 0;  // 0: none
    // The key list the scans walk, in creation order (see "Scans").
    IndexNode* scan_prev = nullptr;
    IndexNode* scan_next = nullptr;
  };
  struct Pending {
    Clock::time_point prepared_at;
    // The index entries of the prepared keys. An entry holding a prepared
    // version is never erased (it has a version), and index elements never
    // move, so the pointers stay valid until COMMIT, expiry or Flush.
    std::vector<IndexNode*> keys;
  };
  struct ReclaimItem {
    // The key's index entry. It outlives the item: an item is queued only
    // for a key with a committed latest version, a key's latest version is
    // never reclaimed (Gc skips it; expired prepares are uncommitted), and
    // Reclaim erases only entries without versions; so the entry lives until
    // Flush, which clears the queue with the index. Gc dereferences queued
    // items' entries ahead of their turn (PrefetchAhead) on the strength of it.
    IndexNode* entry;
    uint64_t ts;
    SlotRef slot;  // to recognise a stale entry
  };
  // A SwissTable (open addressing, one metadata byte per slot) whose nodes
  // never move: find(std::string_view) allocates nothing and touches less
  // memory than std::unordered_map's bucket chains, and pending_, the reclaim
  // queue and the scan list keep pointers to its nodes.
  // (Debian's abseil has its own string_view, so the hash and equality are
  // the transparent std ones.)
  using Index = absl::node_hash_map<std::string, KeyEntry, TransparentStringHash, std::equal_to<>>;

  VersionView View(const KeyEntry& entry, uint64_t ts, const Version& v) const;
  // Clears the slot's flags, frees it and drops the version `vit` of `node`;
  // drops the key entry when it has no versions left.
  void Reclaim(IndexNode* node, VersionList::iterator vit);
  // The one way a slot leaves the index (Reclaim, Flush): its flags word is
  // cleared, so one-sided readers see it is no longer VALID, then the arena
  // takes it back (a new gen on reuse).
  void ReleaseSlot(const SlotRef& slot);
  // Index entries are created and erased only through these (the scan list).
  IndexNode* AddKey(std::string_view key);
  void EraseKey(IndexNode* node);
  // The index entry of each item's key (nullptr: not indexed), looked up in
  // passes of their own, the entries' version lists fetched after: a group
  // commit brings hundreds of keys whose lookups miss the cache, and short
  // loops let the misses overlap.
  std::vector<IndexNode*> FindEntries(std::span<const PrepareItem> items);
  // Commit and Gc walk keys whose entries, version lists and slots are
  // cold (a COMMIT comes a round after its PREPARE; a reclaim a grace
  // period after the commit), so each fetches ahead, and the misses overlap
  // instead of following each other (except in a walk's first items):
  // - Commit: the entry kLookahead keys ahead, its version list (the entry
  //   loaded by then) kLookahead / 2 ahead, and 2 ahead the slot of the
  //   key's latest version, whose VALID it clears;
  // - Gc: the entry and the reclaimed slot (its address is in the item)
  //   kLookahead items ahead, the entry's version list kLookahead / 2 ahead.
  static constexpr size_t kLookahead = 12;
  void PrefetchAhead(std::span<IndexNode* const> keys, size_t i);
  void PrefetchAhead(const std::deque<std::pair<Clock::time_point, ReclaimItem>>& queue);
  void PrefetchLatestSlot(const KeyEntry& entry);

  PartitionOptions options_;
  Arena arena_;
  Index index_;
  std::unordered_map<uint64_t, Pending> pending_;               // ts -> prepared keys
  std::multimap<Clock::time_point, uint64_t> prepare_deadlines_;  // -> ts
  // In the order versions were superseded: due times only grow (a caller
  // whose clock steps back only delays reclaiming, never hastens it).
  std::deque<std::pair<Clock::time_point, ReclaimItem>> reclaim_queue_;
  uint64_t versions_ = 0;
  uint64_t reclaimed_ = 0;
  uint64_t expired_prepares_ = 0;
  uint64_t flushed_ = 0;
  uint64_t live_keys_ = 0;  // see LiveKeys()
  uint64_t live_internal_keys_ = 0;  // of live_keys_, internal ones (LiveUserKeys)
  // Every key by KeyHash, for ScanKeys (index nodes never move).
  absl::btree_set<std::pair<uint64_t, IndexNode*>> by_hash_;
  uint64_t max_ts_ = 0;     // see max_ts()
  IndexNode* keys_head_ = nullptr;  // the scan list
  IndexNode* keys_tail_ = nullptr;
  IndexNode* scan_cursor_ = nullptr;  // next key a scan visits; nullptr: done
  bool budget_exempt_ = false;
};

}  // namespace rampart::kv
