#include "kv/arena.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <set>

#include "kv/page_runs.h"
#include "kv/slot.h"
#include "kv/test_region.h"

namespace rampart::kv {
namespace {

// Page-aligned memory filled with garbage, as a registered region may be.
struct Region : TestRegion {
  explicit Region(size_t n) : TestRegion(n, 0xA5) {}
};

bool Disjoint(const SlotRef& a, const SlotRef& b) {
  return a.offset + a.capacity <= b.offset || b.offset + b.capacity <= a.offset;
}

TEST(PageRunsTest, TakesTheBestFitAndMergesNeighboursOnGive) {
  internal::PageRuns runs;
  runs.Add(0, 100 * 4096);
  auto a = runs.Take(10 * 4096);
  auto b = runs.Take(20 * 4096);
  auto c = runs.Take(5 * 4096);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 10u * 4096);
  EXPECT_EQ(*c, 30u * 4096);
  EXPECT_EQ(runs.free_bytes(), 65u * 4096);
  runs.Give(*a, 10 * 4096);  // a hole of 10 pages before b
  auto d = runs.Take(8 * 4096);  // best fit: the hole, not the 65-page tail
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, 0u);
  runs.Give(*d, 8 * 4096);
  runs.Give(*b, 20 * 4096);  // merges with the 10-page hole in front of it
  EXPECT_EQ(runs.runs(), 2u);
  EXPECT_EQ(runs.largest_run(), 65u * 4096);
  runs.Give(*c, 5 * 4096);  // and now with the tail: one run again
  EXPECT_EQ(runs.runs(), 1u);
  EXPECT_EQ(runs.largest_run(), 100u * 4096);
  EXPECT_FALSE(runs.Take(101 * 4096).has_value());
}

TEST(PageRunsTest, RunsOfDifferentExtentsNeverMerge) {
  internal::PageRuns runs;
  const uint64_t extent1 = uint64_t{1} << Arena::kExtentShift;
  runs.Add(0, 4 * 4096);
  runs.Add(extent1, 4 * 4096);
  EXPECT_EQ(runs.runs(), 2u);
  EXPECT_FALSE(runs.Take(8 * 4096).has_value());
  EXPECT_EQ(*runs.Take(4 * 4096), 0u);
  EXPECT_EQ(*runs.Take(4 * 4096), extent1);
}

TEST(ArenaTest, SlabClassesAreLinearThenGeometricAndLargeSlotsArePageRuns) {
  const auto& c = Arena::class_sizes();
  ASSERT_GE(c.size(), 9u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(c[i], 64 * (i + 1));
  for (size_t i = 1; i < c.size(); ++i) {
    EXPECT_GT(c[i], c[i - 1]);
    EXPECT_EQ(c[i] % 64, 0u);
    EXPECT_LE(c[i], c[i - 1] + c[i - 1] / 8 + 64) << "step after " << c[i - 1];
  }
  EXPECT_EQ(c.back(), Arena::kSlabMaxSlot);
  EXPECT_EQ(Arena::ClassBytes(1), 64u);
  EXPECT_EQ(Arena::ClassBytes(65), 128u);
  EXPECT_EQ(Arena::ClassBytes(Arena::kSlabMaxSlot), Arena::kSlabMaxSlot);
  EXPECT_EQ(Arena::ClassBytes(Arena::kSlabMaxSlot + 1), Arena::kSlabMaxSlot + 4096);
  EXPECT_EQ(Arena::ClassBytes(308024), 76u * 4096);  // the YCSB index version: 1 % slack
}

TEST(ArenaTest, AllocationsDoNotOverlapAndAreAligned) {
  Region r(4 << 20);
  Arena arena(r.span(), {});
  std::vector<SlotRef> refs;
  for (uint64_t bytes : {48, 64, 100, 500, 600, 4000, 48, 1000, 20000, 40000, 300000, 64}) {
    auto ref = arena.Allocate(bytes);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    EXPECT_GE(ref->capacity, bytes);
    EXPECT_EQ(ref->offset % 64, 0u);
    EXPECT_NE(ref->gen, 0u);
    EXPECT_EQ(LoadSlotGen(arena.At(*ref)), ref->gen);
    EXPECT_LE(ref->offset + ref->capacity, arena.extent(0).size());
    refs.push_back(*ref);
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    for (size_t j = i + 1; j < refs.size(); ++j) EXPECT_TRUE(Disjoint(refs[i], refs[j])) << i << ", " << j;
  }
}

TEST(ArenaTest, FreshZeroedMemoryStartsAtGenOneAndReuseBumpsTheGen) {
  TestRegion r(1 << 20, 0);
  Arena arena(r.span(), {});
  auto a = arena.Allocate(100);
  auto keep = arena.Allocate(100);  // keeps the slab in use
  ASSERT_TRUE(a.ok() && keep.ok());
  EXPECT_EQ(a->gen, 1u);
  arena.Free(*a);
  auto again = arena.Allocate(128);  // same class: the freed slot comes back
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->offset, a->offset);
  EXPECT_EQ(again->gen, 2u);
  arena.Free(*again);
  auto large = arena.Allocate(100000);
  ASSERT_TRUE(large.ok());
  arena.Free(*large);
  auto large_again = arena.Allocate(100000);
  ASSERT_TRUE(large_again.ok());
  EXPECT_EQ(large_again->offset, large->offset);
  EXPECT_EQ(large_again->gen, large->gen + 1);
}

