// The pure transaction steps (ramp_logic.h), without a kv-node.
#include "txn/ramp_logic.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "common/timestamp.h"

namespace rampart::txn::internal {
namespace {

namespace wire = kv::wire;

// Partition = the key's first letter - 'a' (so tests choose placement).
uint32_t FirstLetter(std::string_view key) { return static_cast<uint32_t>(key[0] - 'a'); }

class RepairTest : public ::testing::Test {
 protected:
  // A found version at `ts` whose write set also held `siblings`.
  wire::GetResult Version(uint64_t ts, std::vector<std::string_view> siblings,
                          bool tombstone = false) {
    encodings_.push_back(wire::EncodeKeyList(siblings));
    auto list = wire::KeyList::Parse(encodings_.back());
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    wire::GetResult r;
    r.found = true;
    r.tombstone = tombstone;
    r.ts = ts;
    r.value = tombstone ? "" : "v";
    r.siblings = *list;
    return r;
  }
  static wire::GetResult Missing() { return wire::GetResult(); }

  std::deque<std::string> encodings_;  // what the KeyLists view
};

TEST(CutBySize, KeepsSmallGroupsAndCutsLargeOnesInKeyOrder) {
  const std::vector<PartitionGroup> groups{{0, {0, 2, 3}}, {1, {1, 4, 5, 6}}};
  const std::vector<uint64_t> bytes{10, 40, 10, 10, 40, 100, 30};
  // Partition 0 holds 30 bytes: kept. Partition 1: 40 | 100 (alone, over) | 30.
  EXPECT_EQ(CutBySize(groups, bytes, 50),
            (std::vector<PartitionGroup>{{0, {0, 2, 3}}, {1, {1}}, {1, {4}}, {1, {5}}, {1, {6}}}));
  EXPECT_EQ(CutBySize(groups, bytes, 80),
            (std::vector<PartitionGroup>{{0, {0, 2, 3}}, {1, {1, 4}}, {1, {5}}, {1, {6}}}));
  EXPECT_EQ(CutBySize(groups, bytes, 1000), groups);
  // Unknown sizes (0) never cut.
  EXPECT_EQ(CutBySize(groups, std::vector<uint64_t>(7, 0), 1), groups);
}

TEST_F(RepairTest, ConsistentReadNeedsNoRepair) {
  std::vector<std::string_view> keys = {"a", "b"};
  std::vector<wire::GetResult> r1 = {Version(5, {"b"}), Version(5, {"a"})};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 0}));
}

TEST_F(RepairTest, FracturedReadRepairsTheOlderKey) {
  // A returned at ts 5 (write set {A, B}); B returned at ts 3 -> B needs ts 5.
  std::vector<std::string_view> keys = {"A", "B"};
  std::vector<wire::GetResult> r1 = {Version(5, {"B"}), Version(3, {"A"})};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 5}));
}

TEST_F(RepairTest, KeyNotFoundButNamedBySiblingIsRepaired) {
  // B's COMMIT has not reached its partition yet: round 1 finds nothing.
  std::vector<std::string_view> keys = {"A", "B"};
  std::vector<wire::GetResult> r1 = {Version(7, {"B"}), Missing()};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 7}));
}

TEST_F(RepairTest, TwoTransactionsAtOneTimestampAreEachChecked) {
  // A group commit writes {a1, a2} and {b1, b2} at ts 9 (one ts, two
  // transactions). a1 and b1, b2 are read at 9, a2 at 4: only a2 is behind,
  // whichever version is gone through first.
  std::vector<std::string_view> keys = {"b1", "b2", "a1", "a2"};
  std::vector<wire::GetResult> r1 = {Version(9, {"b2"}), Version(9, {"b1"}), Version(9, {"a2"}),
                                     Version(4, {"x"})};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 0, 0, 9}));
  // A larger write set read whole but for one key: that one, and only it.
  std::vector<std::string_view> big = {"p0", "p1", "p2", "p3"};
  std::vector<wire::GetResult> r2 = {Version(6, {"p1", "p2", "p3"}), Version(6, {"p0", "p2", "p3"}),
                                     Version(2, {}), Version(6, {"p0", "p1", "p2"})};
  EXPECT_EQ(ComputeRepairTimestamps(big, r2), (std::vector<uint64_t>{0, 0, 6, 0}));
  // A sibling read at another ts is another transaction's version: its own
  // claims still count (b at 8, written with c, puts c behind).
  std::vector<std::string_view> abc = {"a", "b", "c"};
  std::vector<wire::GetResult> r3 = {Version(5, {"b"}), Version(8, {"c"}), Version(3, {})};
  EXPECT_EQ(ComputeRepairTimestamps(abc, r3), (std::vector<uint64_t>{0, 0, 8}));
}

