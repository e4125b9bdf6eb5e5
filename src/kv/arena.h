// Arena: the slot allocator of one partition, over extents of registered
// memory that it grows on demand.
//
// The memory is normally registered regions from transport::Fabric::Allocate
// that peers read one-sidedly; the Arena only sees spans of bytes and asks an
// ExtentSource for more, so it does not depend on the transport.
//
//   Arena arena(first_extent, ArenaOptions{.grow = &source, .budget = budget});
//   Result<SlotRef> ref = arena.Allocate(SlotBytes(k, v, m));
//   if (!ref.ok()) return ref.status();             // ResourceExhausted
//   WriteSlot(arena.At(*ref), {.ts = ts, .gen = ref->gen, ...});
//   ...
//   arena.Free(*ref);
//
// Addresses. A slot's address is (extent index << kExtentShift) + its offset
// in the extent (docs/kv_format.md, "Arena addresses"); the first extent's
// addresses are plain offsets.
//
// Layout (docs/kv_format.md, "Arena layout"). Extents are cut into 4 KiB
// pages. A slot of at most kSlabMaxSlot bytes lives in a slab: a run of pages
// holding up to 64 slots of one size class (64-byte steps to 512 B, then steps
// of about 12.5 %, rounded up to 64 B). A larger slot is a run of whole pages
// of its own. Free page runs are one pool for every purpose: a slab whose
// slots are all free goes back to it (unless it is its class's only slab with
// free slots and the spares so far hold less than kMaxSpareBytes; spares go
// back too before the arena grows or refuses), and a freed large slot goes
// back at once, merged with its free neighbours. So memory
// freed by one size class is available to every other: a workload whose value
// sizes drift never finds the arena "full" while most of it is free.
//
// Growth. When no free run fits, the arena asks its ExtentSource for another
// extent — at least what is needed, and otherwise as large as everything it
// holds so far (doubling), between the first extent's size and
// max_extent_bytes. Pages handed out (to slabs and large slots) are counted
// against the MemoryBudget (kv.maxmemory, shared by a node's partitions);
// beyond it Allocate fails with ResourceExhausted naming maxmemory, except for
// allocations marked Budget::kExempt (tombstones: a delete must be possible
// when memory is full). Extents are never given back: clients may hold their
// addresses, and registered memory is only touched (backed) where slots are.
//
// Generations. Every slot carries a u32 gen at kSlotGenOffset of its header,
// which stays in the memory while the slot is free. Allocate writes
// NextGen(the gen word found there) — 1 for never-used (zeroed) memory — before
// returning the slot and clears the flags word, so a client that cached
// (address, old gen) of a reused slot is refused. When pages go from one size
// class to another, a new slot's header may land where an old slot's body
// was; its gen is then derived from those bytes, and what protects a stale
// reader there is the rest of ValidateSlot (trailer, crc32c, key, VALID): a read
// that passes all of them is the key's latest committed version.
//
// Thread-safety: not thread-safe. One thread (the partition's writer) owns an
// Arena and makes every call. Remote peers may read the memory concurrently;
// the Arena only writes gen and flags words with atomic stores. The budget is
// thread-safe and shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "kv/memory_budget.h"
#include "kv/page_runs.h"
#include "kv/slot.h"

namespace rampart::kv {

// Where an Arena's further extents come from.
class ExtentSource {
 public:
  virtual ~ExtentSource() = default;
  // A new page-aligned range of exactly `bytes` (a multiple of
  // Arena::kPageBytes) that stays valid as long as the source. Its contents
  // may be anything. Errors (registration failed, out of memory) are passed on.
  virtual Result<std::span<std::byte>> NewExtent(uint64_t bytes) = 0;
};

// Whether an allocation counts against the memory budget's limit.
enum class Budget { kEnforce, kExempt };

struct ArenaOptions {
  // Where more extents come from; nullptr: the first extent is all there is.
  ExtentSource* grow = nullptr;
  // Largest extent the arena asks for when it grows (unless one slot needs
  // more). Default: 1 GiB.
  uint64_t max_extent_bytes = uint64_t{1} << 30;
  // The node's kv.maxmemory; nullptr: no limit and no shared count.
  std::shared_ptr<MemoryBudget> budget;
};

// A slot handed out by Arena::Allocate.
struct SlotRef {
  uint64_t offset = 0;    // the slot's arena address (see above); a multiple of 64
  uint64_t capacity = 0;  // bytes reserved for it, >= the bytes asked for
  uint32_t gen = 0;       // the slot's generation for this use (never 0)

  friend bool operator==(const SlotRef&, const SlotRef&) = default;
};

struct ArenaClassStats {
  uint64_t slot_bytes = 0;   // the class's slot size
  uint64_t slots = 0;        // in this class's slabs
  uint64_t free_slots = 0;   // of those, free
  uint64_t used_bytes() const { return (slots - free_slots) * slot_bytes; }
  uint64_t free_bytes() const { return free_slots * slot_bytes; }
};

struct ArenaStats {
  uint64_t extents = 0;
  uint64_t reserved_bytes = 0;   // all extents: registered memory
  uint64_t page_bytes = 0;       // pages handed out to slabs and large slots
  uint64_t free_page_bytes = 0;  // pages in the free pool
  uint64_t largest_free_run = 0;
  uint64_t used_bytes = 0;       // in allocated slots (by capacity)
  uint64_t slab_free_bytes = 0;  // free slots inside slabs
  uint64_t large_slots = 0;      // allocated slots above kSlabMaxSlot
  uint64_t allocations = 0;      // successful Allocate calls, ever
  uint64_t failures = 0;         // Allocate calls that returned an error
  std::vector<ArenaClassStats> classes;  // only classes with slabs

