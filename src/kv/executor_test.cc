#include "kv/executor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kv/protocol.h"
#include "kv/test_region.h"

namespace rampart::kv {
namespace {

using namespace std::chrono_literals;
using wire::MsgType;

// Page-aligned, zeroed memory, as Fabric::Allocate returns.
struct Region : TestRegion {
  explicit Region(size_t n) : TestRegion(n, 0) {}
};

constexpr uint16_t kPartition = 3;

class ExecutorTest : public ::testing::Test {
 protected:
  explicit ExecutorTest(size_t arena_bytes = 8 << 20, ExecutorOptions options = {})
      : region_(arena_bytes), exec_(kPartition, region_.span(), options) {}

  // Executes `message` from `conn` and returns the replies.
  std::vector<OutgoingReply> Run(ConnectionId conn, const std::vector<std::byte>& message) {
    return exec_.Execute(conn, message, now_);
  }

  // Decodes the single reply message, which must go to `conn`.
  std::vector<wire::Reply> Only(const std::vector<OutgoingReply>& out, ConnectionId conn) {
    EXPECT_EQ(out.size(), 1u);
    if (out.size() != 1) return {};
    EXPECT_EQ(out[0].to, conn);
    auto replies = wire::DecodeReplies(out[0].message, wire::ProtocolLimits());
    EXPECT_TRUE(replies.ok()) << replies.status().ToString();
    return replies.ok() ? *replies : std::vector<wire::Reply>{};
  }

  // One request, one reply, from connection 1.
  wire::Reply One(const std::vector<std::byte>& message) {
    decoded_.push_back(Run(1, message));
    auto replies = Only(decoded_.back(), 1);
    EXPECT_EQ(replies.size(), 1u);
    return replies.empty() ? wire::Reply{} : replies[0];
  }

  std::vector<std::byte> Prepare(uint64_t id, uint64_t ts,
                                 std::vector<std::pair<std::string, std::string>> kvs,
                                 uint8_t flags = 0, std::vector<wire::KeyTs> unchanged = {}) {
    std::vector<std::string_view> keys;
    for (auto& [k, v] : kvs) keys.push_back(k);
    siblings_.push_back(wire::EncodeKeyList(keys));
    std::vector<wire::PrepareItemIn> items;
    for (auto& [k, v] : kvs) items.push_back({k, v, siblings_.back(), false});
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Prepare(kPartition, id, ts, items, flags, unchanged);
    return msg;
  }
  std::vector<std::byte> Commit(uint64_t id, uint64_t ts) {
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Commit(kPartition, id, ts);
    return msg;
  }
  std::vector<std::byte> Get(uint64_t id, std::vector<std::string_view> keys) {
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Get(kPartition, id, keys);
    return msg;
  }
  std::vector<std::byte> GetByTs(uint64_t id, std::vector<wire::KeyTs> items) {
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).GetByTs(kPartition, id, items);
    return msg;
  }
  std::vector<std::byte> Lock(uint64_t id, uint64_t txn, std::vector<wire::LockKey> keys) {
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Lock(kPartition, id, txn, keys);
    return msg;
  }
  std::vector<std::byte> Unlock(uint64_t id, uint64_t txn) {
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Unlock(kPartition, id, txn);
    return msg;
  }

