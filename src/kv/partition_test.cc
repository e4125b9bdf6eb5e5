#include "kv/partition.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "kv/protocol.h"
#include "kv/test_region.h"

namespace rampart::kv {
namespace {

using namespace std::chrono_literals;

// Page-aligned memory filled with garbage, as a registered region may be.
struct Region : TestRegion {
  explicit Region(size_t n) : TestRegion(n, 0x5A) {}
};

// A PREPARE item that owns its bytes (PrepareItem only views them).
struct TestItem {
  std::string key, value, metadata;
  bool tombstone = false;
  PrepareItem view() const { return PrepareItem{key, value, metadata, tombstone}; }
};

TestItem Item(std::string key, std::string value, std::vector<std::string> siblings = {}) {
  return TestItem{std::move(key), std::move(value),
                  siblings.empty() ? "" : EncodeSiblings(siblings), false};
}

TestItem Tombstone(std::string key, std::vector<std::string> siblings = {}) {
  return TestItem{std::move(key), "", siblings.empty() ? "" : EncodeSiblings(siblings), true};
}

// Partition::Prepare over items that own their bytes.
Status Prepare(Partition& p, uint64_t ts, const std::vector<TestItem>& items,
               Clock::time_point now) {
  std::vector<PrepareItem> views;
  for (const TestItem& item : items) views.push_back(item.view());
  return p.Prepare(ts, views, now);
}

class PartitionTest : public ::testing::Test {
 protected:
  explicit PartitionTest(size_t arena_bytes = 8 << 20, PartitionOptions options = {})
      : region_(arena_bytes), p_(region_.span(), options) {}

  Status Put(uint64_t ts, const std::vector<TestItem>& items) {
    RAMPART_RETURN_IF_ERROR(Prepare(p_, ts, items, now_));
    return p_.Commit(ts, now_);
  }

  // The bytes of a slot as a one-sided reader would copy them.
  std::vector<std::byte> ReadRemote(uint64_t offset, uint64_t bytes) {
    const std::byte* at = p_.arena().At(offset);
    return std::vector<std::byte>(at, at + bytes);
  }

  Status Validate(const VersionView& v, std::string_view key) {
    auto bytes = ReadRemote(v.slot_offset, v.slot_bytes);
    return ValidateSlot(bytes, key, v.gen).status();
  }

