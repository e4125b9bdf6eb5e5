#include "kv/arena.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>

#include "common/size.h"
#include "kv/slot.h"

namespace rampart::kv {
namespace {

constexpr uint64_t kLinearStep = 64;
constexpr uint64_t kLinearMax = 512;
constexpr uint64_t kSlabTargetBytes = 64 << 10;  // a slab aims at this size ...
constexpr uint64_t kMinSlabSlots = 8;            // ... but holds at least 8 slots
constexpr uint64_t kMaxSlabSlots = 64;           // and at most 64 (one free bitmap word)
constexpr uint32_t kNoSlab = std::numeric_limits<uint32_t>::max();

uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

uint32_t NextGen(uint32_t gen) {
  ++gen;
  return gen == 0 ? 1 : gen;  // 0 means "never handed out"
}

std::vector<uint64_t> MakeClasses() {
  std::vector<uint64_t> sizes;
  for (uint64_t s = kLinearStep; s <= kLinearMax; s += kLinearStep) sizes.push_back(s);
  for (uint64_t s = kLinearMax;;) {
    s = RoundUp(s + s / 8, Arena::kSlotGranule);
    if (s >= Arena::kSlabMaxSlot) break;
    sizes.push_back(s);
  }
  sizes.push_back(Arena::kSlabMaxSlot);
  return sizes;
}

// Slots per slab and slab bytes of a class of `slot` bytes.
struct SlabShape {
  uint64_t slots;
  uint64_t bytes;
};
SlabShape ShapeFor(uint64_t slot) {
  const uint64_t target = std::clamp(kSlabTargetBytes / slot, kMinSlabSlots, kMaxSlabSlots);
  const uint64_t bytes = RoundUp(target * slot, Arena::kPageBytes);
  return {std::min(kMaxSlabSlots, bytes / slot), bytes};
}

}  // namespace

struct Arena::Slab {
  uint64_t address = 0;      // of its first page (= its first slot)
  uint64_t free_mask = 0;    // bit i: slot i is free
  uint32_t class_index = 0;
  uint32_t prev = kNoSlab;   // in the class's list of slabs with free slots
  uint32_t next = kNoSlab;
  bool listed = false;
  bool spare = false;        // empty and kept (counted in spare_bytes_)
};

struct Arena::SizeClass {
  uint64_t slot_bytes = 0;
  SlabShape shape{};
  uint64_t full_mask = 0;   // free_mask of an empty slab
  uint32_t head = kNoSlab;  // slabs with free slots, most recently freed into first
  uint64_t slabs = 0;
  uint64_t free_slots = 0;
};

const std::vector<uint64_t>& Arena::class_sizes() {
  static const std::vector<uint64_t> sizes = MakeClasses();
  return sizes;
}

uint64_t Arena::ClassBytes(uint64_t bytes) {
  assert(bytes > 0 && bytes <= kMaxSlotCap);
  if (bytes > kSlabMaxSlot) return RoundUp(bytes, kPageBytes);
  const auto& sizes = class_sizes();
  return *std::lower_bound(sizes.begin(), sizes.end(), bytes);
}

Arena::Arena(std::span<std::byte> first_extent, ArenaOptions options)
    : options_(std::move(options)) {
  assert(reinterpret_cast<uintptr_t>(first_extent.data()) % kPageBytes == 0);
  assert(first_extent.size() >= kMinArenaBytes);
  for (uint64_t s : class_sizes()) {
    SizeClass c;
    c.slot_bytes = s;
    c.shape = ShapeFor(s);
    c.full_mask = c.shape.slots == 64 ? ~uint64_t{0} : (uint64_t{1} << c.shape.slots) - 1;
    classes_.push_back(c);
  }
  AddExtent(first_extent.first(first_extent.size() / kPageBytes * kPageBytes));
}

Arena::~Arena() {
  if (options_.budget) options_.budget->Release(page_bytes_);
}

uint64_t Arena::max_slot_bytes() const {
  if (options_.grow != nullptr) return kMaxSlotCap;
  const uint64_t first = extents_.front().bytes;
  if (first >= kSlabMaxSlot + kPageBytes) return std::min(first, kMaxSlotCap);
  // A small fixed arena: the largest class whose slab fits.
  uint64_t best = 0;
  for (const SizeClass& c : classes_) {
    if (c.shape.bytes <= first) best = c.slot_bytes;
  }
  return best;
}

void Arena::AddExtent(std::span<std::byte> memory) {
  const uint64_t index = extents_.size();
  extents_.push_back(Extent{memory.data(), memory.size(),
                            std::vector<uint32_t>(memory.size() / kPageBytes, 0)});
  reserved_bytes_ += memory.size();
  free_pages_.Add(index << kExtentShift, memory.size());
}

Status Arena::Grow(uint64_t at_least) {
  if (options_.grow == nullptr) {
    return ResourceExhausted("arena full: no free run of ", at_least, " bytes (",
                             free_pages_.free_bytes(), " bytes free in runs of at most ",
                             free_pages_.largest_run(), " bytes, ", page_bytes_, " of ",
                             reserved_bytes_, " bytes in use)");
  }
  if (extents_.size() >= kMaxExtents) {
    return ResourceExhausted("arena cannot grow: it has the maximum of ", kMaxExtents,
                             " extents (", FormatSize(reserved_bytes_), ")");
  }
  const uint64_t step = std::clamp(reserved_bytes_, extents_.front().bytes,
                                   std::max(options_.max_extent_bytes, extents_.front().bytes));
  const uint64_t bytes = RoundUp(std::max(at_least, step), kPageBytes);
  Result<std::span<std::byte>> memory = options_.grow->NewExtent(bytes);
  if (!memory.ok()) {
    return ResourceExhausted("arena cannot grow by ", FormatSize(bytes), " (",
                             FormatSize(reserved_bytes_), " in ", extents_.size(),
                             " extents so far): ", memory.status().ToString());
  }
  assert(memory->size() == bytes);
  AddExtent(*memory);
  return Status::Ok();
}

Result<uint64_t> Arena::TakePages(uint64_t bytes, Budget budget) {
  MemoryBudget* b = options_.budget.get();
  if (b != nullptr && !b->TryReserve(bytes, budget == Budget::kExempt)) {
    // Memory parked in spare slabs counts as used; give it back and retry.
    const uint64_t freed = ReleaseSpareSlabs();
    if (freed == 0 || !b->TryReserve(bytes, budget == Budget::kExempt)) {
      return ResourceExhausted(kOutOfMemory, ": ", FormatSize(b->used()), " of ",
                               FormatSize(b->limit()), " used by this node, ",
                               FormatSize(bytes), " more asked for");
    }
  }
  std::optional<uint64_t> at = free_pages_.Take(bytes);
  if (!at && ReleaseSpareSlabs() > 0) at = free_pages_.Take(bytes);
  if (!at) {
    if (Status grown = Grow(bytes); !grown.ok()) {
      if (b != nullptr) b->Release(bytes);
      return grown;
    }
    at = free_pages_.Take(bytes);
    assert(at.has_value());
  }
  page_bytes_ += bytes;
  return *at;
}

void Arena::GivePages(uint64_t address, uint64_t bytes) {
  free_pages_.Give(address, bytes);
  page_bytes_ -= bytes;
  if (options_.budget) options_.budget->Release(bytes);
}

void Arena::Link(uint32_t id) {
  Slab& s = slabs_[id];
  SizeClass& c = classes_[s.class_index];
  s.prev = kNoSlab;
  s.next = c.head;
  if (c.head != kNoSlab) slabs_[c.head].prev = id;
  c.head = id;
  s.listed = true;
}

void Arena::Unlink(uint32_t id) {
  Slab& s = slabs_[id];
  SizeClass& c = classes_[s.class_index];
  if (s.prev != kNoSlab) slabs_[s.prev].next = s.next;
  if (s.next != kNoSlab) slabs_[s.next].prev = s.prev;
  if (c.head == id) c.head = s.next;
  s.prev = s.next = kNoSlab;
  s.listed = false;
}

Result<uint32_t> Arena::CarveSlab(size_t class_index, Budget budget) {
  SizeClass& c = classes_[class_index];
  RAMPART_ASSIGN_OR_RETURN(uint64_t address, TakePages(c.shape.bytes, budget));
  uint32_t id;
  if (!unused_slab_ids_.empty()) {
    id = unused_slab_ids_.back();
    unused_slab_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(slabs_.size());
    slabs_.emplace_back();
  }
  Slab& s = slabs_[id];
  s = Slab{};
  s.address = address;
  s.class_index = static_cast<uint32_t>(class_index);
  s.free_mask = c.full_mask;
  for (uint64_t p = 0; p < c.shape.bytes; p += kPageBytes) SlabOfPage(address + p) = id + 1;
  ++c.slabs;
  c.free_slots += c.shape.slots;
  Link(id);
  return id;
}

void Arena::ReleaseSlab(uint32_t id) {
  Slab& s = slabs_[id];
  SizeClass& c = classes_[s.class_index];
  assert(s.free_mask == c.full_mask);
  if (s.listed) Unlink(id);
  for (uint64_t p = 0; p < c.shape.bytes; p += kPageBytes) SlabOfPage(s.address + p) = 0;
  --c.slabs;
  c.free_slots -= c.shape.slots;
  if (s.spare) spare_bytes_ -= c.shape.bytes;
  s.spare = false;
  GivePages(s.address, c.shape.bytes);
  unused_slab_ids_.push_back(id);
}

uint64_t Arena::ReleaseSpareSlabs() {
  uint64_t freed = 0;
  for (SizeClass& c : classes_) {
    for (uint32_t id = c.head; id != kNoSlab;) {
      const uint32_t next = slabs_[id].next;
      if (slabs_[id].free_mask == c.full_mask) {
        ReleaseSlab(id);
        freed += c.shape.bytes;
      }
      id = next;
    }
  }
  return freed;
}

SlotRef Arena::Hand(uint64_t address, uint64_t capacity) {
  std::byte* at = At(address);
  SlotRef ref{address, capacity, NextGen(LoadSlotGen(at))};
  StoreSlotFlags(at, 0);
  StoreSlotGen(at, ref.gen);
  ++allocations_;
  return ref;
}

Result<SlotRef> Arena::Allocate(uint64_t bytes, Budget budget) {
  bytes = std::max<uint64_t>(bytes, 1);
  if (bytes > max_slot_bytes()) {
    ++failures_;
    return InvalidArgument("slot of ", bytes, " bytes exceeds the arena's maximum slot size of ",
                           max_slot_bytes(), " bytes");
  }
  if (bytes > kSlabMaxSlot) {
    const uint64_t capacity = ClassBytes(bytes);
    Result<uint64_t> address = TakePages(capacity, budget);
    if (!address.ok()) {
      ++failures_;
      return address.status().WithContext(StrCat("a ", bytes, "-byte version"));
    }
    ++large_slots_;
    large_bytes_ += capacity;
    return Hand(*address, capacity);
  }
  const auto& sizes = class_sizes();
  const size_t index = std::lower_bound(sizes.begin(), sizes.end(), bytes) - sizes.begin();
  SizeClass& c = classes_[index];
  uint32_t id = c.head;
  if (id == kNoSlab) {
    Result<uint32_t> carved = CarveSlab(index, budget);
    if (!carved.ok()) {
      ++failures_;
      return carved.status().WithContext(StrCat("a ", bytes, "-byte version"));
    }
    id = *carved;
  }
  Slab& s = slabs_[id];
  if (s.spare) {
    s.spare = false;
    spare_bytes_ -= c.shape.bytes;
  }
  const int slot = std::countr_zero(s.free_mask);
  s.free_mask &= s.free_mask - 1;
  --c.free_slots;
  if (s.free_mask == 0) {
    Unlink(id);
  } else {
    // The class's next slot is likely handed next (a Prepare of a group
    // commit allocates many at once, unless a Free comes between); its
    // header is cold, and Hand reads its generation.
    const auto next = static_cast<uint64_t>(std::countr_zero(s.free_mask));
    __builtin_prefetch(At(s.address + next * c.slot_bytes), /*rw=*/1);
  }
  return Hand(s.address + static_cast<uint64_t>(slot) * c.slot_bytes, c.slot_bytes);
}

void Arena::Free(const SlotRef& ref) {
  assert((ref.offset >> kExtentShift) < extents_.size());
  assert(ref.offset % kSlotGranule == 0);
  if (ref.capacity > kSlabMaxSlot) {
    assert(ref.capacity % kPageBytes == 0);
    --large_slots_;
    large_bytes_ -= ref.capacity;
    GivePages(ref.offset, ref.capacity);
    return;
  }
  const uint32_t id = SlabOfPage(ref.offset) - 1;
  Slab& s = slabs_[id];
  SizeClass& c = classes_[s.class_index];
  assert(c.slot_bytes == ref.capacity);
  const uint64_t slot = (ref.offset - s.address) / c.slot_bytes;
  assert((s.free_mask & (uint64_t{1} << slot)) == 0);
  s.free_mask |= uint64_t{1} << slot;
  ++c.free_slots;
  if (!s.listed) Link(id);
  // An empty slab goes back to the pool unless it is its class's only slab
  // with free slots and there is room for a spare (so that a class hovering
  // around one slab's worth does not carve and release a slab per allocation).
  if (s.free_mask != c.full_mask) return;
  const bool only = c.head == id && s.next == kNoSlab;
  if (only && spare_bytes_ + c.shape.bytes <= kMaxSpareBytes) {
    s.spare = true;
    spare_bytes_ += c.shape.bytes;
  } else {
    ReleaseSlab(id);
  }
}

ArenaStats Arena::Stats() const {
  ArenaStats st;
  st.extents = extents_.size();
  st.reserved_bytes = reserved_bytes_;
  st.page_bytes = page_bytes_;
  st.free_page_bytes = free_pages_.free_bytes();
  st.largest_free_run = free_pages_.largest_run();
  st.large_slots = large_slots_;
  st.used_bytes = large_bytes_;
  st.allocations = allocations_;
  st.failures = failures_;
  for (const SizeClass& c : classes_) {
    if (c.slabs == 0) continue;
    ArenaClassStats cs;
    cs.slot_bytes = c.slot_bytes;
    cs.slots = c.slabs * c.shape.slots;
    cs.free_slots = c.free_slots;
    st.used_bytes += cs.used_bytes();
    st.slab_free_bytes += cs.free_bytes();
    st.classes.push_back(cs);
  }
  return st;
}

std::string ArenaStats::ToString() const {
  std::string out = StrCat("arena: ", extents, " extents, ", reserved_bytes, " B reserved, ",
                           page_bytes, " B in pages, ", free_page_bytes, " B free pages (largest run ",
                           largest_free_run, "), ", used_bytes, " B in slots (", large_slots,
                           " large), ", slab_free_bytes, " B free in slabs, allocations ",
                           allocations, ", failures ", failures, "\n");
  for (const auto& c : classes) {
    out += StrCat("  class ", c.slot_bytes, " B: ", c.slots, " slots, ", c.free_slots,
                  " free, ", c.used_bytes(), " B used\n");
  }
  return out;
}

}  // namespace rampart::kv