  Region region_;
  PartitionExecutor exec_;
  Clock::time_point now_ = Clock::time_point() + 1000s;
  std::vector<std::string> siblings_;
  std::vector<std::vector<OutgoingReply>> decoded_;  // keeps reply views valid
};

// kFlagIfAbsent: a commit-now write of keys without a live version goes
// through; one live key refuses the whole request and nothing of it is
// written. A key whose latest version is a tombstone is absent; one with a
// prepared version, or a version at a later ts, is not.
TEST_F(ExecutorTest, PrepareIfAbsentWritesOnlyKeysWithoutALiveVersion) {
  const uint8_t if_absent = wire::kFlagCommitNow | wire::kFlagIfAbsent;
  ASSERT_TRUE(One(Prepare(1, 100, {{"a", "1"}}, if_absent)).ok());
  wire::Reply refused = One(Prepare(2, 200, {{"b", "2"}, {"a", "again"}}, if_absent));
  EXPECT_EQ(refused.header.status, StatusCode::kAlreadyExists);
  EXPECT_NE(refused.error.find("\"a\" exists"), std::string_view::npos) << refused.error;
  wire::Reply got = One(Get(3, {"a", "b"}));
  ASSERT_EQ(got.results.size(), 2u);
  EXPECT_EQ(got.results[0].value, "1");
  EXPECT_FALSE(got.results[1].found);

  // A deleted key is absent again.
  std::vector<std::byte> del;
  const std::string no_siblings = wire::EncodeKeyList({});
  std::vector<wire::PrepareItemIn> tombstone{{"a", "", no_siblings, true}};
  wire::RequestWriter(&del).Prepare(kPartition, 4, 300, tombstone, wire::kFlagCommitNow);
  ASSERT_TRUE(One(del).ok());
  ASSERT_TRUE(One(Prepare(5, 400, {{"a", "new"}}, if_absent)).ok());
  EXPECT_EQ(One(Get(6, {"a"})).results[0].value, "new");

  // Not absent: a version at a later ts (a delete at 600 and a write at 500
  // behind it), a prepared version.
  del.clear();
  tombstone[0].key = "c";
  wire::RequestWriter(&del).Prepare(kPartition, 7, 600, tombstone, wire::kFlagCommitNow);
  ASSERT_TRUE(One(del).ok());
  EXPECT_EQ(One(Prepare(8, 500, {{"c", "x"}}, if_absent)).header.status, StatusCode::kAlreadyExists);
  ASSERT_TRUE(One(Prepare(9, 700, {{"d", "prepared"}})).ok());
  EXPECT_EQ(One(Prepare(10, 800, {{"d", "x"}}, if_absent)).header.status,
            StatusCode::kAlreadyExists);
  ASSERT_TRUE(One(Commit(11, 700)).ok());
  EXPECT_EQ(One(Get(12, {"d"})).results[0].value, "prepared");

  // Only with COMMIT_NOW.
  EXPECT_EQ(One(Prepare(13, 900, {{"e", "x"}}, wire::kFlagIfAbsent)).header.status,
            StatusCode::kInvalidArgument);
}

// kFlagIfUnchanged: a read-modify-write's write goes through only while
// every key it read still has the version it read as its newest (0: none);
// a version committed or prepared since refuses the whole request, and
// nothing of it is written. Keys listed need not be written (a read set).
TEST_F(ExecutorTest, PrepareIfUnchangedWritesOnlyWhileTheReadVersionsAreNewest) {
  const uint8_t if_unchanged = wire::kFlagCommitNow | wire::kFlagIfUnchanged;
  ASSERT_TRUE(One(Prepare(1, 100, {{"a", "1"}, {"b", "1"}}, wire::kFlagCommitNow)).ok());
  // Read a@100 and "n" (no version): write both.
  ASSERT_TRUE(One(Prepare(2, 200, {{"a", "2"}, {"n", "new"}}, if_unchanged, {{"a", 100}, {"n", 0}})).ok());
  // A stale read of a (100, now 200) or of n (absent, now 200) is refused
  // whole: b, read as it is, is not written either.
  wire::Reply refused = One(Prepare(3, 300, {{"b", "3"}, {"a", "3"}}, if_unchanged, {{"b", 100}, {"a", 100}}));
  EXPECT_EQ(refused.header.status, StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.error.find("\"a\" changed"), std::string_view::npos) << refused.error;
  EXPECT_EQ(One(Prepare(4, 300, {{"n", "again"}}, if_unchanged, {{"n", 0}})).header.status,
            StatusCode::kFailedPrecondition);
  wire::Reply got = One(Get(5, {"a", "b", "n"}));
  ASSERT_EQ(got.results.size(), 3u);
  EXPECT_EQ(got.results[0].value, "2");
  EXPECT_EQ(got.results[1].value, "1");
  EXPECT_EQ(got.results[2].value, "new");
  // A key only read (c) counts as well as a written one.
  ASSERT_TRUE(One(Prepare(6, 400, {{"c", "1"}}, wire::kFlagCommitNow)).ok());
  ASSERT_TRUE(One(Prepare(7, 500, {{"a", "from c"}}, if_unchanged, {{"a", 200}, {"c", 400}})).ok());
  EXPECT_EQ(One(Prepare(8, 600, {{"a", "x"}}, if_unchanged, {{"a", 500}, {"c", 300}})).header.status,
            StatusCode::kFailedPrecondition);

  // A prepared version newer than the one read (a write in flight) refuses
  // it until then; once committed, its version is the one to have read.
  ASSERT_TRUE(One(Prepare(9, 700, {{"b", "prepared"}})).ok());
  EXPECT_EQ(One(Prepare(10, 800, {{"b", "x"}}, if_unchanged, {{"b", 100}})).header.status,
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(One(Commit(11, 700)).ok());
  ASSERT_TRUE(One(Prepare(12, 900, {{"b", "after"}}, if_unchanged, {{"b", 700}})).ok());
  EXPECT_EQ(One(Get(13, {"b"})).results[0].value, "after");

  // A prepared version later than the write lands after it: no conflict. One
  // prepared more than kInFlightPrepare ago is taken for an abandoned write
  // (its PREPARE failed elsewhere and nobody commits it): no conflict either.
  ASSERT_TRUE(One(Prepare(20, 5000, {{"b", "later"}})).ok());
  ASSERT_TRUE(One(Prepare(21, 950, {{"b", "before it"}}, if_unchanged, {{"b", 900}})).ok());
  ASSERT_TRUE(One(Prepare(22, 960, {{"f", "abandoned"}})).ok());
  EXPECT_EQ(One(Prepare(23, 970, {{"f", "x"}}, if_unchanged, {{"f", 0}})).header.status,
            StatusCode::kFailedPrecondition);
  now_ += Partition::kInFlightPrepare;
  ASSERT_TRUE(One(Prepare(24, 980, {{"f", "over it"}}, if_unchanged, {{"f", 0}})).ok());
  EXPECT_EQ(One(Get(25, {"f"})).results[0].value, "over it");

  // Only with COMMIT_NOW.
  EXPECT_EQ(One(Prepare(14, 1000, {{"e", "x"}}, wire::kFlagIfUnchanged, {{"e", 0}})).header.status,
            StatusCode::kInvalidArgument);
}

// kFlagReturnSlots: a PREPARE's OK reply names each item's slot, the one a
// GET then reports; with COMMIT_NOW only for versions that became the latest
// (an older write committed behind a newer one has no slot to read).
TEST_F(ExecutorTest, PrepareWithReturnSlotsAnswersWhereEachVersionLives) {
  const uint8_t now_and_slots = wire::kFlagCommitNow | wire::kFlagReturnSlots;
  wire::Reply put = One(Prepare(1, 100, {{"a", "1"}, {"b", "2"}}, now_and_slots));
  ASSERT_TRUE(put.ok()) << put.ToStatus().ToString();
  ASSERT_EQ(put.slots.size(), 2u);
  wire::Reply got = One(Get(2, {"a", "b"}));
  ASSERT_EQ(got.results.size(), 2u);
  EXPECT_EQ(put.slots[0], got.results[0].slot);
  EXPECT_EQ(put.slots[1], got.results[1].slot);
  EXPECT_NE(put.slots[0].bytes, 0u);

  wire::Reply behind = One(Prepare(3, 50, {{"a", "old"}}, now_and_slots));
  ASSERT_TRUE(behind.ok());
  ASSERT_EQ(behind.slots.size(), 1u);
  EXPECT_EQ(behind.slots[0].bytes, 0u);

  // Without COMMIT_NOW: the prepared version's slot, the latest after COMMIT.
  wire::Reply prepared = One(Prepare(4, 200, {{"b", "3"}}, wire::kFlagReturnSlots));
  ASSERT_EQ(prepared.slots.size(), 1u);
  ASSERT_TRUE(One(Commit(5, 200)).ok());
  got = One(Get(6, {"b"}));
  EXPECT_EQ(prepared.slots[0], got.results[0].slot);
  EXPECT_EQ(got.results[0].value, "3");

  EXPECT_TRUE(One(Prepare(7, 300, {{"c", "4"}}, wire::kFlagCommitNow)).slots.empty());
}

TEST_F(ExecutorTest, PrepareIsInvisibleToGetUntilCommit) {
  wire::Reply r = One(Prepare(1, 10, {{"a", "A1"}, {"b", "B1"}}));
  EXPECT_TRUE(r.ok()) << r.ToStatus().ToString();
  EXPECT_EQ(r.header.type, static_cast<uint8_t>(MsgType::kPrepare));
  EXPECT_EQ(r.header.request_id, 1u);
  EXPECT_EQ(r.header.partition, kPartition);

  r = One(Get(2, {"a", "b"}));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_FALSE(r.results[0].found);
  EXPECT_FALSE(r.results[1].found);

  // RAMP repair: the prepared version is readable by ts.
  r = One(GetByTs(3, {{"a", 10}, {"b", 9}}));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_TRUE(r.results[0].found);
  EXPECT_EQ(r.results[0].value, "A1");
  EXPECT_FALSE(r.results[1].found);

  r = One(Commit(4, 10));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.header.type, static_cast<uint8_t>(MsgType::kCommit));

  r = One(Get(5, {"a", "b", "c"}));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.results.size(), 3u);
  EXPECT_TRUE(r.results[0].found);
  EXPECT_EQ(r.results[0].ts, 10u);
  EXPECT_EQ(r.results[0].value, "A1");
  EXPECT_EQ(r.results[0].siblings.ToVector(), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_GT(r.results[0].slot.bytes, 0u);
  EXPECT_EQ(r.results[1].value, "B1");
  EXPECT_NE(r.results[0].slot.offset, r.results[1].slot.offset);
  EXPECT_FALSE(r.results[2].found);
  EXPECT_EQ(exec_.partition().LatestCommit("a"), 10u);
}

TEST_F(ExecutorTest, NewerCommitWinsAndOldVersionStaysReadableByTs) {
  EXPECT_TRUE(One(Prepare(1, 10, {{"a", "old"}}, wire::kFlagCommitNow)).ok());
  EXPECT_TRUE(One(Prepare(2, 20, {{"a", "new"}}, wire::kFlagCommitNow)).ok());
  // A late commit of an older ts does not go backwards.
  EXPECT_TRUE(One(Prepare(3, 15, {{"a", "late"}}, wire::kFlagCommitNow)).ok());
  wire::Reply r = One(Get(4, {"a"}));
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].ts, 20u);
  EXPECT_EQ(r.results[0].value, "new");
  r = One(GetByTs(5, {{"a", 10}}));
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_TRUE(r.results[0].found);
  EXPECT_EQ(r.results[0].value, "old");

  // After the grace period GC reclaims the superseded versions.
  now_ += 6s;
  EXPECT_TRUE(exec_.Tick(now_).empty());
  r = One(GetByTs(6, {{"a", 10}}));
  EXPECT_FALSE(r.results[0].found);
  r = One(Get(7, {"a"}));
  EXPECT_EQ(r.results[0].value, "new");
}