  Region region_;
  Partition p_;
  Clock::time_point now_ = Clock::time_point() + 1000s;
};

TEST_F(PartitionTest, PrepareCommitGetRoundTrip) {
  ASSERT_TRUE(Put(10, {Item("a", "A1", {"b"}), Item("b", "B1", {"a"})}).ok());
  auto got = p_.Get(std::vector<std::string>{"a", "b", "c"});
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(got[0].has_value());
  EXPECT_EQ(got[0]->ts, 10u);
  EXPECT_EQ(got[0]->key, "a");
  EXPECT_EQ(got[0]->value, "A1");
  EXPECT_EQ(*DecodeSiblings(got[0]->metadata), (std::vector<std::string_view>{"b"}));
  EXPECT_TRUE(got[0]->committed);
  EXPECT_TRUE(got[0]->latest);
  EXPECT_FALSE(got[0]->tombstone);
  ASSERT_TRUE(got[1].has_value());
  EXPECT_EQ(got[1]->value, "B1");
  EXPECT_FALSE(got[2].has_value());
  // The slot address and gen a GET* client would cache validate.
  EXPECT_TRUE(Validate(*got[0], "a").ok());
  EXPECT_TRUE(Validate(*got[1], "b").ok());
}

TEST_F(PartitionTest, PreparedVersionIsInvisibleToGetButReadableByTs) {
  ASSERT_TRUE(Put(5, {Item("k", "old")}).ok());
  ASSERT_TRUE(Prepare(p_, 9, {Item("k", "new", {"j"})}, now_).ok());
  EXPECT_EQ(p_.Get("k")->value, "old");  // the last committed stays readable
  auto repair = p_.GetByTs("k", 9);      // RAMP repair round
  ASSERT_TRUE(repair.has_value());
  EXPECT_EQ(repair->value, "new");
  EXPECT_FALSE(repair->committed);
  EXPECT_EQ(*DecodeSiblings(repair->metadata), (std::vector<std::string_view>{"j"}));
  // A prepared slot is not VALID, so a one-sided reader would refuse it.
  EXPECT_EQ(Validate(*repair, "k").code(), StatusCode::kNotFound);
  EXPECT_FALSE(p_.GetByTs("k", 7).has_value());
  ASSERT_TRUE(p_.Commit(9, now_).ok());
  EXPECT_EQ(p_.Get("k")->value, "new");
}

TEST_F(PartitionTest, LatestCommitOnlyMovesForward) {
  ASSERT_TRUE(Prepare(p_, 9, {Item("k", "nine")}, now_).ok());
  ASSERT_TRUE(Prepare(p_, 5, {Item("k", "five")}, now_).ok());
  ASSERT_TRUE(p_.Commit(9, now_).ok());
  ASSERT_TRUE(p_.Commit(5, now_).ok());
  EXPECT_EQ(p_.LatestCommit("k"), 9u);
  auto latest = p_.Get("k");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->value, "nine");
  EXPECT_TRUE(Validate(*latest, "k").ok());
  auto five = p_.GetByTs("k", 5);
  ASSERT_TRUE(five.has_value());
  EXPECT_EQ(five->value, "five");
  EXPECT_TRUE(five->committed);
  EXPECT_FALSE(five->latest);
  EXPECT_EQ(Validate(*five, "k").code(), StatusCode::kNotFound);  // never VALID
}

TEST_F(PartitionTest, CommitSupersedesTheOldSlotsValidBit) {
  ASSERT_TRUE(Put(1, {Item("k", "v1")}).ok());
  VersionView v1 = *p_.Get("k");
  ASSERT_TRUE(Put(2, {Item("k", "v2")}).ok());
  Status st = Validate(v1, "k");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_TRUE(st.message().starts_with("superseded")) << st.ToString();
  EXPECT_TRUE(Validate(*p_.Get("k"), "k").ok());
}

TEST_F(PartitionTest, CommitIsIdempotentAndUnknownTsIsOk) {
  EXPECT_TRUE(p_.Commit(77, now_).ok());
  ASSERT_TRUE(Put(3, {Item("k", "v")}).ok());
  EXPECT_TRUE(p_.Commit(3, now_).ok());
  EXPECT_EQ(p_.Get("k")->value, "v");
  EXPECT_EQ(p_.Stats().reclaim_queued, 0u);
}

TEST_F(PartitionTest, RePrepareIsIdempotent) {
  ASSERT_TRUE(Prepare(p_, 4, {Item("k", "v")}, now_).ok());
  const uint64_t used = p_.Stats().arena.used_bytes;
  ASSERT_TRUE(Prepare(p_, 4, {Item("k", "v"), Item("m", "w")}, now_).ok());
  EXPECT_EQ(p_.Stats().versions, 2u);
  EXPECT_GT(p_.Stats().arena.used_bytes, used);
  ASSERT_TRUE(p_.Commit(4, now_).ok());
  ASSERT_TRUE(Prepare(p_, 4, {Item("k", "v")}, now_).ok());  // after commit
  EXPECT_EQ(p_.Stats().versions, 2u);
  EXPECT_EQ(p_.Get("m")->value, "w");
  EXPECT_TRUE(p_.Get("k")->committed);
}

TEST_F(PartitionTest, TombstonesAreCommittedVersions) {
  ASSERT_TRUE(Put(1, {Item("k", "v")}).ok());
  ASSERT_TRUE(Put(2, {Tombstone("k", {"x"})}).ok());
  auto got = p_.Get("k");
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->tombstone);
  EXPECT_EQ(got->ts, 2u);
  EXPECT_TRUE(got->value.empty());
  EXPECT_EQ(*DecodeSiblings(got->metadata), (std::vector<std::string_view>{"x"}));
  auto bytes = ReadRemote(got->slot_offset, got->slot_bytes);
  auto v = ValidateSlot(bytes, "k", got->gen);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->tombstone());
  // The tombstone is the latest and survives GC; the old value does not.
  p_.Gc(now_ + 1h);
  EXPECT_TRUE(p_.Get("k")->tombstone);
  EXPECT_FALSE(p_.GetByTs("k", 1).has_value());
  ASSERT_TRUE(Put(3, {Item("k", "back")}).ok());
  EXPECT_EQ(p_.Get("k")->value, "back");
}

TEST_F(PartitionTest, GcKeepsVersionsWithinGraceAndReclaimsAfter) {
  ASSERT_TRUE(Put(1, {Item("k", "v1")}).ok());
  ASSERT_TRUE(Put(2, {Item("k", "v2")}).ok());
  EXPECT_EQ(p_.Gc(now_ + 4s), 0u);  // default grace 5 s
  ASSERT_TRUE(p_.GetByTs("k", 1).has_value());
  EXPECT_EQ(p_.GetByTs("k", 1)->value, "v1");
  EXPECT_EQ(p_.Gc(now_ + 5s), 1u);
  EXPECT_FALSE(p_.GetByTs("k", 1).has_value());
  EXPECT_EQ(p_.Get("k")->value, "v2");  // never the latest
  EXPECT_EQ(p_.Gc(now_ + 1000s), 0u);
  EXPECT_EQ(p_.Get("k")->value, "v2");
  EXPECT_EQ(p_.Stats().reclaimed, 1u);
  EXPECT_EQ(p_.Stats().versions, 1u);
}

TEST_F(PartitionTest, GcReclaimsVersionsCommittedBehindTheLatest) {
  ASSERT_TRUE(Prepare(p_, 5, {Item("k", "five")}, now_).ok());
  ASSERT_TRUE(Put(9, {Item("k", "nine")}).ok());
  ASSERT_TRUE(p_.Commit(5, now_ + 2s).ok());
  EXPECT_EQ(p_.Gc(now_ + 6s), 0u);
  EXPECT_TRUE(p_.GetByTs("k", 5).has_value());
  EXPECT_EQ(p_.Gc(now_ + 7s), 1u);
  EXPECT_FALSE(p_.GetByTs("k", 5).has_value());
  EXPECT_EQ(p_.Get("k")->value, "nine");
}

