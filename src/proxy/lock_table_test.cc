#include "proxy/lock_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace rampart::proxy {
namespace {

using Slots = std::vector<uint32_t>;
using Keys = std::vector<std::string_view>;

// `count` keys of `table` whose slots are all different ("key0", "key1", ...).
std::vector<std::string> KeysInDistinctSlots(const LockTable& table, size_t count) {
  std::vector<std::string> keys;
  std::set<uint32_t> used;
  for (int i = 0; keys.size() < count && i < 100000; ++i) {
    std::string key = "key" + std::to_string(i);
    const std::string_view view = key;
    const uint32_t slot = table.SlotsOf(Keys{view})[0];
    if (used.insert(slot).second) keys.push_back(std::move(key));
  }
  EXPECT_EQ(keys.size(), count);
  return keys;
}

TEST(LockTable, SlotsOfSortsAndDedupes) {
  LockTable table(1024);
  EXPECT_TRUE(table.SlotsOf(Keys{}).empty());
  const Slots one = table.SlotsOf(Keys{"a"});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_LT(one[0], 1024u);
  EXPECT_EQ(table.SlotsOf(Keys{"a", "a", "a"}), one);

  // Many keys: each one's slot appears once, ascending.
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i) names.push_back("user:" + std::to_string(i % 150));
  const Keys keys(names.begin(), names.end());
  std::set<uint32_t> expected;
  for (std::string_view k : keys) expected.insert(table.SlotsOf(Keys{k})[0]);
  const Slots slots = table.SlotsOf(keys);
  EXPECT_EQ(slots, Slots(expected.begin(), expected.end()));
  EXPECT_TRUE(std::is_sorted(slots.begin(), slots.end()));
  // The same keys in another order give the same slots.
  Keys reversed(keys.rbegin(), keys.rend());
  EXPECT_EQ(table.SlotsOf(reversed), slots);
}

TEST(LockTable, SlotsDependOnTheKeyAndTheTableSizeOnly) {
  LockTable a(64), b(64), small(4), single(1);
  const Keys keys = {"x", "y", "z", "w", "v", "u", "t"};
  EXPECT_EQ(a.SlotsOf(keys), b.SlotsOf(keys));
  const Slots few = small.SlotsOf(keys);
  EXPECT_LE(few.size(), 4u);
  for (uint32_t s : few) EXPECT_LT(s, 4u);
  EXPECT_EQ(single.SlotsOf(keys), Slots{0});  // everything shares the one slot
}

TEST(LockTable, TryLockUnlockAndHeld) {
  LockTable table(256);
  const auto names = KeysInDistinctSlots(table, 3);
  const Slots slots = table.SlotsOf(Keys(names.begin(), names.end()));
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(table.HeldForTesting(), 0u);
  EXPECT_TRUE(table.TryLock(Slots{}));  // nothing to take
  EXPECT_EQ(table.HeldForTesting(), 0u);

  ASSERT_TRUE(table.TryLock(slots));
  EXPECT_EQ(table.HeldForTesting(), 3u);
  for (uint32_t s : slots) EXPECT_FALSE(table.TryLock(Slots{s})) << s;  // not reentrant
  EXPECT_EQ(table.HeldForTesting(), 3u);
  table.Unlock(slots);
  EXPECT_EQ(table.HeldForTesting(), 0u);
  ASSERT_TRUE(table.TryLock(Slots{slots[1]}));
  EXPECT_EQ(table.HeldForTesting(), 1u);
  table.Unlock(Slots{slots[1]});
  EXPECT_EQ(table.HeldForTesting(), 0u);
}

TEST(LockTable, TryLockIsAllOrNothing) {
  LockTable table(256);
  const auto names = KeysInDistinctSlots(table, 4);
  const Slots all = table.SlotsOf(Keys(names.begin(), names.end()));
  ASSERT_EQ(all.size(), 4u);
  // Whichever slot is taken, first, middle or last in the order TryLock
  // takes them, the others are left free.
  for (uint32_t taken : all) {
    ASSERT_TRUE(table.TryLock(Slots{taken}));
    EXPECT_FALSE(table.TryLock(all)) << taken;
    EXPECT_EQ(table.HeldForTesting(), 1u) << "a failed TryLock released what it took";
    for (uint32_t s : all) {
      if (s == taken) continue;
      ASSERT_TRUE(table.TryLock(Slots{s})) << s;
      table.Unlock(Slots{s});
    }
    table.Unlock(Slots{taken});
    EXPECT_EQ(table.HeldForTesting(), 0u);
  }
  // Two holders of disjoint sets do not disturb each other.
  const Slots left = {all[0], all[1]}, right = {all[2], all[3]};
  ASSERT_TRUE(table.TryLock(left));
  ASSERT_TRUE(table.TryLock(right));
  EXPECT_EQ(table.HeldForTesting(), 4u);
  EXPECT_FALSE(table.TryLock(Slots{all[1], all[2]}));
  table.Unlock(left);
  EXPECT_FALSE(table.TryLock(Slots{all[1], all[2]}));
  EXPECT_EQ(table.HeldForTesting(), 2u);
  table.Unlock(right);
  EXPECT_TRUE(table.TryLock(all));
  table.Unlock(all);
  EXPECT_EQ(table.HeldForTesting(), 0u);
}