TEST(ArenaTest, AFixedArenaFailsCleanlyWhenFullAndLeavesAllocatedSlotsAlone) {
  Region r(256 << 10);
  Arena arena(r.span(), {});
  std::vector<SlotRef> refs;
  Status last;
  for (int i = 0; i < 100000; ++i) {
    auto ref = arena.Allocate(1000);
    if (!ref.ok()) {
      last = ref.status();
      break;
    }
    std::memset(arena.At(*ref) + kSlotHeaderBytes, i & 0xFF, 900);
    refs.push_back(*ref);
  }
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(last.message().find("arena full"), std::string_view::npos) << last.ToString();
  EXPECT_GT(refs.size(), 200u);  // 256 KiB of 1024-byte slots, minus slab tails
  for (size_t i = 0; i < refs.size(); ++i) {
    const std::byte* p = arena.At(refs[i]) + kSlotHeaderBytes;
    for (int k = 0; k < 900; ++k) ASSERT_EQ(p[k], std::byte(i & 0xFF)) << "slot " << i;
  }
  EXPECT_EQ(arena.Allocate(arena.max_slot_bytes() + 1).status().code(),
            StatusCode::kInvalidArgument);
  arena.Free(refs.back());
  EXPECT_TRUE(arena.Allocate(1000).ok());
  ArenaStats st = arena.Stats();
  EXPECT_GE(st.failures, 2u);
  EXPECT_EQ(st.page_bytes + st.free_page_bytes, st.reserved_bytes);
  EXPECT_FALSE(st.ToString().empty());
}

// The bug behind "arena full ... 503547968 bytes free in other size classes":
// a version that grows a little on every write (a whole-value sorted set)
// walks through the size classes, and memory freed by one class must serve
// the next. Fixed arena, so a stranded byte would show as a failure.
TEST(ArenaTest, AVersionThatGrowsOnEveryWriteNeverStrandsMemory) {
  Region r(8 << 20);
  Arena arena(r.span(), {});
  std::deque<SlotRef> live;  // the versions still in their grace period
  constexpr size_t kInGrace = 8;
  for (uint64_t bytes = 100; bytes < 400000; bytes += bytes / 64 + 35) {
    auto ref = arena.Allocate(bytes);
    ASSERT_TRUE(ref.ok()) << bytes << ": " << ref.status().ToString() << arena.Stats().ToString();
    live.push_back(*ref);
    if (live.size() > kInGrace) {
      arena.Free(live.front());
      live.pop_front();
    }
  }
  // 8 versions of 350-400 KB in pages, and at most kMaxSpareBytes of empty slabs.
  EXPECT_LT(arena.Stats().page_bytes, 8u * 400000 + Arena::kMaxSpareBytes)
      << arena.Stats().ToString();
}