// A hot key holds a version per write of the last grace period (thousands
// here): every one stays readable by its ts, the oldest leave first, one
// stuck prepare in the middle holds nothing up, and the latest stays.
TEST_F(PartitionTest, AHotKeysThousandsOfVersionsStayReadableAndLeaveInOrder) {
  constexpr uint64_t kWrites = 3000, kStuck = 1000;  // ts kStuck is prepared, never committed
  auto at = [&](uint64_t ts) { return now_ + std::chrono::milliseconds(ts); };
  for (uint64_t ts = 1; ts <= kWrites; ++ts) {
    ASSERT_TRUE(Prepare(p_, ts, {Item("hot", StrCat("v", ts))}, at(ts)).ok());
    if (ts != kStuck) ASSERT_TRUE(p_.Commit(ts, at(ts)).ok());
  }
  EXPECT_EQ(p_.Stats().versions, kWrites);
  EXPECT_EQ(p_.Get("hot")->value, StrCat("v", kWrites));
  for (uint64_t ts : {uint64_t{1}, uint64_t{999}, kStuck, uint64_t{1001}, uint64_t{2500}}) {
    ASSERT_TRUE(p_.GetByTs("hot", ts).has_value()) << ts;
    EXPECT_EQ(p_.GetByTs("hot", ts)->value, StrCat("v", ts));
  }
  // Grace 5 s: versions superseded by the commit at 1,500 ms or earlier go.
  EXPECT_EQ(p_.Gc(at(1500) + 5s), 1498u);  // 1..1499 but the stuck one
  EXPECT_FALSE(p_.GetByTs("hot", 1).has_value());
  EXPECT_FALSE(p_.GetByTs("hot", 1499).has_value());
  EXPECT_TRUE(p_.GetByTs("hot", kStuck).has_value());
  ASSERT_TRUE(p_.GetByTs("hot", 1500).has_value());
  EXPECT_EQ(p_.GetByTs("hot", 1500)->value, "v1500");
  EXPECT_EQ(p_.Stats().versions, kWrites - 1498);
  // After the prepare timeout (30 s) only the latest is left.
  EXPECT_EQ(p_.Gc(now_ + 1h), kWrites - 1498 - 1);
  EXPECT_FALSE(p_.GetByTs("hot", kStuck).has_value());
  EXPECT_FALSE(p_.GetByTs("hot", kWrites - 1).has_value());
  EXPECT_EQ(p_.Get("hot")->value, StrCat("v", kWrites));
  EXPECT_EQ(p_.Stats().versions, 1u);
  // And the key takes writes again.
  ASSERT_TRUE(Put(kWrites + 1, {Item("hot", "again")}).ok());
  EXPECT_EQ(p_.Get("hot")->value, "again");
}

TEST_F(PartitionTest, PreparedNeverCommittedExpiresAfterTimeout) {
  ASSERT_TRUE(Put(1, {Item("k", "committed")}).ok());
  ASSERT_TRUE(Prepare(p_, 2, {Item("k", "orphan"), Item("new", "x")}, now_).ok());
  EXPECT_EQ(p_.Gc(now_ + 29s), 0u);
  EXPECT_TRUE(p_.GetByTs("k", 2).has_value());
  EXPECT_EQ(p_.Gc(now_ + 30s), 2u);
  EXPECT_FALSE(p_.GetByTs("k", 2).has_value());
  EXPECT_FALSE(p_.GetByTs("new", 2).has_value());
  EXPECT_EQ(p_.Get("k")->value, "committed");
  PartitionStats st = p_.Stats();
  EXPECT_EQ(st.expired_prepares, 2u);
  EXPECT_EQ(st.keys, 1u);  // "new" had nothing else and is gone
  EXPECT_EQ(st.pending_txns, 0u);
  EXPECT_TRUE(p_.Commit(2, now_ + 31s).ok());  // late commit: nothing to do
  EXPECT_EQ(p_.Get("k")->value, "committed");
}

TEST_F(PartitionTest, SlotReuseBumpsGenSoAStaleCachedAddressFails) {
  ASSERT_TRUE(Put(1, {Item("k", "v1")}).ok());
  const VersionView cached = *p_.Get("k");  // what a GET* client caches
  const uint64_t offset = cached.slot_offset;
  const uint32_t gen = cached.gen;
  ASSERT_TRUE(Put(2, {Item("k", "v2")}).ok());
  p_.Gc(now_ + 10s);
  // Write until the freed slot is handed out again (same size class).
  bool reused = false;
  for (uint64_t ts = 3; ts < 20000 && !reused; ++ts) {
    ASSERT_TRUE(Put(ts, {Item("k" + std::to_string(ts), "vv")}).ok());
    auto v = p_.Get("k" + std::to_string(ts));
    if (v->slot_offset == offset) {
      reused = true;
      EXPECT_NE(v->gen, gen);
      EXPECT_TRUE(Validate(*v, v->key).ok());
    }
  }
  ASSERT_TRUE(reused);
  auto bytes = ReadRemote(offset, cached.slot_bytes);
  Status st = ValidateSlot(bytes, "k", gen).status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_TRUE(st.message().starts_with("stale gen")) << st.ToString();
}

