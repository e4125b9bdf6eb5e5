#include "kv/arena.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

#include "kv/slot.h"
#include "kv/test_region.h"

namespace rampart::kv {
namespace {

// Page-aligned memory filled with garbage, as a registered region may be.
struct Region : TestRegion {
  explicit Region(size_t n) : TestRegion(n, 0xA5) {}
};

TEST(ArenaTest, SizeClassesAreLinearThenGeometricUpToTheMax) {
  Region r(64 << 20);
  Arena arena(r.span());
  const auto& c = arena.class_sizes();
  ASSERT_GE(c.size(), 9u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(c[i], 64 * (i + 1));
  for (size_t i = 1; i < c.size(); ++i) {
    EXPECT_GT(c[i], c[i - 1]);
    EXPECT_EQ(c[i] % 64, 0u);
    if (c[i - 1] >= 512 && i + 1 < c.size()) {
      EXPECT_LE(c[i], c[i - 1] + c[i - 1] / 8 + 64) << "step after " << c[i - 1];
    }
  }
  EXPECT_EQ(arena.max_slot_bytes(), 16u << 20);  // 64 MiB / 4
  EXPECT_EQ(arena.ClassBytes(1), 64u);
  EXPECT_EQ(arena.ClassBytes(65), 128u);
  EXPECT_EQ(arena.ClassBytes(arena.max_slot_bytes()), arena.max_slot_bytes());
}

TEST(ArenaTest, AllocationsDoNotOverlapAndAreAligned) {
  Region r(1 << 20);
  Arena arena(r.span());
  std::vector<SlotRef> refs;
  for (uint64_t bytes : {48, 64, 100, 500, 600, 4000, 48, 1000, 20000}) {
    auto ref = arena.Allocate(bytes);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    EXPECT_GE(ref->capacity, bytes);
    EXPECT_EQ(ref->offset % 64, 0u);
    EXPECT_EQ(ref->gen, 1u);
    EXPECT_LE(ref->offset + ref->capacity, arena.size());
    refs.push_back(*ref);
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    for (size_t j = i + 1; j < refs.size(); ++j) {
      bool disjoint = refs[i].offset + refs[i].capacity <= refs[j].offset ||
                      refs[j].offset + refs[j].capacity <= refs[i].offset;
      EXPECT_TRUE(disjoint) << i << " and " << j;
    }
  }
}

TEST(ArenaTest, ReuseBumpsTheGenKeptInTheSlot) {
  Region r(64 << 10);
  Arena arena(r.span());
  auto a = arena.Allocate(100);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(LoadSlotGen(arena.At(*a)), a->gen);
  // Drain the class so the freed slot is the next one handed out.
  std::vector<SlotRef> others;
  for (;;) {
    auto b = arena.Allocate(100);
    if (!b.ok()) break;
    others.push_back(*b);
  }
  arena.Free(*a);
  auto again = arena.Allocate(100);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->offset, a->offset);
  EXPECT_EQ(again->gen, a->gen + 1);
  arena.Free(*again);
  auto third = arena.Allocate(128);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->offset, a->offset);
  EXPECT_EQ(third->gen, a->gen + 2);
}

TEST(ArenaTest, FullArenaFailsCleanlyAndLeavesAllocatedSlotsAlone) {
  Region r(64 << 10);
  Arena arena(r.span());
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
  EXPECT_TRUE(last.message().starts_with("arena full")) << last.ToString();
  EXPECT_GT(refs.size(), 40u);
  for (size_t i = 0; i < refs.size(); ++i) {
    const std::byte* p = arena.At(refs[i]) + kSlotHeaderBytes;
    for (int k = 0; k < 900; ++k) ASSERT_EQ(p[k], std::byte(i & 0xFF)) << "slot " << i;
  }
  // Too-large requests are InvalidArgument, not "full".
  EXPECT_EQ(arena.Allocate(arena.max_slot_bytes() + 1).status().code(),
            StatusCode::kInvalidArgument);
  // Freeing one makes room again.
  arena.Free(refs.back());
  EXPECT_TRUE(arena.Allocate(1000).ok());
  ArenaStats st = arena.Stats();
  EXPECT_GE(st.failures, 2u);
  EXPECT_LE(st.carved_bytes, st.arena_bytes);
  EXPECT_FALSE(st.ToString().empty());
}

TEST(ArenaTest, StatsTrackUsedAndFreeBytesPerClass) {
  Region r(1 << 20);
  Arena arena(r.span());
  auto a = arena.Allocate(64);
  auto b = arena.Allocate(64);
  auto c = arena.Allocate(3000);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  arena.Free(*b);
  ArenaStats st = arena.Stats();
  ASSERT_EQ(st.classes.size(), 2u);
  EXPECT_EQ(st.classes[0].slot_bytes, 64u);
  EXPECT_EQ(st.classes[0].used_bytes(), 64u);
  EXPECT_EQ(st.classes[1].used_bytes(), c->capacity);
  EXPECT_EQ(st.used_bytes, 64u + c->capacity);
  EXPECT_EQ(st.used_bytes + st.free_bytes, st.carved_bytes);
  EXPECT_EQ(st.carved_bytes + st.uncarved_bytes, st.arena_bytes);
  EXPECT_EQ(st.allocations, 3u);
}

TEST(ArenaTest, ManySmallSlotsHaveNoFixedLimit) {
  Region r(16 << 20);
  Arena arena(r.span());
  std::set<uint64_t> offsets;
  for (int i = 0; i < 200000; ++i) {
    auto ref = arena.Allocate(64);
    ASSERT_TRUE(ref.ok()) << i << ": " << ref.status().ToString();
    offsets.insert(ref->offset);
  }
  EXPECT_EQ(offsets.size(), 200000u);
}

TEST(ArenaTest, LargestSlotFitsInASmallArena) {
  Region r(4096);
  Arena arena(r.span());
  EXPECT_EQ(arena.max_slot_bytes(), 1024u);
  auto big = arena.Allocate(1024);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->capacity, 1024u);
}

}  // namespace
}  // namespace rampart::kv