TEST_F(RepairTest, NotFoundAndNotNamedStaysAbsent) {
  std::vector<std::string_view> keys = {"A", "B"};
  std::vector<wire::GetResult> r1 = {Version(7, {"C"}), Missing()};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 0}));
}

TEST_F(RepairTest, TiesAreNotBehind) {
  std::vector<std::string_view> keys = {"A", "B"};
  std::vector<wire::GetResult> r1 = {Version(5, {"B"}), Version(5, {"A", "Z"})};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 0}));
}

TEST_F(RepairTest, NewerThanTheSiblingsClaimIsKept) {
  // B was overwritten alone at ts 9 after the {A, B} write at 5: B is ahead,
  // not behind, and A (ts 5) is not named by B's newer version.
  std::vector<std::string_view> keys = {"A", "B"};
  std::vector<wire::GetResult> r1 = {Version(5, {"B"}), Version(9, {})};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 0}));
}

TEST_F(RepairTest, TheNewestClaimWins) {
  // C is named by A@8 and by B@6; it returned 4 -> fetch 8.
  std::vector<std::string_view> keys = {"A", "B", "C"};
  std::vector<wire::GetResult> r1 = {Version(8, {"C"}), Version(6, {"C"}), Version(4, {})};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 0, 8}));
}

TEST_F(RepairTest, TombstonesCountAsWrites) {
  // A deleted at ts 6 in a transaction with B: B at 2 must be repaired to 6,
  // and a tombstone that is behind is repaired like any version.
  std::vector<std::string_view> keys = {"A", "B", "C"};
  std::vector<wire::GetResult> r1 = {Version(6, {"B"}, /*tombstone=*/true), Version(2, {}),
                                     Version(1, {}, /*tombstone=*/true)};
  r1[1] = Version(2, {"C"});
  // B@2 names C; C is a tombstone at 1 -> C needs 2.
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 6, 2}));
}

TEST_F(RepairTest, OwnKeyInSiblingsIsHarmless) {
  std::vector<std::string_view> keys = {"A", "B"};
  std::vector<wire::GetResult> r1 = {Version(5, {"A", "B"}), Version(5, {"A", "B"})};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0, 0}));
}

TEST_F(RepairTest, UnrequestedSiblingsAreIgnored) {
  std::vector<std::string_view> keys = {"A"};
  std::vector<wire::GetResult> r1 = {Version(5, {"X", "Y"})};
  EXPECT_EQ(ComputeRepairTimestamps(keys, r1), (std::vector<uint64_t>{0}));
}

TEST_F(RepairTest, EmptyRead) {
  EXPECT_TRUE(ComputeRepairTimestamps({}, {}).empty());
}

TEST(VisibleValueTest, TombstoneAndMissingReadAsAbsent) {
  wire::GetResult r;
  EXPECT_EQ(VisibleValue(r), std::nullopt);
  r.found = true;
  r.ts = 3;
  r.value = "x";
  EXPECT_EQ(VisibleValue(r), std::optional<std::string>("x"));
  r.tombstone = true;
  r.value = "";
  EXPECT_EQ(VisibleValue(r), std::nullopt);
  wire::GetResult empty;
  empty.found = true;
  EXPECT_EQ(VisibleValue(empty), std::optional<std::string>(""));  // empty value != absent
}