TEST_F(PartitionTest, LiveKeysCountsLatestCommittedVersionsThatAreNotTombstones) {
  EXPECT_EQ(p_.LiveKeys(), 0u);
  ASSERT_TRUE(Put(1, {Item("a", "1"), Item("b", "1")}).ok());
  EXPECT_EQ(p_.LiveKeys(), 2u);
  ASSERT_TRUE(Put(2, {Item("a", "2")}).ok());  // overwrite
  EXPECT_EQ(p_.LiveKeys(), 2u);
  ASSERT_TRUE(Prepare(p_, 3, {Item("c", "1"), Tombstone("a")}, now_).ok());
  EXPECT_EQ(p_.LiveKeys(), 2u);  // prepared versions do not count
  ASSERT_TRUE(p_.Commit(3, now_).ok());
  EXPECT_EQ(p_.LiveKeys(), 2u);  // b, c
  ASSERT_TRUE(Put(4, {Tombstone("a")}).ok());  // tombstone over a tombstone
  EXPECT_EQ(p_.LiveKeys(), 2u);
  ASSERT_TRUE(Put(5, {Tombstone("never-written")}).ok());
  EXPECT_EQ(p_.LiveKeys(), 2u);
  // A delete committed behind the latest (c@3) changes nothing.
  ASSERT_TRUE(Put(2, {Tombstone("c")}).ok());
  EXPECT_EQ(p_.Get("c")->value, "1");
  EXPECT_EQ(p_.LiveKeys(), 2u);
  // Gc reclaims superseded versions (and an expired prepare), never a latest.
  ASSERT_TRUE(Prepare(p_, 9, {Item("d", "orphan")}, now_).ok());
  EXPECT_GT(p_.Gc(now_ + 1h), 0u);
  EXPECT_EQ(p_.LiveKeys(), 2u);
  ASSERT_TRUE(Put(6, {Item("a", "back")}).ok());
  EXPECT_EQ(p_.LiveKeys(), 3u);
  const size_t flushed = p_.Flush();
  EXPECT_EQ(flushed, p_.Stats().flushed);
  EXPECT_EQ(p_.LiveKeys(), 0u);
  ASSERT_TRUE(Put(7, {Item("a", "again")}).ok());
  EXPECT_EQ(p_.LiveKeys(), 1u);
}

TEST_F(PartitionTest, LiveUserKeysLeaveOutInternalKeys) {
  const std::string page = std::string(wire::kInternalKeyPrefix) + "page-of-h";
  ASSERT_TRUE(Put(1, {Item("h", "header"), Item(page, "p")}).ok());
  EXPECT_EQ(p_.LiveKeys(), 2u);
  EXPECT_EQ(p_.LiveUserKeys(), 1u);
  ASSERT_TRUE(Put(2, {Tombstone(page)}).ok());
  EXPECT_EQ(p_.LiveUserKeys(), 1u);
  EXPECT_EQ(p_.LiveKeys(), 1u);
  ASSERT_TRUE(Put(3, {Item(page, "p2"), Tombstone("h")}).ok());
  EXPECT_EQ(p_.LiveUserKeys(), 0u);
  EXPECT_EQ(p_.LiveKeys(), 1u);
}

// ScanKeys against the set of live keys through random writes and deletes
// between its calls: every key live for the whole scan is visited, no
// tombstoned key is, positions grow, and a scan ends.
TEST_F(PartitionTest, ScanKeysVisitsEveryKeyLiveThroughoutInHashOrder) {
  std::mt19937_64 rng(4);
  std::set<std::string> live;
  uint64_t ts = 1;
  for (int i = 0; i < 3000; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(Put(ts++, {Item(k, "v" + k)}).ok());
    live.insert(k);
  }
  for (size_t max_keys : {1, 7, 100, 5000}) {
    const std::set<std::string> stable = live;  // minus what this scan deletes
    std::set<std::string> touched, seen;
    uint64_t from = 0;
    for (int call = 0; call < 100000; ++call) {
      uint64_t last_hash = 0;
      std::optional<uint64_t> next = p_.ScanKeys(from, max_keys, [&](const VersionView& v) {
        const std::string key(v.key);
        EXPECT_TRUE(live.contains(key)) << key << " visited but not live";
        EXPECT_EQ(v.value, "v" + key);
        EXPECT_GE(Partition::KeyHash(key), last_hash) << "out of hash order";
        last_hash = Partition::KeyHash(key);
        seen.insert(key);
      });
      // Churn between calls: delete one key, write a new one.
      const std::string gone = "k" + std::to_string(rng() % 3000);
      if (live.erase(gone) > 0) {
        ASSERT_TRUE(Put(ts++, {Tombstone(gone)}).ok());
        touched.insert(gone);
      }
      const std::string fresh = "n" + std::to_string(ts);
      ASSERT_TRUE(Put(ts++, {Item(fresh, "v" + fresh)}).ok());
      live.insert(fresh);
      if (!next.has_value()) break;
      ASSERT_GT(*next, from) << "no progress";
      EXPECT_EQ(*next % (uint64_t{1} << Partition::kScanGrainBits), 0u);
      from = *next;
    }
    for (const std::string& k : stable) {
      if (!touched.contains(k)) EXPECT_TRUE(seen.contains(k)) << k << " missed, max_keys " << max_keys;
    }
  }
}