TEST(ArenaTest, MemoryFreedBySmallSlotsServesLargeOnesAndBack) {
  Region r(4 << 20);
  Arena arena(r.span(), {});
  for (uint64_t bytes : {200, 300000, 3000, 60000, 100}) {
    std::vector<SlotRef> refs;
    for (;;) {
      auto ref = arena.Allocate(bytes);
      if (!ref.ok()) break;
      refs.push_back(*ref);
    }
    // Nearly all of the arena held slots of this size ...
    EXPECT_GT(refs.size() * bytes, (4u << 20) * 7 / 10) << bytes;
    for (const SlotRef& ref : refs) arena.Free(ref);
    // ... and all of it is free again, except spare slabs.
    EXPECT_LE(arena.Stats().page_bytes, 64u << 10) << bytes << arena.Stats().ToString();
  }
}

TEST(ArenaTest, GrowsByExtentsWhoseAddressesCarryTheExtentIndex) {
  Region first(1 << 20);
  TestExtents source(0x5A);
  Arena arena(first.span(), ArenaOptions{.grow = &source});
  EXPECT_EQ(arena.max_slot_bytes(), Arena::kMaxSlotCap);
  std::vector<SlotRef> refs;
  for (int i = 0; i < 100; ++i) {  // 100 x 100 KB: 10 MB, ten times the first extent
    auto ref = arena.Allocate(100000);
    ASSERT_TRUE(ref.ok()) << i << ": " << ref.status().ToString();
    std::memset(arena.At(*ref) + kSlotHeaderBytes, i, 1000);
    refs.push_back(*ref);
  }
  const ArenaStats st = arena.Stats();
  EXPECT_GE(st.extents, 3u);
  EXPECT_EQ(st.extents, arena.extent_count());
  EXPECT_EQ(source.regions.size() + 1, arena.extent_count());
  // Each extent after the first is as large as all before it (doubling).
  EXPECT_EQ(arena.extent(1).size(), 1u << 20);
  EXPECT_EQ(arena.extent(2).size(), 2u << 20);
  uint64_t extents_seen = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    const uint64_t extent = refs[i].offset >> Arena::kExtentShift;
    ASSERT_LT(extent, arena.extent_count());
    extents_seen |= uint64_t{1} << extent;
    const uint64_t low = refs[i].offset & ((uint64_t{1} << Arena::kExtentShift) - 1);
    EXPECT_LE(low + refs[i].capacity, arena.extent(extent).size());
    EXPECT_EQ(arena.At(refs[i]), arena.extent(extent).data() + low);
    EXPECT_EQ(arena.At(refs[i])[kSlotHeaderBytes + 999], std::byte(i));
  }
  EXPECT_EQ(extents_seen, (uint64_t{1} << arena.extent_count()) - 1);
  // A slot larger than anything so far gets an extent of its own size.
  auto huge = arena.Allocate(40 << 20);
  ASSERT_TRUE(huge.ok()) << huge.status().ToString();
  EXPECT_GE(arena.extent(arena.extent_count() - 1).size(), 40u << 20);
}

TEST(ArenaTest, ASourceThatFailsIsReportedAndNothingChanges) {
  Region first(256 << 10);
  TestExtents source(0, /*limit_extents=*/0);
  Arena arena(first.span(), ArenaOptions{.grow = &source});
  Status last;
  size_t n = 0;
  for (; n < 1000; ++n) {
    auto ref = arena.Allocate(5000);
    if (!ref.ok()) {
      last = ref.status();
      break;
    }
  }
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(last.message().find("arena cannot grow"), std::string_view::npos) << last.ToString();
  EXPECT_NE(last.message().find("test source"), std::string_view::npos) << last.ToString();
  EXPECT_EQ(arena.extent_count(), 1u);
  EXPECT_EQ(arena.Stats().failures, 1u);
}