TEST(GroupTest, GroupsByAscendingPartitionKeepingKeyOrder) {
  std::vector<std::string_view> keys = {"c1", "a1", "c2", "b1", "a2"};
  auto groups = GroupByPartition(keys, FirstLetter);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0], (PartitionGroup{0, {1, 4}}));
  EXPECT_EQ(groups[1], (PartitionGroup{1, {3}}));
  EXPECT_EQ(groups[2], (PartitionGroup{2, {0, 2}}));
  EXPECT_TRUE(GroupByPartition({}, FirstLetter).empty());
}

TEST(DeduplicateTest, MapsRepeatsToOneKey) {
  std::vector<std::string> keys = {"x", "y", "x", "z", "y"};
  DistinctKeys d = Deduplicate(keys);
  EXPECT_EQ(d.keys, (std::vector<std::string_view>{"x", "y", "z"}));
  EXPECT_EQ(d.position, (std::vector<size_t>{0, 1, 0, 2, 1}));
}

// Decodes one built message, which must hold exactly one request.
wire::Request DecodeOne(const OutgoingRequest& req) {
  auto decoded = wire::DecodeRequests(req.message, wire::ProtocolLimits());
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->size(), 1u);
  wire::Request r = decoded->at(0);
  EXPECT_EQ(r.header.partition, req.partition);
  EXPECT_EQ(r.header.request_id, req.request_id);
  EXPECT_EQ(r.header.type, req.type);
  return r;
}

TEST(BuildTest, GetIsOneMessagePerPartitionWithAllItsKeys) {
  std::vector<std::string_view> keys = {"a1", "b1", "a2", "a3"};
  auto groups = GroupByPartition(keys, FirstLetter);
  auto reqs = BuildGetRequests(keys, groups, 10);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].request_id, 10u);
  EXPECT_EQ(reqs[1].request_id, 11u);
  EXPECT_EQ(reqs[0].indices, (std::vector<size_t>{0, 2, 3}));
  auto r0 = DecodeOne(reqs[0]);
  EXPECT_EQ(std::get<wire::GetRequest>(r0.body).keys,
            (std::vector<std::string_view>{"a1", "a2", "a3"}));
  auto r1 = DecodeOne(reqs[1]);
  EXPECT_EQ(std::get<wire::GetRequest>(r1.body).keys, (std::vector<std::string_view>{"b1"}));
}

TEST(BuildTest, RepairOnlyForKeysBehindAndOnlyTheirPartitions) {
  std::vector<std::string_view> keys = {"a1", "b1", "a2", "c1"};
  auto groups = GroupByPartition(keys, FirstLetter);
  std::vector<uint64_t> need = {0, 0, 42, 7};
  auto reqs = BuildRepairRequests(keys, need, groups, 1);
  ASSERT_EQ(reqs.size(), 2u);  // partition b has nothing behind
  EXPECT_EQ(reqs[0].partition, 0u);
  EXPECT_EQ(reqs[0].indices, (std::vector<size_t>{2}));
  auto r0 = DecodeOne(reqs[0]);
  auto& items0 = std::get<wire::GetByTsRequest>(r0.body).items;
  ASSERT_EQ(items0.size(), 1u);
  EXPECT_EQ(items0[0].key, "a2");
  EXPECT_EQ(items0[0].ts, 42u);
  EXPECT_EQ(reqs[1].partition, 2u);
  EXPECT_EQ(reqs[1].request_id, 2u);
  auto r1 = DecodeOne(reqs[1]);
  EXPECT_EQ(std::get<wire::GetByTsRequest>(r1.body).items[0].ts, 7u);

  EXPECT_TRUE(BuildRepairRequests(keys, std::vector<uint64_t>(4, 0), groups, 1).empty());
}