TEST_F(ExecutorTest, TombstonesAndCommitOfUnknownTs) {
  std::vector<std::byte> msg;
  std::vector<wire::PrepareItemIn> items = {{"k", "", "", true}};
  wire::RequestWriter(&msg).Prepare(kPartition, 1, 5, items, wire::kFlagCommitNow);
  EXPECT_TRUE(One(msg).ok());
  wire::Reply r = One(Get(2, {"k"}));
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_TRUE(r.results[0].found);
  EXPECT_TRUE(r.results[0].tombstone);
  EXPECT_TRUE(One(Commit(3, 999)).ok());
}

TEST_F(ExecutorTest, BatchedRequestsAreAnsweredInOrder) {
  std::vector<std::byte> msg;
  wire::RequestWriter w(&msg);
  std::string sib = wire::EncodeKeyList(std::vector<std::string_view>{"x"});
  std::vector<wire::PrepareItemIn> items = {{"x", "X", sib, false}};
  std::vector<std::string_view> keys = {"x"};
  w.Prepare(kPartition, 7, 50, items);
  w.Commit(kPartition, 8, 50);
  w.Get(kPartition, 9, keys);
  auto out = Run(1, msg);
  auto replies = Only(out, 1);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0].header.request_id, 7u);
  EXPECT_EQ(replies[1].header.request_id, 8u);
  EXPECT_EQ(replies[2].header.request_id, 9u);
  ASSERT_EQ(replies[2].results.size(), 1u);
  EXPECT_EQ(replies[2].results[0].value, "X");
}