// LiveKeys() against a count of Get() over every key ever written, through
// random puts, tombstones, prepares committed late or never, commits behind
// the latest, GC, expiry and flushes.
TEST_F(PartitionTest, LiveKeysAgreesWithABruteForceCount) {
  constexpr int kKeys = 40;
  std::mt19937_64 rng(8);
  auto brute_force = [&] {
    uint64_t n = 0;
    for (int k = 0; k < kKeys; ++k) {
      auto v = p_.Get("key" + std::to_string(k));
      if (v && !v->tombstone) ++n;
    }
    return n;
  };
  std::vector<uint64_t> pending;
  uint64_t ts = 100;
  int flushes = 0;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 100);
    if (op < 60) {
      // A transaction over a few keys, some deletes; ts sometimes behind.
      std::vector<TestItem> items;
      std::set<int> keys;
      for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) keys.insert(rng() % kKeys);
      for (int k : keys) {
        std::string key = "key" + std::to_string(k);
        items.push_back(rng() % 3 == 0 ? Tombstone(key) : Item(key, "v" + std::to_string(ts)));
      }
      const uint64_t t = rng() % 8 == 0 ? ts - 1 - rng() % 50 : ++ts;
      if (!Prepare(p_, t, items, now_).ok()) continue;  // (key, t) may exist already
      if (rng() % 4 == 0) {
        pending.push_back(t);  // committed later, or never
      } else {
        ASSERT_TRUE(p_.Commit(t, now_).ok());
      }
    } else if (op < 75 && !pending.empty()) {
      const size_t i = rng() % pending.size();
      ASSERT_TRUE(p_.Commit(pending[i], now_).ok());
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op < 99) {
      now_ += std::chrono::milliseconds(rng() % 3000);
      p_.Gc(now_);
    } else {
      p_.Flush();
      pending.clear();
      ++flushes;
    }
    ASSERT_EQ(p_.LiveKeys(), brute_force()) << "step " << step;
  }
  EXPECT_GT(flushes, 0);
  EXPECT_GT(p_.Stats().reclaimed, 0u);
  EXPECT_GT(p_.Stats().expired_prepares, 0u);
}

TEST_F(PartitionTest, FlushDropsEveryVersionAndThePartitionIsReusable) {
  ASSERT_TRUE(Put(1, {Item("a", "1", {"b"}), Item("b", "1", {"a"})}).ok());
  ASSERT_TRUE(Put(2, {Item("a", "2")}).ok());          // a@1 waits for GC
  ASSERT_TRUE(Put(3, {Tombstone("b")}).ok());
  ASSERT_TRUE(Prepare(p_, 4, {Item("c", "prepared")}, now_).ok());
  const PartitionStats before = p_.Stats();
  EXPECT_EQ(before.versions, 5u);
  EXPECT_GT(before.reclaim_queued, 0u);
  EXPECT_GT(before.arena.used_bytes, 0u);

  EXPECT_EQ(p_.Flush(), 5u);
  PartitionStats st = p_.Stats();
  EXPECT_EQ(st.keys, 0u);
  EXPECT_EQ(st.versions, 0u);
  EXPECT_EQ(st.pending_txns, 0u);
  EXPECT_EQ(st.reclaim_queued, 0u);
  EXPECT_EQ(st.flushed, 5u);
  EXPECT_EQ(st.reclaimed, 0u);  // Flush is not GC
  EXPECT_EQ(st.arena.used_bytes, 0u);  // every slot is back on a free list
  EXPECT_EQ(st.arena.allocations, before.arena.allocations);
  for (const char* k : {"a", "b", "c"}) {
    EXPECT_FALSE(p_.Get(k).has_value()) << k;
    EXPECT_EQ(p_.LatestCommit(k), 0u) << k;
  }
  EXPECT_FALSE(p_.GetByTs("a", 1).has_value());
  EXPECT_FALSE(p_.GetByTs("c", 4).has_value());
  // The COMMIT of a flushed prepare finds nothing; GC finds nothing to do.
  EXPECT_TRUE(p_.Commit(4, now_).ok());
  EXPECT_FALSE(p_.Get("c").has_value());
  EXPECT_EQ(p_.Gc(now_ + 1h), 0u);
  EXPECT_EQ(p_.Flush(), 0u);  // flushing an empty partition

  // Reuse: the same keys at lower timestamps than before are the latest now.
  ASSERT_TRUE(Put(2, {Item("a", "new", {"b"}), Item("b", "new", {"a"})}).ok());
  for (const char* k : {"a", "b"}) {
    auto v = p_.Get(k);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->value, "new");
    EXPECT_TRUE(Validate(*v, k).ok());
  }
  ASSERT_TRUE(Put(5, {Item("a", "newer")}).ok());
  EXPECT_EQ(p_.Gc(now_ + 5s), 1u);
  EXPECT_EQ(p_.Stats().versions, 2u);
  EXPECT_EQ(p_.LiveKeys(), 2u);
}