TEST(BuildTest, PrepareCarriesTheOtherKeysOfTheWholeWriteSet) {
  std::vector<WriteOp> writes = {{"a1", "x", false}, {"b1", "y", false}, {"a2", "", true}};
  std::vector<std::string_view> keys = {"a1", "b1", "a2"};
  auto groups = GroupByPartition(keys, FirstLetter);
  auto reqs = BuildPrepareRequests(writes, groups, 99, 0, 5);
  ASSERT_EQ(reqs.size(), 2u);
  auto r0 = DecodeOne(reqs[0]);
  EXPECT_EQ(r0.header.flags, 0);
  auto& p0 = std::get<wire::PrepareRequest>(r0.body);
  EXPECT_EQ(p0.ts, 99u);
  ASSERT_EQ(p0.items.size(), 2u);
  EXPECT_EQ(p0.items[0].key, "a1");
  EXPECT_EQ(p0.items[0].value, "x");
  EXPECT_FALSE(p0.items[0].tombstone);
  EXPECT_EQ(p0.items[0].siblings.ToVector(), (std::vector<std::string_view>{"b1", "a2"}));
  EXPECT_EQ(p0.items[1].key, "a2");
  EXPECT_TRUE(p0.items[1].tombstone);
  EXPECT_EQ(p0.items[1].siblings.ToVector(), (std::vector<std::string_view>{"a1", "b1"}));
  auto r1 = DecodeOne(reqs[1]);
  auto& p1 = std::get<wire::PrepareRequest>(r1.body);
  ASSERT_EQ(p1.items.size(), 1u);
  EXPECT_EQ(p1.items[0].siblings.ToVector(), (std::vector<std::string_view>{"a1", "a2"}));

  auto now = BuildPrepareRequests(writes, groups, 99, wire::kFlagCommitNow, 1);
  EXPECT_EQ(DecodeOne(now[0]).header.flags, wire::kFlagCommitNow);
}

TEST(BuildTest, SingleWriteHasNoSiblings) {
  std::vector<WriteOp> writes = {{"a", "v", false}};
  std::vector<std::string_view> keys = {"a"};
  auto reqs = BuildPrepareRequests(writes, GroupByPartition(keys, FirstLetter), 1, 0, 1);
  auto r = DecodeOne(reqs[0]);
  EXPECT_TRUE(std::get<wire::PrepareRequest>(r.body).items[0].siblings.empty());
}

TEST(BuildTest, CommitAndUnlockGoToEveryPartition) {
  std::vector<std::string_view> keys = {"a", "c"};
  auto groups = GroupByPartition(keys, FirstLetter);
  auto commits = BuildCommitRequests(groups, 77, 3);
  ASSERT_EQ(commits.size(), 2u);
  EXPECT_EQ(std::get<wire::CommitRequest>(DecodeOne(commits[0]).body).ts, 77u);
  EXPECT_EQ(commits[1].partition, 2u);
  std::vector<uint32_t> parts = {4, 1};
  auto unlocks = BuildUnlockRequests(parts, 55, 8);
  ASSERT_EQ(unlocks.size(), 2u);
  EXPECT_EQ(unlocks[0].partition, 4u);
  EXPECT_EQ(std::get<wire::UnlockRequest>(DecodeOne(unlocks[1]).body).txn, 55u);
}

TEST(BuildTest, LockSortsKeysWithinThePartition) {
  std::vector<std::string_view> keys = {"az", "b", "am", "aa"};
  auto groups = GroupByPartition(keys, FirstLetter);
  auto req = BuildLockRequest(keys, groups[0], kv::LockMode::kExclusive, 12, 4);
  EXPECT_EQ(req.indices, (std::vector<size_t>{3, 2, 0}));
  auto lock = std::get<wire::LockRequest>(DecodeOne(req).body);
  EXPECT_EQ(lock.txn, 12u);
  ASSERT_EQ(lock.keys.size(), 3u);
  EXPECT_EQ(lock.keys[0].key, "aa");
  EXPECT_EQ(lock.keys[1].key, "am");
  EXPECT_EQ(lock.keys[2].key, "az");
  EXPECT_EQ(lock.keys[0].mode, kv::LockMode::kExclusive);
}

}  // namespace
}  // namespace rampart::txn::internal