TEST_F(ExecutorTest, S2plLockWaitsAndIsGrantedOnUnlockToTheOtherConnection) {
  wire::Reply r = One(Lock(1, /*txn=*/100, {{"a", LockMode::kExclusive}}));
  EXPECT_TRUE(r.ok()) << r.ToStatus().ToString();
  EXPECT_EQ(r.header.type, static_cast<uint8_t>(MsgType::kLock));

  // txn 200 on connection 2 wants a (S) then b (X): waits on a, no reply yet.
  EXPECT_TRUE(Run(2, Lock(2, 200, {{"a", LockMode::kShared}, {"b", LockMode::kExclusive}})).empty());

  // A write under the lock, then UNLOCK: connection 1 gets its UNLOCK reply,
  // connection 2 the LOCK reply.
  EXPECT_TRUE(One(Prepare(3, 10, {{"a", "v"}}, wire::kFlagCommitNow)).ok());
  auto out = Run(1, Unlock(4, 100));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].to, 1u);
  EXPECT_EQ(out[1].to, 2u);
  auto mine = wire::DecodeReplies(out[0].message, {});
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ((*mine)[0].header.request_id, 4u);
  EXPECT_TRUE((*mine)[0].ok());
  auto theirs = wire::DecodeReplies(out[1].message, {});
  ASSERT_TRUE(theirs.ok());
  ASSERT_EQ(theirs->size(), 1u);
  EXPECT_EQ((*theirs)[0].header.request_id, 2u);
  EXPECT_TRUE((*theirs)[0].ok());

  // txn 200 now holds b exclusively: txn 300 waits, and is dropped when its
  // connection closes (no reply to anyone).
  EXPECT_TRUE(Run(3, Lock(5, 300, {{"b", LockMode::kShared}})).empty());
  EXPECT_TRUE(exec_.ConnectionClosed(3, now_).empty());
  // A second waiter is granted once 200 unlocks.
  EXPECT_TRUE(Run(4, Lock(6, 400, {{"b", LockMode::kExclusive}})).empty());
  out = Run(2, Unlock(7, 200));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].to, 4u);
}

