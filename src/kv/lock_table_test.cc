#include "kv/lock_table.h"

#include <gtest/gtest.h>

#include <random>

namespace rampart::kv {
namespace {

using S = std::chrono::seconds;
constexpr LockMode kS = LockMode::kShared;
constexpr LockMode kX = LockMode::kExclusive;
constexpr AcquireOutcome kGranted = AcquireOutcome::kGranted;
constexpr AcquireOutcome kWaiting = AcquireOutcome::kWaiting;

class LockTableTest : public ::testing::Test {
 protected:
  LockTable::TimePoint At(int sec) { return LockTable::TimePoint{} + S(sec); }
  AcquireOutcome Acq(uint64_t txn, std::string_view key, LockMode mode, int sec = 0) {
    auto r = table_.Acquire(txn, key, mode, At(sec));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kWaiting;
  }
  LockTable table_;
};

TEST_F(LockTableTest, SharedLocksShare) {
  EXPECT_EQ(Acq(1, "a", kS), kGranted);
  EXPECT_EQ(Acq(2, "a", kS), kGranted);
  EXPECT_EQ(Acq(3, "a", kS), kGranted);
  EXPECT_EQ(table_.HolderCount("a"), 3u);
  EXPECT_EQ(table_.HeldMode(2, "a"), kS);
  EXPECT_EQ(Acq(2, "a", kS), kGranted);  // idempotent
  EXPECT_EQ(table_.HolderCount("a"), 3u);
  EXPECT_TRUE(table_.ReleaseAll(1, At(1)).empty());
  EXPECT_TRUE(table_.ReleaseAll(2, At(1)).empty());
  EXPECT_TRUE(table_.ReleaseAll(3, At(1)).empty());
  EXPECT_EQ(table_.key_count(), 0u);
  EXPECT_EQ(table_.txn_count(), 0u);
}

TEST_F(LockTableTest, SharedExclusiveExclude) {
  EXPECT_EQ(Acq(1, "a", kS), kGranted);
  EXPECT_EQ(Acq(2, "a", kX), kWaiting);
  EXPECT_EQ(table_.HeldMode(2, "a"), std::nullopt);
  EXPECT_EQ(table_.ReleaseAll(1, At(1)), (std::vector<LockGrant>{{2, "a", kX}}));
  EXPECT_EQ(table_.HeldMode(2, "a"), kX);
  EXPECT_EQ(Acq(3, "a", kS), kWaiting);
  EXPECT_EQ(table_.ReleaseAll(2, At(2)), (std::vector<LockGrant>{{3, "a", kS}}));
  EXPECT_EQ(table_.HeldMode(3, "a"), kS);
}

TEST_F(LockTableTest, ExclusiveExclusiveExclude) {
  EXPECT_EQ(Acq(1, "a", kX), kGranted);
  EXPECT_EQ(Acq(1, "a", kS), kGranted);  // X covers S
  EXPECT_EQ(table_.HeldMode(1, "a"), kX);
  EXPECT_EQ(Acq(2, "a", kX), kWaiting);
  EXPECT_EQ(Acq(3, "b", kX), kGranted);  // other keys are independent
  EXPECT_EQ(table_.ReleaseAll(1, At(1)), (std::vector<LockGrant>{{2, "a", kX}}));
}

TEST_F(LockTableTest, FifoNoWriterStarvation) {
  EXPECT_EQ(Acq(1, "k", kS), kGranted);
  EXPECT_EQ(Acq(2, "k", kX), kWaiting);
  // Readers arriving after a waiting writer queue behind it, although the
  // holders are all readers.
  EXPECT_EQ(Acq(3, "k", kS), kWaiting);
  EXPECT_EQ(Acq(4, "k", kS), kWaiting);
  EXPECT_EQ(Acq(5, "k", kX), kWaiting);
  EXPECT_EQ(Acq(6, "k", kS), kWaiting);
  EXPECT_EQ(table_.WaiterCount("k"), 5u);
  // Writer first, alone.
  EXPECT_EQ(table_.ReleaseAll(1, At(1)), (std::vector<LockGrant>{{2, "k", kX}}));
  // Then the run of readers, together, in arrival order; not reader 6.
  EXPECT_EQ(table_.ReleaseAll(2, At(2)),
            (std::vector<LockGrant>{{3, "k", kS}, {4, "k", kS}}));
  EXPECT_TRUE(table_.ReleaseAll(3, At(3)).empty());
  EXPECT_EQ(table_.ReleaseAll(4, At(3)), (std::vector<LockGrant>{{5, "k", kX}}));
  EXPECT_EQ(table_.ReleaseAll(5, At(4)), (std::vector<LockGrant>{{6, "k", kS}}));
  EXPECT_TRUE(table_.ReleaseAll(6, At(5)).empty());
  EXPECT_EQ(table_.key_count(), 0u);
  EXPECT_EQ(table_.txn_count(), 0u);
}

TEST_F(LockTableTest, ReleaseWakesWaitersOnEveryKeyInOrder) {
  EXPECT_EQ(Acq(1, "a", kX), kGranted);
  EXPECT_EQ(Acq(1, "b", kX), kGranted);
  EXPECT_EQ(Acq(1, "c", kS), kGranted);
  EXPECT_EQ(Acq(2, "a", kS), kWaiting);
  EXPECT_EQ(Acq(3, "b", kX), kWaiting);
  EXPECT_EQ(Acq(4, "c", kS), kGranted);
  EXPECT_EQ(Acq(5, "c", kX), kWaiting);
  EXPECT_EQ(table_.ReleaseAll(1, At(1)),
            (std::vector<LockGrant>{{2, "a", kS}, {3, "b", kX}}));
  EXPECT_EQ(table_.ReleaseAll(4, At(2)), (std::vector<LockGrant>{{5, "c", kX}}));
}

TEST_F(LockTableTest, OneWaitAtATime) {
  EXPECT_EQ(Acq(1, "a", kX), kGranted);
  EXPECT_EQ(Acq(2, "a", kX), kWaiting);
  auto r = table_.Acquire(2, "b", kX, At(0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(table_.HolderCount("b"), 0u);
  EXPECT_EQ(table_.key_count(), 1u);
}

TEST_F(LockTableTest, UpgradeWhenSoleHolder) {
  EXPECT_EQ(Acq(1, "a", kS), kGranted);
  EXPECT_EQ(Acq(2, "a", kS), kGranted);
  table_.ReleaseAll(2, At(0));
  EXPECT_EQ(Acq(1, "a", kX), kGranted);
  EXPECT_EQ(table_.HeldMode(1, "a"), kX);
  EXPECT_EQ(table_.HolderCount("a"), 1u);
}

TEST_F(LockTableTest, UpgradeWaitsForOtherReadersAheadOfQueue) {
  EXPECT_EQ(Acq(1, "a", kS), kGranted);
  EXPECT_EQ(Acq(2, "a", kS), kGranted);
  EXPECT_EQ(Acq(3, "a", kX), kWaiting);
  EXPECT_EQ(Acq(1, "a", kX), kWaiting);  // upgrade jumps ahead of txn 3
  EXPECT_EQ(table_.HeldMode(1, "a"), kS);
  // The second upgrader would deadlock with the first.
  auto r = table_.Acquire(2, "a", kX, At(0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAborted);
  EXPECT_EQ(table_.ReleaseAll(2, At(1)), (std::vector<LockGrant>{{1, "a", kX}}));
  EXPECT_EQ(table_.HeldMode(1, "a"), kX);
  EXPECT_EQ(table_.ReleaseAll(1, At(2)), (std::vector<LockGrant>{{3, "a", kX}}));
}

TEST_F(LockTableTest, UpgraderAbortsWhileWaiting) {
  EXPECT_EQ(Acq(1, "a", kS), kGranted);
  EXPECT_EQ(Acq(2, "a", kS), kGranted);
  EXPECT_EQ(Acq(1, "a", kX), kWaiting);
  EXPECT_EQ(Acq(3, "a", kS), kWaiting);
  // Txn 1 gives up its upgrade but keeps S: the reader behind can come in.
  EXPECT_EQ(table_.AbortWaiting(1, At(1)), (std::vector<LockGrant>{{3, "a", kS}}));
  EXPECT_EQ(table_.HeldMode(1, "a"), kS);
  EXPECT_EQ(table_.HolderCount("a"), 3u);
  EXPECT_FALSE(table_.IsWaiting(1));
}

TEST_F(LockTableTest, AbortWaitingOfHeadWriterLetsReadersIn) {
  EXPECT_EQ(Acq(1, "a", kS), kGranted);
  EXPECT_EQ(Acq(2, "a", kX), kWaiting);
  EXPECT_EQ(Acq(3, "a", kS), kWaiting);
  EXPECT_EQ(Acq(4, "a", kS), kWaiting);
  EXPECT_EQ(table_.AbortWaiting(2, At(1)),
            (std::vector<LockGrant>{{3, "a", kS}, {4, "a", kS}}));
  EXPECT_TRUE(table_.AbortWaiting(2, At(1)).empty());  // nothing left
  EXPECT_EQ(table_.txn_count(), 3u);                   // txn 2 held nothing
}

TEST_F(LockTableTest, ReleaseOfWaiterRemovesItsWait) {
  EXPECT_EQ(Acq(1, "a", kX), kGranted);
  EXPECT_EQ(Acq(2, "b", kX), kGranted);
  EXPECT_EQ(Acq(2, "a", kX), kWaiting);
  EXPECT_EQ(Acq(3, "b", kS), kWaiting);
  EXPECT_EQ(table_.ReleaseAll(2, At(1)), (std::vector<LockGrant>{{3, "b", kS}}));
  EXPECT_EQ(table_.WaiterCount("a"), 0u);
  EXPECT_TRUE(table_.ReleaseAll(1, At(1)).empty());
  EXPECT_TRUE(table_.ReleaseAll(99, At(1)).empty());  // unknown txn
}

TEST_F(LockTableTest, ExpiryBreaksLocksOfDeadHolders) {
  EXPECT_EQ(Acq(1, "a", kX, 0), kGranted);   // dies holding a and b
  EXPECT_EQ(Acq(1, "b", kX, 1), kGranted);
  EXPECT_EQ(Acq(2, "a", kS, 5), kWaiting);
  EXPECT_EQ(Acq(3, "b", kX, 6), kWaiting);
  EXPECT_EQ(Acq(4, "c", kX, 7), kGranted);
  // Cutoff 3: only txn 1 was inactive since before it.
  LockTable::Expired e = table_.ExpireOlderThan(At(3), At(10));
  EXPECT_EQ(e.txns, (std::vector<uint64_t>{1}));
  EXPECT_EQ(e.grants, (std::vector<LockGrant>{{2, "a", kS}, {3, "b", kX}}));
  // The grant refreshed the new holders: a cutoff of 8 spares them.
  e = table_.ExpireOlderThan(At(8), At(11));
  EXPECT_EQ(e.txns, (std::vector<uint64_t>{4}));
  EXPECT_TRUE(e.grants.empty());
  EXPECT_EQ(table_.HeldMode(2, "a"), kS);
  EXPECT_EQ(table_.HeldMode(3, "b"), kX);
  EXPECT_EQ(table_.HeldMode(4, "c"), std::nullopt);
}

TEST_F(LockTableTest, ExpiredWaiterGetsNoGrant) {
  EXPECT_EQ(Acq(1, "a", kX, 0), kGranted);
  EXPECT_EQ(Acq(2, "a", kX, 1), kWaiting);  // stale too
  EXPECT_EQ(Acq(3, "a", kX, 9), kWaiting);
  LockTable::Expired e = table_.ExpireOlderThan(At(5), At(10));
  EXPECT_EQ(e.txns, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(e.grants, (std::vector<LockGrant>{{3, "a", kX}}));
  EXPECT_EQ(table_.txn_count(), 1u);
}

TEST_F(LockTableTest, RandomOperationsKeepInvariants) {
  // Random acquire/release/abort; after every step: X is never shared, a key
  // with waiters always has a holder (no lost wakeup), grants go to txns that
  // then hold the lock and wait no more.
  std::mt19937 rng(42);
  const std::string keys[] = {"a", "b", "c", "d"};
  constexpr uint64_t kTxns = 8;
  for (int step = 0; step < 20000; ++step) {
    uint64_t txn = 1 + rng() % kTxns;
    std::vector<LockGrant> grants;
    switch (rng() % 5) {
      case 0: case 1: case 2: {
        const std::string& key = keys[rng() % 4];
        LockMode mode = rng() % 2 ? kS : kX;
        bool was_waiting = table_.IsWaiting(txn);
        auto r = table_.Acquire(txn, key, mode, At(step));
        if (was_waiting) {
          ASSERT_FALSE(r.ok());
        } else if (r.ok() && *r == kGranted) {
          ASSERT_TRUE(table_.HeldMode(txn, key).has_value());
          if (mode == kX) {
            ASSERT_EQ(table_.HeldMode(txn, key), kX);
          }
        } else if (!r.ok()) {
          ASSERT_EQ(r.status().code(), StatusCode::kAborted);
          grants = table_.ReleaseAll(txn, At(step));
        }
        break;
      }
      case 3: grants = table_.ReleaseAll(txn, At(step)); break;
      case 4: grants = table_.AbortWaiting(txn, At(step)); break;
    }
    for (const LockGrant& g : grants) {
      ASSERT_FALSE(table_.IsWaiting(g.txn));
      ASSERT_TRUE(table_.HeldMode(g.txn, g.key).has_value());
    }
    for (const std::string& key : keys) {
      int x = 0;
      for (uint64_t t = 1; t <= kTxns; ++t) x += table_.HeldMode(t, key) == kX;
      ASSERT_LE(x, 1);
      if (x == 1) {
        ASSERT_EQ(table_.HolderCount(key), 1u);
      }
      if (table_.WaiterCount(key) > 0) {
        ASSERT_GT(table_.HolderCount(key), 0u) << key;
      }
    }
  }
  for (uint64_t t = 1; t <= kTxns; ++t) table_.ReleaseAll(t, At(0));
  EXPECT_EQ(table_.key_count(), 0u);
  EXPECT_EQ(table_.txn_count(), 0u);
}

}  // namespace
}  // namespace rampart::kv