// Two threads lock overlapping key sets and, only while holding them, bump a
// plain (non-atomic) counter per key with a read, a pause and a write: a lock
// that let two holders in would lose increments. Every successful lock is
// counted on the side; the counters must match exactly.
TEST(LockTable, ConcurrentHoldersNeverOverlap) {
  constexpr int kKeys = 6;
  constexpr int kIterations = 20000;
  const auto kDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  LockTable table(64);  // small: unrelated keys may share slots too
  std::vector<std::string> names;
  for (int k = 0; k < kKeys; ++k) names.push_back("counter:" + std::to_string(k));
  // Key sets of 1 to 3 keys; thread 0 and thread 1 walk them in other orders.
  std::vector<std::vector<int>> sets;
  for (int k = 0; k < kKeys; ++k) {
    sets.push_back({k});
    sets.push_back({k, (k + 1) % kKeys});
    sets.push_back({k, (k + 2) % kKeys, (k + 3) % kKeys});
  }
  std::vector<Slots> slots;
  for (const auto& set : sets) {
    Keys keys;
    for (int k : set) keys.push_back(names[k]);
    slots.push_back(table.SlotsOf(keys));
  }

  std::array<int64_t, kKeys> counters{};  // guarded by the keys' locks
  std::array<std::array<int64_t, kKeys>, 2> done{};  // per thread, its own
  std::array<int64_t, 2> refused{};
  std::atomic<int> ready{0};
  auto worker = [&](int t) {
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();  // start together
    for (int i = 0; i < kIterations; ++i) {
      if ((i & 1023) == 0 && std::chrono::steady_clock::now() > kDeadline) return;
      const size_t pick = t == 0 ? i % sets.size() : (sets.size() - 1 - (i * 7) % sets.size());
      if (!table.TryLock(slots[pick])) {
        ++refused[t];
        std::this_thread::yield();
        continue;
      }
      for (int k : sets[pick]) {
        volatile int64_t* counter = &counters[k];
        const int64_t seen = *counter;
        if ((i & 15) == 0) std::this_thread::yield();  // widen the window a race would need
        *counter = seen + 1;
        ++done[t][k];
      }
      table.Unlock(slots[pick]);
    }
  };
  std::thread other(worker, 1);
  worker(0);
  other.join();

  int64_t total = 0;
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_EQ(counters[k], done[0][k] + done[1][k]) << names[k];
    total += counters[k];
  }
  EXPECT_GT(total, 0);
  EXPECT_EQ(table.HeldForTesting(), 0u);
  // Not an assertion on timing, just what the run saw.
  RecordProperty("refused", static_cast<int>(refused[0] + refused[1]));
}

}  // namespace
}  // namespace rampart::proxy

namespace rampart::proxy {
namespace {

TEST(LockTableModes, SharedHoldersExcludeOnlyExclusive) {
  LockTable table(64);
  const std::vector<uint32_t> slots{3, 9};
  ASSERT_TRUE(table.TryLock(slots, LockTable::Mode::kShared));
  ASSERT_TRUE(table.TryLock(slots, LockTable::Mode::kShared));  // blind writes share
  EXPECT_FALSE(table.TryLock(std::vector<uint32_t>{9}, LockTable::Mode::kExclusive));
  table.Unlock(slots, LockTable::Mode::kShared);
  EXPECT_FALSE(table.TryLock(std::vector<uint32_t>{3}, LockTable::Mode::kExclusive));  // one left
  table.Unlock(slots, LockTable::Mode::kShared);
  EXPECT_EQ(table.HeldForTesting(), 0u);
  ASSERT_TRUE(table.TryLock(std::vector<uint32_t>{9}, LockTable::Mode::kExclusive));
  // Exclusive blocks shared, and a failed shared TryLock gives back what it took.
  EXPECT_FALSE(table.TryLock(slots, LockTable::Mode::kShared));
  EXPECT_EQ(table.HeldForTesting(), 1u);
  table.Unlock(std::vector<uint32_t>{9}, LockTable::Mode::kExclusive);
  // At most 254 shared holders of one slot.
  const std::vector<uint32_t> one{5};
  for (int i = 0; i < 254; ++i) ASSERT_TRUE(table.TryLock(one, LockTable::Mode::kShared)) << i;
  EXPECT_FALSE(table.TryLock(one, LockTable::Mode::kShared));
  for (int i = 0; i < 254; ++i) table.Unlock(one, LockTable::Mode::kShared);
  EXPECT_EQ(table.HeldForTesting(), 0u);
}

}  // namespace
}  // namespace rampart::proxy