TEST_F(ExecutorTest, S2plSecondLockWhileWaitingIsRefused) {
  EXPECT_TRUE(One(Lock(1, 1, {{"a", LockMode::kExclusive}})).ok());
  EXPECT_TRUE(Run(2, Lock(2, 2, {{"a", LockMode::kExclusive}})).empty());
  auto out = Run(2, Lock(3, 2, {{"b", LockMode::kExclusive}}));
  auto replies = Only(out, 2);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].header.status, StatusCode::kFailedPrecondition);
}

TEST_F(ExecutorTest, S2plExpiredHolderIsBrokenByTick) {
  EXPECT_TRUE(One(Lock(1, 1, {{"a", LockMode::kExclusive}})).ok());
  now_ += 6s;
  EXPECT_TRUE(Run(2, Lock(2, 2, {{"a", LockMode::kExclusive}})).empty());
  now_ += 5s;  // txn 1 idle 11 s > 10 s; txn 2 idle 5 s
  auto out = exec_.Tick(now_);
  auto replies = Only(out, 2);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(replies[0].ok());
  EXPECT_EQ(replies[0].header.request_id, 2u);

  // A waiter that itself stays idle too long gets a timed-out reply.
  EXPECT_TRUE(Run(3, Lock(3, 3, {{"a", LockMode::kShared}})).empty());
  now_ += 11s;
  out = exec_.Tick(now_);
  replies = Only(out, 3);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].header.status, StatusCode::kTimedOut);
}

