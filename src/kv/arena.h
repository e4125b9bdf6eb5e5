// Arena: a size-class slot allocator over one caller-provided memory range.
//
// The range is normally a registered region from transport::Fabric::Allocate
// that peers read one-sidedly; the Arena only sees a std::span<std::byte> and
// does not depend on the transport.
//
//   Arena arena(region_bytes);                      // page-aligned span
//   Result<SlotRef> ref = arena.Allocate(SlotBytes(k, v, m));
//   if (!ref.ok()) return ref.status();             // ResourceExhausted
//   WriteSlot(arena.At(*ref), {.ts = ts, .gen = ref->gen, ...});
//   ...
//   arena.Free(*ref);
//
// Size classes: 64-byte steps up to 512 B, then steps of about 12.5% (rounded
// up to 64 B) up to max_slot_bytes() = min(arena size / 4, 64 MiB), rounded
// down to 64 B. Slabs are carved from the front of the arena with a bump
// pointer, one class per slab, and never change class; freed slots go to their
// class's free list (FIFO, so a freed slot is reused as late as possible).
// When no free slot exists and the rest of the arena cannot hold another slot
// of the class, Allocate fails with ResourceExhausted and touches nothing.
// There is no limit on the number of slots other than memory.
//
// Generations. Every slot carries a u32 gen at kSlotGenOffset of its header,
// which stays in the arena while the slot is free. Allocate writes the slot's
// next gen there before returning it (1 for a never-used slot, last gen + 1 on
// reuse, skipping 0 on wrap), so a client that cached (offset, old gen) can
// never accept the slot's new contents. Allocate also clears the flags word.
//
// Thread-safety: not thread-safe. One thread (the partition's writer) owns an
// Arena and makes every call. Remote peers may read the memory concurrently;
// the Arena only writes gen and flags words with atomic stores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace rampart::kv {

// A slot handed out by Arena::Allocate.
struct SlotRef {
  uint64_t offset = 0;    // from the start of the arena; a multiple of 64
  uint64_t capacity = 0;  // the slot's size class, >= the bytes asked for
  uint32_t gen = 0;       // the slot's generation for this use (never 0)

  friend bool operator==(const SlotRef&, const SlotRef&) = default;
};

struct ArenaClassStats {
  uint64_t slot_bytes = 0;   // the class's slot size
  uint64_t slots = 0;        // carved for this class
  uint64_t free_slots = 0;   // on the free list
  uint64_t used_bytes() const { return (slots - free_slots) * slot_bytes; }
  uint64_t free_bytes() const { return free_slots * slot_bytes; }
};

struct ArenaStats {
  uint64_t arena_bytes = 0;     // the whole range
  uint64_t carved_bytes = 0;    // taken by slabs so far
  uint64_t uncarved_bytes = 0;  // still behind the bump pointer
  uint64_t used_bytes = 0;      // in allocated slots (by capacity)
  uint64_t free_bytes = 0;      // in free lists
  uint64_t allocations = 0;     // successful Allocate calls, ever
  uint64_t failures = 0;        // Allocate calls that returned an error
  std::vector<ArenaClassStats> classes;  // only classes with slots carved

  std::string ToString() const;  // one line per class, for logs and errors
};

class Arena {
 public:
  static constexpr uint64_t kMaxSlotCap = uint64_t{64} << 20;  // 64 MiB
  static constexpr uint64_t kSlotGranule = 64;

  // REQUIRES: memory.data() is 64-byte aligned (page-aligned in practice) and
  // memory.size() >= kMinArenaBytes; the memory outlives the Arena. The contents of
  // the memory are not read before a slot is first allocated.
  explicit Arena(std::span<std::byte> memory);

  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&&) = default;
  Arena& operator=(Arena&&) = default;

  // A slot of at least `bytes` bytes with a fresh gen (see above).
  // InvalidArgument when bytes > max_slot_bytes(); ResourceExhausted
  // ("arena full: ...", with the class and what is left) when no slot of the
  // class is free and none can be carved.
  Result<SlotRef> Allocate(uint64_t bytes);

  // Returns a slot to its class's free list. Leaves its memory (and gen) as
  // is; the caller clears VALID first if readers might still look at it.
  // REQUIRES: `ref` came from Allocate on this Arena and is not free yet.
  void Free(const SlotRef& ref);

  std::byte* At(const SlotRef& ref) { return memory_.data() + ref.offset; }
  std::byte* At(uint64_t offset) { return memory_.data() + offset; }
  const std::byte* At(uint64_t offset) const { return memory_.data() + offset; }

  uint64_t size() const { return memory_.size(); }
  uint64_t max_slot_bytes() const { return class_bytes_.back(); }
  // max_slot_bytes() of an Arena over `arena_bytes` bytes.
  static uint64_t MaxSlotBytesFor(uint64_t arena_bytes);
  // The smallest arena an Arena accepts.
  static constexpr uint64_t kMinArenaBytes = 4 * kSlotGranule;
  // The capacity Allocate(bytes) would return. REQUIRES: bytes <= max_slot_bytes().
  uint64_t ClassBytes(uint64_t bytes) const;
  const std::vector<uint64_t>& class_sizes() const { return class_bytes_; }

  ArenaStats Stats() const;

 private:
  struct SizeClass {
    std::deque<uint64_t> free;  // offsets of free slots, oldest first
    uint64_t slots = 0;
  };

  size_t ClassIndex(uint64_t bytes) const;
  // Carves a slab for class `index`; false when not even one slot fits.
  bool CarveSlab(size_t index);

  std::span<std::byte> memory_;
  uint64_t bump_ = 0;         // first uncarved byte
  uint64_t slab_target_ = 0;  // preferred slab size
  std::vector<uint64_t> class_bytes_;
  std::vector<SizeClass> classes_;
  uint64_t allocations_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace rampart::kv
