#include "transport/reg_cache.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

namespace rampart::transport {
namespace {

// A registrar that records what is registered.
struct FakeRegistrar {
  std::multiset<std::pair<uintptr_t, size_t>> live;
  int next = 1;
  RegistrationCache::Registrar Make() {
    return {[this](std::byte* addr, size_t len) -> Result<RegistrationCache::Handle> {
              live.insert({reinterpret_cast<uintptr_t>(addr), len});
              return reinterpret_cast<RegistrationCache::Handle>(
                  static_cast<uintptr_t>(reinterpret_cast<uintptr_t>(addr) | 1));
            },
            [this](RegistrationCache::Handle h) {
              uintptr_t addr = reinterpret_cast<uintptr_t>(h) & ~uintptr_t{1};
              auto it = live.lower_bound({addr, 0});
              ASSERT_TRUE(it != live.end() && it->first == addr);
              live.erase(it);
            }};
  }
};

alignas(4096) std::byte arena[16 * 4096];

TEST(RegistrationCache, SamePagesHitAndRegistrationsArePageAligned) {
  FakeRegistrar fake;
  RegistrationCache cache(fake.Make(), 1 << 20);
  auto a = cache.Acquire(arena + 100, 200);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(fake.live.size(), 1u);
  EXPECT_EQ(fake.live.begin()->first, reinterpret_cast<uintptr_t>(arena));
  EXPECT_EQ(fake.live.begin()->second, 4096u);
  auto b = cache.Acquire(arena + 3000, 1000);  // same page
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->handle, a->handle);
  EXPECT_EQ(cache.stats().hits, 1u);
  auto c = cache.Acquire(arena + 4000, 200);  // crosses into the next page: new registration
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(cache.stats().misses, 2u);
  cache.Release(*a);
  cache.Release(*b);
  cache.Release(*c);
  EXPECT_EQ(fake.live.size(), 2u) << "unused registrations stay cached";
  auto again = cache.Acquire(arena + 10, 10);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(cache.stats().hits, 2u);
  cache.Release(*again);
}

TEST(RegistrationCache, CapacityEvictsLeastRecentlyUsedUnusedEntries) {
  FakeRegistrar fake;
  RegistrationCache cache(fake.Make(), 2 * 4096);
  for (int page = 0; page < 4; ++page) {
    auto l = cache.Acquire(arena + page * 4096, 10);
    ASSERT_TRUE(l.ok());
    cache.Release(*l);
  }
  EXPECT_EQ(fake.live.size(), 2u);
  EXPECT_EQ(cache.stats().evictions, 2u);
  // Pages 2 and 3 (most recent) survived.
  EXPECT_TRUE(fake.live.count({reinterpret_cast<uintptr_t>(arena + 3 * 4096), 4096}));
  EXPECT_FALSE(fake.live.count({reinterpret_cast<uintptr_t>(arena), 4096}));
}

TEST(RegistrationCache, ZeroCapacityDeregistersAtRelease) {
  FakeRegistrar fake;
  RegistrationCache cache(fake.Make(), 0);
  auto l = cache.Acquire(arena, 100);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(fake.live.size(), 1u);
  cache.Release(*l);
  EXPECT_TRUE(fake.live.empty());
}

TEST(RegistrationCache, InvalidationRetiresOverlappingEntriesButNotLiveUses) {
  FakeRegistrar fake;
  RegistrationCache cache(fake.Make(), 1 << 20);
  auto in_use = cache.Acquire(arena, 100);
  auto idle = cache.Acquire(arena + 8 * 4096, 100);
  ASSERT_TRUE(in_use.ok() && idle.ok());
  cache.Release(*idle);
  // From another thread, as the munmap hook would.
  std::thread([&] { cache.Invalidate(arena, sizeof arena); }).join();
  auto fresh = cache.Acquire(arena + 10, 10);  // applies invalidations first
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(cache.stats().invalidations, 2u);
  EXPECT_NE(fresh->handle, nullptr);
  EXPECT_EQ(cache.stats().misses, 3u) << "an invalidated range must be registered anew";
  EXPECT_EQ(fake.live.size(), 2u) << "idle one dropped; in-use one kept until released";
  cache.Release(*in_use);
  EXPECT_EQ(fake.live.size(), 1u);
  cache.Release(*fresh);
}

TEST(RegistrationCache, OverflowingTheInvalidationQueueRetiresEverything) {
  FakeRegistrar fake;
  RegistrationCache cache(fake.Make(), 1 << 20);
  auto l = cache.Acquire(arena, 100);
  ASSERT_TRUE(l.ok());
  cache.Release(*l);
  static std::byte elsewhere[64];
  for (int i = 0; i < 1000; ++i) cache.Invalidate(elsewhere, 1);
  auto m = cache.Acquire(arena, 100);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(cache.stats().misses, 2u);
  cache.Release(*m);
}

TEST(RegistrationCache, EmptyBufferIsRefused) {
  FakeRegistrar fake;
  RegistrationCache cache(fake.Make(), 1 << 20);
  EXPECT_EQ(cache.Acquire(arena, 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rampart::transport