TEST_F(ExecutorTest, GarbageAndTruncatedMessagesGetOneErrorReply) {
  std::vector<std::byte> garbage = {std::byte{1}, std::byte{2}, std::byte{3}};
  wire::Reply r = One(garbage);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.header.request_id, 0u);

  std::vector<std::byte> msg = Get(9, {"a", "b"});
  msg.resize(msg.size() - 3);
  r = One(msg);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.header.request_id, 0u);
  EXPECT_FALSE(r.error.empty());

  // Still serving.
  EXPECT_TRUE(One(Get(10, {"a"})).ok());
}

TEST_F(ExecutorTest, BadRequestIsAnsweredAndTheOthersServed) {
  std::vector<std::byte> msg;
  wire::RequestWriter w(&msg);
  std::vector<std::string_view> keys = {"a"};
  w.Get(kPartition, 1, keys);
  const size_t second = msg.size();
  w.Get(kPartition, 2, keys);
  w.Get(kPartition + 1, 3, keys);  // wrong partition
  msg[second] = std::byte{99};     // unknown type
  auto out = Run(1, msg);
  auto replies = Only(out, 1);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_TRUE(replies[0].ok());
  EXPECT_EQ(replies[1].header.type, 99);
  EXPECT_EQ(replies[1].header.status, StatusCode::kInvalidArgument);
  EXPECT_EQ(replies[1].header.request_id, 2u);
  EXPECT_FALSE(replies[2].ok());
  EXPECT_EQ(replies[2].header.request_id, 3u);
}

TEST_F(ExecutorTest, KeyOverTheLimitIsRefused) {
  wire::Reply r = One(Prepare(1, 10, {{std::string(2000, 'k'), "v"}}));
  EXPECT_EQ(r.header.status, StatusCode::kInvalidArgument);
  r = One(Prepare(2, 10, {{"k", std::string((1 << 20) + 1, 'v')}}));
  EXPECT_EQ(r.header.status, StatusCode::kInvalidArgument);
  r = One(Prepare(3, 0, {{"k", "v"}}));  // ts 0
  EXPECT_FALSE(r.ok());
}

TEST_F(ExecutorTest, DescribeAnswersTheExposedExtents) {
  auto describe = [&](uint32_t extent) {
    std::vector<std::byte> req;
    wire::RequestWriter(&req).Describe(kPartition, 9, extent);
    return One(req);
  };
  wire::Reply r = describe(0);
  EXPECT_EQ(r.header.status, StatusCode::kNotSupported);  // nothing exposed (tcp)
  EXPECT_NE(r.error.find("get mode rpc or ring"), std::string_view::npos) << r.error;

  std::vector<uint32_t> asked;
  exec_.ExposeArena([&](uint32_t extent) -> Result<std::vector<std::byte>> {
    asked.push_back(extent);
    return std::vector<std::byte>{std::byte{1}, std::byte{2}, std::byte(extent)};
  });
  r = describe(0);
  ASSERT_TRUE(r.ok()) << r.ToStatus().ToString();
  EXPECT_EQ(r.header.type, static_cast<uint8_t>(MsgType::kDescribe));
  EXPECT_EQ(r.arena.extent_bytes, 8u << 20);
  EXPECT_EQ(r.arena.descriptor, std::string_view("\x01\x02\x00", 3));
  // An extent the arena does not have is not asked for.
  r = describe(1);
  EXPECT_EQ(r.header.status, StatusCode::kNotFound);
  EXPECT_NE(r.error.find("has no arena extent 1"), std::string_view::npos) << r.error;
  EXPECT_EQ(asked, std::vector<uint32_t>{0});
}