TEST_F(PartitionTest, AddressCachedBeforeAFlushIsRefused) {
  ASSERT_TRUE(Put(1, {Item("k", "v1")}).ok());
  const VersionView cached = *p_.Get("k");  // what a GET* client caches
  ASSERT_TRUE(Validate(cached, "k").ok());
  p_.Flush();
  // Not reused yet: VALID was cleared with the flags.
  Status st = Validate(cached, "k");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_TRUE(st.message().starts_with("superseded")) << st.ToString();
  // Write the same key again until the flushed slot is handed out again.
  bool reused = false;
  for (uint64_t ts = 2; ts < 20000 && !reused; ++ts) {
    ASSERT_TRUE(Put(ts, {Item("k", "v1")}).ok());
    auto v = p_.Get("k");
    if (v->slot_offset == cached.slot_offset) {
      reused = true;
      EXPECT_NE(v->gen, cached.gen);  // the arena's gen rule survived the flush
      EXPECT_TRUE(Validate(*v, "k").ok());
    }
    p_.Flush();  // frees the slot at once, no grace period
  }
  ASSERT_TRUE(reused);
  auto bytes = ReadRemote(cached.slot_offset, cached.slot_bytes);
  st = ValidateSlot(bytes, "k", cached.gen).status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_TRUE(st.message().starts_with("stale gen")) << st.ToString();
}

TEST(PartitionOptionsTest, CheckOptionsWantsTheLargestVersionToFit) {
  PartitionOptions o;  // 1 KiB keys, 1 MiB values
  EXPECT_TRUE(Partition::CheckOptions(o).ok());
  o.max_value_bytes = 63 << 20;
  EXPECT_TRUE(Partition::CheckOptions(o).ok());
  o.max_value_bytes = 64 << 20;  // + key + 64 KiB metadata: over the 64 MiB slot
  Status st = Partition::CheckOptions(o);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("max_value_bytes"), std::string_view::npos) << st.ToString();
  o = PartitionOptions{};
  o.max_key_bytes = 0;
  EXPECT_FALSE(Partition::CheckOptions(o).ok());
}

TEST(PartitionGrowthTest, AGrowingPartitionTakesMoreThanItsFirstExtent) {
  Region first(1 << 20);
  TestExtents source;
  PartitionOptions o;
  o.arena.grow = &source;
  o.grace_period = Clock::duration::zero();
  Partition p(first.span(), o);
  const std::string value(200000, 'v');
  for (uint64_t ts = 1; ts <= 40; ++ts) {  // 40 keys of 200 KB: 8 MB
    const std::string key = "k" + std::to_string(ts);
    std::vector<PrepareItem> items = {{key, value, "", false}};
    ASSERT_TRUE(p.Prepare(ts, items, Clock::now()).ok()) << ts;
    ASSERT_TRUE(p.Commit(ts, Clock::now()).ok());
  }
  EXPECT_GE(p.arena().extent_count(), 4u);
  for (uint64_t ts = 1; ts <= 40; ++ts) {
    auto v = p.Get("k" + std::to_string(ts));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->value, value);
  }
}

TEST(PartitionGrowthTest, MaxmemoryRefusesWritesButNotDeletes) {
  Region first(8 << 20);
  PartitionOptions o;
  o.arena.budget = std::make_shared<MemoryBudget>(1 << 20);
  Partition p(first.span(), o);
  const std::string value(100000, 'v');
  Status refused;
  uint64_t ts = 1;
  for (; ts < 100 && refused.ok(); ++ts) {
    const std::string key = "k" + std::to_string(ts);
    std::vector<PrepareItem> items = {{key, value, "", false}};
    refused = p.Prepare(ts, items, Clock::now());
    if (refused.ok()) {
      ASSERT_TRUE(p.Commit(ts, Clock::now()).ok());
    }
  }
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find(kOutOfMemory), std::string_view::npos) << refused.ToString();
  std::vector<PrepareItem> del = {{"k1", "", "", true}};
  EXPECT_TRUE(p.Prepare(ts, del, Clock::now()).ok());
}