TEST(ArenaTest, TheBudgetLimitsPagesAcrossArenasAndExemptsTombstones) {
  Region r1(4 << 20), r2(4 << 20);
  auto budget = std::make_shared<MemoryBudget>(1 << 20);
  Arena a(r1.span(), ArenaOptions{.budget = budget});
  Arena b(r2.span(), ArenaOptions{.budget = budget});
  std::vector<SlotRef> in_a;
  for (int i = 0; i < 8; ++i) in_a.push_back(*a.Allocate(60000));  // 8 x 60 KiB pages
  EXPECT_EQ(budget->used(), a.Stats().page_bytes);
  Status refused;
  for (int i = 0; i < 100 && refused.ok(); ++i) refused = b.Allocate(60000).status();
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find(kOutOfMemory), std::string_view::npos) << refused.ToString();
  EXPECT_LE(budget->used(), 1u << 20);
  // A tombstone still gets its slot; memory freed in one arena serves the other.
  EXPECT_TRUE(b.Allocate(100, Budget::kExempt).ok());
  EXPECT_GT(budget->used(), 1u << 20);
  for (const SlotRef& ref : in_a) a.Free(ref);
  EXPECT_TRUE(b.Allocate(60000).ok());
}

TEST(ArenaTest, SpareSlabsGoBackBeforeTheArenaGrowsOrRefuses) {
  Region r(1 << 20);
  Arena arena(r.span(), {});
  // One slot in each of many classes, freed again: each class keeps an empty
  // spare slab.
  for (uint64_t bytes = 64; bytes <= Arena::kSlabMaxSlot; bytes = bytes * 5 / 4 + 64) {
    auto ref = arena.Allocate(bytes);
    ASSERT_TRUE(ref.ok()) << bytes;
    arena.Free(*ref);
  }
  EXPECT_GT(arena.Stats().page_bytes, 0u);
  // One slot as large as the whole extent fits only once the spares are gone.
  auto whole = arena.Allocate(1 << 20);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(arena.Stats().page_bytes, 1u << 20);
}

TEST(ArenaTest, ManySmallSlotsHaveNoFixedLimit) {
  Region r(16 << 20);
  Arena arena(r.span(), {});
  std::set<uint64_t> offsets;
  for (int i = 0; i < 200000; ++i) {
    auto ref = arena.Allocate(64);
    ASSERT_TRUE(ref.ok()) << i << ": " << ref.status().ToString();
    offsets.insert(ref->offset);
  }
  EXPECT_EQ(offsets.size(), 200000u);
}

TEST(ArenaTest, StatsCountSlotsPerClassAndLargeSlots) {
  Region r(1 << 20);
  Arena arena(r.span(), {});
  auto a = arena.Allocate(64);
  auto b = arena.Allocate(64);
  auto c = arena.Allocate(3000);
  auto d = arena.Allocate(50000);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  arena.Free(*b);
  ArenaStats st = arena.Stats();
  ASSERT_EQ(st.classes.size(), 2u);
  EXPECT_EQ(st.classes[0].slot_bytes, 64u);
  EXPECT_EQ(st.classes[0].used_bytes(), 64u);
  EXPECT_EQ(st.classes[1].used_bytes(), c->capacity);
  EXPECT_EQ(st.large_slots, 1u);
  EXPECT_EQ(st.used_bytes, 64u + c->capacity + d->capacity);
  // Pages hold the slots in use, the free slots of slabs and slab tails.
  EXPECT_LE(st.used_bytes + st.slab_free_bytes, st.page_bytes);
  EXPECT_GE(st.used_bytes + st.slab_free_bytes, st.page_bytes * 9 / 10);
  EXPECT_EQ(st.page_bytes + st.free_page_bytes, st.reserved_bytes);
  EXPECT_EQ(st.allocations, 4u);
}

}  // namespace
}  // namespace rampart::kv