TEST_F(ExecutorTest, StatsAnswerKeysVersionsAndMemory) {
  ASSERT_TRUE(One(Prepare(1, 10, {{"a", "1"}, {"b", std::string(100000, 'v')}}, wire::kFlagCommitNow)).ok());
  std::vector<std::byte> req;
  wire::RequestWriter(&req).Stats(kPartition, 4);
  wire::Reply r = One(req);
  ASSERT_TRUE(r.ok()) << r.ToStatus().ToString();
  EXPECT_EQ(r.stats.keys, 2u);
  EXPECT_EQ(r.stats.versions, 2u);
  EXPECT_GE(r.stats.used_bytes, 100000u);
  EXPECT_EQ(r.stats.reserved_bytes, 8u << 20);
  EXPECT_EQ(r.stats.max_ts, 10u);
}

TEST_F(ExecutorTest, CountAnswersLiveKeysAndFlushDropsEverything) {
  auto count = [&](uint64_t id) {
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Count(kPartition, id);
    wire::Reply r = One(msg);
    EXPECT_TRUE(r.ok()) << r.ToStatus().ToString();
    EXPECT_EQ(r.header.type, static_cast<uint8_t>(MsgType::kCount));
    EXPECT_EQ(r.header.request_id, id);
    return r.count;
  };
  EXPECT_EQ(count(1), 0u);
  ASSERT_TRUE(One(Prepare(2, 10, {{"a", "1"}, {"b", "1"}, {"c", "1"}}, wire::kFlagCommitNow)).ok());
  ASSERT_TRUE(One(Prepare(3, 20, {{"d", "prepared"}})).ok());  // not committed: not counted
  EXPECT_EQ(count(4), 3u);
  std::vector<std::byte> del;
  const wire::PrepareItemIn tombstone[] = {{"b", "", "", true}};
  wire::RequestWriter(&del).Prepare(kPartition, 5, 30, tombstone, wire::kFlagCommitNow);
  ASSERT_TRUE(One(del).ok());
  EXPECT_EQ(count(6), 2u);
  wire::Reply a = One(Get(7, {"a"}));
  ASSERT_TRUE(a.results.at(0).found);
  const wire::SlotAddress cached = a.results[0].slot;

  // COUNT, FLUSH, COUNT in one message: answered in order.
  std::vector<std::byte> msg;
  wire::RequestWriter w(&msg);
  w.Count(kPartition, 8);
  w.Flush(kPartition, 9);
  w.Count(kPartition, 10);
  auto out = Run(1, msg);
  std::vector<wire::Reply> replies = Only(out, 1);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0].count, 2u);
  EXPECT_TRUE(replies[1].ok()) << replies[1].ToStatus().ToString();
  EXPECT_EQ(replies[1].header.type, static_cast<uint8_t>(MsgType::kFlush));
  EXPECT_EQ(replies[1].header.request_id, 9u);
  EXPECT_EQ(replies[1].header.body_len, 0u);
  EXPECT_EQ(replies[2].count, 0u);

  wire::Reply got = One(Get(11, {"a", "b", "c", "d"}));
  ASSERT_EQ(got.results.size(), 4u);
  for (const wire::GetResult& res : got.results) EXPECT_FALSE(res.found);
  EXPECT_TRUE(One(Commit(12, 20)).ok());  // the flushed prepare: nothing to commit
  EXPECT_FALSE(One(Get(13, {"d"})).results.at(0).found);
  EXPECT_EQ(exec_.partition().Stats().versions, 0u);
  // A GET* reader's cached address of "a" is refused.
  const std::byte* slot = region_.span().data() + cached.offset;
  auto read = ValidateSlot(std::span(slot, cached.bytes), "a", cached.gen);
  EXPECT_EQ(read.status().code(), StatusCode::kNotFound) << read.status().ToString();
  // The partition takes writes again.
  ASSERT_TRUE(One(Prepare(14, 5, {{"a", "again"}}, wire::kFlagCommitNow)).ok());
  EXPECT_EQ(count(15), 1u);
  EXPECT_EQ(One(Get(16, {"a"})).results.at(0).value, "again");
}