TEST_F(PartitionTest, LimitsAreInvalidArgument) {
  PartitionOptions o = p_.options();
  Status st = Prepare(p_, 1, {Item(std::string(o.max_key_bytes + 1, 'k'), "v")}, now_);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("max_key_bytes"), std::string_view::npos) << st.ToString();
  st = Prepare(p_, 1, {Item("k", std::string(o.max_value_bytes + 1, 'v'))}, now_);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("max_value_bytes"), std::string_view::npos) << st.ToString();
  EXPECT_EQ(Prepare(p_, 1, {Item("", "v")}, now_).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Prepare(p_, 1, {Item("a", "1"), Item("a", "2")}, now_).code(),
            StatusCode::kInvalidArgument);
  st = Prepare(p_, 1, {Item("b", "1"), Item("a", "2"), Item("c", "3"), Item("b", "4")}, now_);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("appears twice"), std::string_view::npos) << st.ToString();
  EXPECT_EQ(Prepare(p_, 0, {Item("a", "1")}, now_).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(Prepare(p_, 1, {Item(std::string(o.max_key_bytes, 'k'),
                                             std::string(o.max_value_bytes, 'v'))},
                         now_)
                  .ok());
  EXPECT_EQ(p_.Stats().versions, 1u);
}

TEST_F(PartitionTest, AnIndexedKeyTwiceInOnePrepareIsRefusedAndNothingWritten) {
  // Indexed keys are told apart by their entries, new ones by their bytes.
  ASSERT_TRUE(Prepare(p_, 2, {Item("x", "old")}, now_).ok());
  ASSERT_TRUE(p_.Commit(2, now_).ok());
  const Status st = Prepare(p_, 3, {Item("x", "1"), Item("y", "2"), Item("x", "3")}, now_);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("appears twice"), std::string_view::npos) << st.ToString();
  EXPECT_EQ(p_.Get("x")->value, "old");
  EXPECT_FALSE(p_.GetByTs("y", 3).has_value());
  EXPECT_EQ(p_.Stats().versions, 1u);
  // One new and one indexed key of the same bytes cannot happen: both are
  // the entry's. Distinct keys, old and new, still prepare.
  EXPECT_TRUE(Prepare(p_, 4, {Item("x", "1"), Item("y", "2")}, now_).ok());
}

class SmallPartitionTest : public PartitionTest {
 protected:
  SmallPartitionTest() : PartitionTest(256 << 10) {}
};

TEST_F(SmallPartitionTest, ArenaFullFailsPrepareAndKeepsCommittedData) {
  // Fill with committed 2 KiB values until the arena is full.
  uint64_t ts = 1;
  std::vector<std::string> keys;
  Status st;
  for (; ts < 100000; ++ts) {
    std::string key = "key" + std::to_string(ts);
    st = Put(ts, {Item(key, std::string(2000, char('a' + ts % 26)))});
    if (!st.ok()) break;
    keys.push_back(key);
  }
  ASSERT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find("arena full"), std::string_view::npos) << st.ToString();
  ASSERT_GT(keys.size(), 50u);
  const uint64_t versions = p_.Stats().versions;

  EXPECT_EQ(p_.Stats().versions, versions);
  EXPECT_EQ(p_.Stats().pending_txns, 0u);

  for (size_t i = 0; i < keys.size(); ++i) {
    auto v = p_.Get(keys[i]);
    ASSERT_TRUE(v.has_value()) << keys[i];
    ASSERT_EQ(v->value, std::string(2000, char('a' + (i + 1) % 26))) << keys[i];
    ASSERT_TRUE(Validate(*v, keys[i]).ok()) << keys[i];
  }
}

TEST_F(SmallPartitionTest, PartlyFittingPrepareRollsBackItsOwnSlots) {
  // 256 KiB fixed arena. Three committed 60 KB values, then a
  // prepare whose small items fit but whose second large item does not.
  const std::string big(60000, 'b');
  ASSERT_TRUE(Put(1, {Item("a", big), Item("b", big), Item("c", big)}).ok());
  const PartitionStats before = p_.Stats();
  std::vector<TestItem> batch;
  for (int i = 0; i < 8; ++i) batch.push_back(Item("x" + std::to_string(i), std::string(100, 'x')));
  batch.push_back(Item("a", big));
  batch.push_back(Item("d", big));
  Status st = Prepare(p_, 2, batch, now_);
  ASSERT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find("nothing written"), std::string_view::npos) << st.ToString();
  const PartitionStats after = p_.Stats();
  EXPECT_EQ(after.arena.used_bytes, before.arena.used_bytes);
  EXPECT_EQ(after.versions, before.versions);
  EXPECT_EQ(after.keys, before.keys);
  EXPECT_EQ(after.pending_txns, 0u);
  EXPECT_GT(after.arena.allocations, before.arena.allocations);  // slots were taken, then freed
  EXPECT_FALSE(p_.GetByTs("x0", 2).has_value());
  EXPECT_FALSE(p_.GetByTs("a", 2).has_value());
  for (const char* k : {"a", "b", "c"}) {
    auto v = p_.Get(k);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->value, big);
    EXPECT_TRUE(Validate(*v, k).ok());
  }
  // The same prepare without the large items succeeds.
  batch.resize(8);
  EXPECT_TRUE(Prepare(p_, 2, batch, now_).ok());
}

TEST_F(SmallPartitionTest, OverwritesReuseSpaceAfterGc) {
  // Far more data than the arena holds, written over a few keys with GC.
  for (uint64_t ts = 1; ts <= 2000; ++ts) {
    Status st = Put(ts, {Item("k" + std::to_string(ts % 4), std::string(1000, 'v'))});
    ASSERT_TRUE(st.ok()) << ts << ": " << st.ToString();
    now_ += 1s;
    p_.Gc(now_);
  }
  EXPECT_EQ(p_.Stats().keys, 4u);
  EXPECT_LE(p_.Stats().versions, 4u * 7);
}

