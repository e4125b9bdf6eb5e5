#include "kv/arena.h"

#include <algorithm>
#include <cassert>

#include "common/size.h"
#include "kv/slot.h"

namespace rampart::kv {
namespace {

constexpr uint64_t kLinearStep = 64;
constexpr uint64_t kLinearMax = 512;
constexpr uint64_t kSlabMax = uint64_t{1} << 20;  // preferred slab: up to 1 MiB

uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

uint32_t NextGen(uint32_t gen) {
  ++gen;
  return gen == 0 ? 1 : gen;  // 0 means "never handed out"
}

}  // namespace

uint64_t Arena::MaxSlotBytesFor(uint64_t arena_bytes) {
  return std::max(kSlotGranule,
                  std::min<uint64_t>(arena_bytes / 4, kMaxSlotCap) / kSlotGranule * kSlotGranule);
}

Arena::Arena(std::span<std::byte> memory) : memory_(memory) {
  assert(reinterpret_cast<uintptr_t>(memory.data()) % kSlotGranule == 0);
  assert(memory.size() >= kMinArenaBytes);
  const uint64_t max_slot = MaxSlotBytesFor(memory.size());
  for (uint64_t s = kLinearStep; s <= kLinearMax && s <= max_slot; s += kLinearStep) {
    class_bytes_.push_back(s);
  }
  uint64_t s = class_bytes_.back();
  for (;;) {
    s = RoundUp(s + s / 8, kSlotGranule);
    if (s >= max_slot) break;
    class_bytes_.push_back(s);
  }
  if (class_bytes_.back() != max_slot) class_bytes_.push_back(max_slot);
  classes_.resize(class_bytes_.size());
  slab_target_ = std::clamp<uint64_t>(memory.size() / 64, kSlotGranule, kSlabMax);
}

size_t Arena::ClassIndex(uint64_t bytes) const {
  auto it = std::lower_bound(class_bytes_.begin(), class_bytes_.end(), bytes);
  assert(it != class_bytes_.end());
  return static_cast<size_t>(it - class_bytes_.begin());
}

uint64_t Arena::ClassBytes(uint64_t bytes) const {
  return class_bytes_[ClassIndex(bytes)];
}

bool Arena::CarveSlab(size_t index) {
  const uint64_t slot = class_bytes_[index];
  const uint64_t left = memory_.size() - bump_;
  const uint64_t want = std::max<uint64_t>(1, slab_target_ / slot);
  const uint64_t n = std::min(want, left / slot);
  if (n == 0) return false;
  SizeClass& c = classes_[index];
  for (uint64_t i = 0; i < n; ++i) {
    std::byte* at = memory_.data() + bump_ + i * slot;
    // A never-used slot: gen 0 so that its first use gets gen 1.
    StoreSlotFlags(at, 0);
    StoreSlotGen(at, 0);
    c.free.push_back(bump_ + i * slot);
  }
  c.slots += n;
  bump_ += n * slot;
  return true;
}

Result<SlotRef> Arena::Allocate(uint64_t bytes) {
  if (bytes > max_slot_bytes()) {
    ++failures_;
    return InvalidArgument("slot of ", bytes, " bytes exceeds the arena's maximum slot size of ",
                           max_slot_bytes(), " bytes (min(arena ", FormatSize(size()),
                           " / 4, 64MiB))");
  }
  const size_t index = ClassIndex(std::max<uint64_t>(bytes, 1));
  SizeClass& c = classes_[index];
  if (c.free.empty() && !CarveSlab(index)) {
    ++failures_;
    const ArenaStats st = Stats();
    return ResourceExhausted("arena full: no free ", class_bytes_[index],
                             "-byte slot for a ", bytes, "-byte version; ",
                             FormatSize(st.uncarved_bytes), " uncarved, ",
                             st.free_bytes, " bytes free in other size classes, ",
                             st.used_bytes, " of ", st.arena_bytes, " bytes in use");
  }
  SlotRef ref;
  ref.offset = c.free.front();
  c.free.pop_front();
  ref.capacity = class_bytes_[index];
  std::byte* at = memory_.data() + ref.offset;
  ref.gen = NextGen(LoadSlotGen(at));
  StoreSlotFlags(at, 0);
  StoreSlotGen(at, ref.gen);
  ++allocations_;
  return ref;
}

void Arena::Free(const SlotRef& ref) {
  assert(ref.offset + ref.capacity <= bump_);
  const size_t index = ClassIndex(ref.capacity);
  assert(class_bytes_[index] == ref.capacity);
  assert(ref.offset % kSlotGranule == 0);
  classes_[index].free.push_back(ref.offset);
}

ArenaStats Arena::Stats() const {
  ArenaStats st;
  st.arena_bytes = memory_.size();
  st.carved_bytes = bump_;
  st.uncarved_bytes = memory_.size() - bump_;
  st.allocations = allocations_;
  st.failures = failures_;
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (classes_[i].slots == 0) continue;
    ArenaClassStats cs;
    cs.slot_bytes = class_bytes_[i];
    cs.slots = classes_[i].slots;
    cs.free_slots = classes_[i].free.size();
    st.used_bytes += cs.used_bytes();
    st.free_bytes += cs.free_bytes();
    st.classes.push_back(cs);
  }
  return st;
}

std::string ArenaStats::ToString() const {
  std::string out = StrCat("arena ", arena_bytes, " B: carved ", carved_bytes, ", uncarved ",
                           uncarved_bytes, ", used ", used_bytes, ", free ", free_bytes,
                           ", allocations ", allocations, ", failures ", failures, "\n");
  for (const auto& c : classes) {
    out += StrCat("  class ", c.slot_bytes, " B: ", c.slots, " slots, ", c.free_slots,
                  " free, ", c.used_bytes(), " B used\n");
  }
  return out;
}

}  // namespace rampart::kv