class SmallExecutorTest : public ExecutorTest {
 protected:
  static ExecutorOptions Small() {
    ExecutorOptions o;
    o.partition.max_value_bytes = 64 << 10;
    o.max_message_bytes = 128 << 10;
    return o;
  }
  SmallExecutorTest() : ExecutorTest(1 << 20, Small()) {}
};

TEST_F(SmallExecutorTest, OversizedMessageIsRefused) {
  wire::Reply r = One(Prepare(1, 10, {{"a", std::string(64 << 10, 'v')}, {"b", std::string(64 << 10, 'v')}}));
  EXPECT_EQ(r.header.status, StatusCode::kInvalidArgument);
  EXPECT_EQ(r.header.request_id, 0u);
}

// Replies that together pass max_message_bytes go in several messages, cut
// between replies; a GET whose reply alone would pass it is answered with an
// error (the client reads fewer keys at once), and the others are served.
TEST_F(SmallExecutorTest, RepliesPastTheMessageBoundAreCutOrRefused) {
  const std::string big(50 << 10, 'v');
  ASSERT_TRUE(One(Prepare(1, 10, {{"a", big}}, wire::kFlagCommitNow)).ok());
  ASSERT_TRUE(One(Prepare(2, 11, {{"b", big}}, wire::kFlagCommitNow)).ok());
  ASSERT_TRUE(One(Prepare(3, 12, {{"c", big}}, wire::kFlagCommitNow)).ok());
  std::vector<std::byte> msg;
  wire::RequestWriter w(&msg);
  const std::vector<std::string_view> a{"a"}, b{"b"}, c{"c"}, bc{"b", "c", "a"};
  w.Get(kPartition, 20, a);
  w.Get(kPartition, 21, b);
  w.Get(kPartition, 22, bc);  // 150 KiB: over the 128 KiB bound alone
  w.Get(kPartition, 23, c);
  const std::vector<OutgoingReply> out = Run(1, msg);
  ASSERT_EQ(out.size(), 2u);  // a + b + the error fit 128 KiB; c goes in a second message
  std::vector<wire::Reply> replies;
  for (const OutgoingReply& o : out) {
    EXPECT_EQ(o.to, 1u);
    EXPECT_LE(o.message.size(), 128u << 10);
    auto decoded = wire::DecodeReplies(o.message, wire::ProtocolLimits());
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    replies.insert(replies.end(), decoded->begin(), decoded->end());
  }
  ASSERT_EQ(replies.size(), 4u);
  EXPECT_EQ(replies[0].results.at(0).value, big);
  EXPECT_EQ(replies[1].results.at(0).value, big);
  EXPECT_EQ(replies[2].header.request_id, 22u);
  EXPECT_EQ(replies[2].header.status, StatusCode::kResourceExhausted);
  EXPECT_NE(replies[2].error.find("read fewer keys at once"), std::string_view::npos) << replies[2].error;
  EXPECT_EQ(replies[3].header.request_id, 23u);
  EXPECT_EQ(replies[3].results.at(0).value, big);
}

TEST_F(SmallExecutorTest, ArenaFullPrepareGetsTheErrorAndCommittedDataSurvives) {
  EXPECT_TRUE(One(Prepare(1, 1, {{"keep", "me"}}, wire::kFlagCommitNow)).ok());
  wire::Reply r;
  uint64_t ts = 2;
  for (; ts < 200; ++ts) {
    r = One(Prepare(ts, ts, {{"k" + std::to_string(ts), std::string(60 << 10, 'v')}}));
    if (!r.ok()) break;
  }
  ASSERT_LT(ts, 200u) << "the arena never filled";
  EXPECT_EQ(r.header.status, StatusCode::kResourceExhausted);
  EXPECT_NE(r.error.find("arena full"), std::string_view::npos) << r.error;
  r = One(Get(500, {"keep"}));
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].value, "me");
}

}  // namespace
}  // namespace rampart::kv