class BigPartitionTest : public PartitionTest {
 protected:
  static PartitionOptions Options() {
    PartitionOptions o;
    o.max_value_bytes = 8 << 20;
    return o;
  }
  BigPartitionTest() : PartitionTest(64 << 20, Options()) {}
};

TEST_F(BigPartitionTest, LargeValues) {
  std::string big(4 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + 7);
  ASSERT_TRUE(Put(1, {Item("big", big, {"other"})}).ok());
  auto v = p_.Get("big");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->value, big);
  EXPECT_TRUE(Validate(*v, "big").ok());
  // Overwrite twice; the second grace period frees the first.
  ASSERT_TRUE(Put(2, {Item("big", big)}).ok());
  ASSERT_TRUE(Put(3, {Item("big", std::string(3 << 20, 'q'))}).ok());
  EXPECT_EQ(p_.Gc(now_ + 6s), 2u);
  EXPECT_EQ(p_.Get("big")->value, std::string(3 << 20, 'q'));
}

TEST_F(BigPartitionTest, ManyKeysWithoutAFixedLimit) {
  constexpr int kKeys = 100000;
  std::vector<TestItem> batch;
  uint64_t ts = 1;
  for (int i = 0; i < kKeys; ++i) {
    batch.push_back(Item("user" + std::to_string(i), "value" + std::to_string(i)));
    if (batch.size() == 1000) {
      ASSERT_TRUE(Put(ts++, std::move(batch)).ok()) << i;
      batch.clear();
    }
  }
  EXPECT_EQ(p_.Stats().keys, static_cast<uint64_t>(kKeys));
  for (int i = 0; i < kKeys; i += 997) {
    auto v = p_.Get("user" + std::to_string(i));
    ASSERT_TRUE(v.has_value()) << i;
    EXPECT_EQ(v->value, "value" + std::to_string(i));
  }
}

// A miniature of the GET* torture test: one writer overwrites a few keys with
// no grace period (slots are reused at once) while a reader thread copies
// slots from cached, often stale, addresses the way a one-sided read would.
// Every accepted read must be exactly a version the writer committed.
// (The reader's copy races the writer's stores by design, as a remote
// one-sided read does; on x86 a racing memcpy sees old or new bytes.)
TEST(PartitionConcurrencyTest, OneSidedReadersNeverAcceptAWrongVersion) {
  Region region(1 << 20);
  PartitionOptions o;
  o.grace_period = Clock::duration::zero();
  Partition p(region.span(), o);
  auto expected = [](const std::string& key, uint64_t ts) {
    return key + "@" + std::to_string(ts) + std::string(ts % 200, char('a' + ts % 26));
  };
  struct Cached {
    std::string key;
    uint64_t offset, bytes;
    uint32_t gen;
  };
  std::mutex mu;
  std::vector<Cached> cache;  // guarded by mu
  std::atomic<bool> done{false};
  std::atomic<uint64_t> accepted{0}, refused{0};
  std::thread reader([&] {
    std::mt19937_64 rng(1);
    std::vector<std::byte> buf;
    while (!done.load()) {
      Cached c;
      {
        std::lock_guard lock(mu);
        if (cache.empty()) continue;
        c = cache[rng() % cache.size()];
      }
      buf.assign(region.mem.get() + c.offset, region.mem.get() + c.offset + c.bytes);
      auto v = ValidateSlot(buf, c.key, c.gen);
      if (!v.ok()) {
        refused.fetch_add(1);
        continue;
      }
      accepted.fetch_add(1);
      ASSERT_EQ(std::string(v->value), expected(c.key, v->ts));
    }
  });
  Clock::time_point now = Clock::time_point() + 1s;
  const auto deadline = std::chrono::steady_clock::now() + 500ms;
  uint64_t ts = 1;
  for (; std::chrono::steady_clock::now() < deadline; ++ts) {
    const std::string key = "k" + std::to_string(ts % 5);
    ASSERT_TRUE(Prepare(p, ts, {Item(key, expected(key, ts))}, now).ok());
    ASSERT_TRUE(p.Commit(ts, now).ok());
    auto v = p.Get(key);
    {
      std::lock_guard lock(mu);
      cache.push_back({key, v->slot_offset, v->slot_bytes, v->gen});
      if (cache.size() > 64) cache.erase(cache.begin());
    }
    now += 1ms;
    p.Gc(now);
  }
  done.store(true);
  reader.join();
  EXPECT_GT(ts, 1000u);
  EXPECT_GT(accepted.load() + refused.load(), 0u);
  EXPECT_LE(p.Stats().versions, 5u);
  std::printf("writes %llu, reads accepted %llu, refused %llu\n", (unsigned long long)ts,
              (unsigned long long)accepted.load(), (unsigned long long)refused.load());
}

}  // namespace
}  // namespace rampart::kv