  std::string ToString() const;  // one line per class, for logs and errors
};

class Arena {
 public:
  static constexpr uint64_t kPageBytes = 4096;
  static constexpr uint64_t kSlotGranule = 64;
  static constexpr uint64_t kSlabMaxSlot = 32 << 10;          // larger slots are page runs
  static constexpr uint64_t kMaxSlotCap = uint64_t{64} << 20;  // 64 MiB
  static constexpr int kExtentShift = kArenaExtentShift;       // extents up to 1 TiB
  static constexpr uint64_t kMaxExtents = 4096;
  // Empty slabs kept as spares (at most one per class) hold at most this.
  static constexpr uint64_t kMaxSpareBytes = 512 << 10;
  // The smallest first extent an Arena accepts.
  static constexpr uint64_t kMinArenaBytes = kPageBytes;

  // REQUIRES: first_extent.data() is page-aligned and its size is at least
  // kMinArenaBytes (only whole pages are used); it outlives the Arena, as do
  // the extents of options.grow. Its contents are not read before a slot in
  // it is allocated.
  Arena(std::span<std::byte> first_extent, ArenaOptions options);
  ~Arena();

  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // A slot of at least `bytes` bytes with a fresh gen (see above).
  // InvalidArgument when bytes > max_slot_bytes(); ResourceExhausted when the
  // budget is spent ("OOM: ... kv.maxmemory ...", see kOutOfMemory), the
  // source cannot give another extent ("arena cannot grow: ..."), or there is
  // no source and no free run fits ("arena full: ...").
  Result<SlotRef> Allocate(uint64_t bytes, Budget budget = Budget::kEnforce);

  // Returns a slot. Leaves its memory (and gen) as is; the caller clears VALID
  // first if readers might still look at it.
  // REQUIRES: `ref` came from Allocate on this Arena and is not free yet.
  void Free(const SlotRef& ref);

  std::byte* At(const SlotRef& ref) { return At(ref.offset); }
  std::byte* At(uint64_t address) { return extents_[address >> kExtentShift].data + Low(address); }
  const std::byte* At(uint64_t address) const {
    return extents_[address >> kExtentShift].data + Low(address);
  }

  // The largest slot Allocate accepts: kMaxSlotCap when the arena can grow,
  // otherwise what the first extent could hold.
  uint64_t max_slot_bytes() const;
  // The capacity Allocate(bytes) returns. REQUIRES: 0 < bytes <= kMaxSlotCap.
  static uint64_t ClassBytes(uint64_t bytes);
  // The slab size classes (slots up to kSlabMaxSlot), ascending.
  static const std::vector<uint64_t>& class_sizes();

  // The extents so far, in index order (extent i holds addresses i << kExtentShift ...).
  size_t extent_count() const { return extents_.size(); }
  std::span<std::byte> extent(size_t i) const { return {extents_[i].data, extents_[i].bytes}; }

  ArenaStats Stats() const;

 private:
  struct Extent {
    std::byte* data;
    uint64_t bytes;
    std::vector<uint32_t> slab_of_page;  // slab id + 1 per page, 0: not a slab page
  };
  struct Slab;
  struct SizeClass;

  static uint64_t Low(uint64_t address) { return address & ((uint64_t{1} << kExtentShift) - 1); }
  uint32_t& SlabOfPage(uint64_t address) {
    return extents_[address >> kExtentShift].slab_of_page[Low(address) / kPageBytes];
  }

  // Pages from the pool, counted against the budget; growing when needed.
  Result<uint64_t> TakePages(uint64_t bytes, Budget budget);
  void GivePages(uint64_t address, uint64_t bytes);
  Status Grow(uint64_t at_least);
  void AddExtent(std::span<std::byte> memory);
  // Gives every class's empty spare slab back to the pool; returns bytes freed.
  uint64_t ReleaseSpareSlabs();

  Result<uint32_t> CarveSlab(size_t class_index, Budget budget);
  void ReleaseSlab(uint32_t id);
  void Link(uint32_t id);    // into its class's list of slabs with free slots
  void Unlink(uint32_t id);
  SlotRef Hand(uint64_t address, uint64_t capacity);

  ArenaOptions options_;
  std::vector<Extent> extents_;
  uint64_t reserved_bytes_ = 0;
  internal::PageRuns free_pages_;
  uint64_t page_bytes_ = 0;  // handed out (and reserved from the budget)
  std::vector<Slab> slabs_;
  std::vector<uint32_t> unused_slab_ids_;
  std::vector<SizeClass> classes_;
  uint64_t spare_bytes_ = 0;  // in empty slabs kept as spares
  uint64_t large_slots_ = 0;
  uint64_t large_bytes_ = 0;
  uint64_t allocations_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace rampart::kv
