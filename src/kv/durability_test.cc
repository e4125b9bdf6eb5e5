// Durable partitions end to end without processes: an executor whose
// changes go to a redo log in a scratch directory, closed and recovered into a
// new executor; fuzzy checkpoints taken while writes go on.
#include "kv/durability.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <random>

#include "kv/protocol.h"
#include "kv/test_region.h"
#include "wal/test_stores.h"

namespace rampart::kv {
namespace {

using namespace std::chrono_literals;
constexpr uint16_t kPartition = 5;

// What a reader can observe of a partition: each key's latest committed value
// (or tombstone), and every prepared-but-uncommitted version.
struct Observed {
  std::map<std::string, std::string> latest;             // "<deleted>" for a tombstone
  std::map<std::pair<std::string, uint64_t>, std::string> prepared;
  friend bool operator==(const Observed&, const Observed&) = default;
};

Observed Observe(Partition& p) {
  Observed o;
  p.StartScan();
  while (p.ScanNext(1000, [&](const VersionView& v) {
    if (v.latest) o.latest[std::string(v.key)] = v.tombstone ? "<deleted>" : std::string(v.value);
    if (!v.committed) o.prepared[{std::string(v.key), v.ts}] = std::string(v.value);
  })) {
  }
  return o;
}

class DurableExecutor {
 public:
  DurableExecutor(const std::string& dir, DurabilityOptions options)
      : region_(16 << 20, 0), options_(std::move(options)) {
    options_.open_store = [dir](uint32_t) -> Result<std::unique_ptr<wal::SegmentStore>> {
      RAMPART_ASSIGN_OR_RETURN(auto s, wal::DirectoryStore::Open(dir, 1 << 20));
      return std::unique_ptr<wal::SegmentStore>(std::move(s));
    };
    options_.cluster = "test";
    options_.partition_count = 8;
    exec_ = std::make_unique<PartitionExecutor>(kPartition, region_.span(), ExecutorOptions{});
    auto d = DurablePartition::Open(options_, kPartition, *exec_, wire::ProtocolLimits(), nullptr);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (d.ok()) durable_ = std::move(*d);
  }

  // One request in one turn; the log committed before the reply "leaves".
  wire::Reply Run(const std::vector<std::byte>& message) {
    auto out = exec_->Execute(1, message, Clock::now());
    EXPECT_TRUE(durable_->CommitTurn().ok());
    replies_.push_back(std::move(out));
    auto decoded = wire::DecodeReplies(replies_.back()[0].message, wire::ProtocolLimits());
    EXPECT_TRUE(decoded.ok());
    return (*decoded)[0];
  }
  void Prepare(uint64_t ts, const std::vector<std::pair<std::string, std::string>>& kvs,
               uint8_t flags = 0, bool tombstones = false,
               std::vector<wire::KeyTs> unchanged = {}) {
    std::vector<std::string_view> keys;
    for (auto& [k, v] : kvs) keys.push_back(k);
    siblings_.push_back(wire::EncodeKeyList(keys));
    std::vector<wire::PrepareItemIn> items;
    for (auto& [k, v] : kvs) items.push_back({k, v, siblings_.back(), tombstones});
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Prepare(kPartition, ++id_, ts, items, flags, unchanged);
    EXPECT_TRUE(Run(msg).ok());
  }
  void Commit(uint64_t ts) {
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Commit(kPartition, ++id_, ts);
    EXPECT_TRUE(Run(msg).ok());
  }
  void Flush() {
    std::vector<std::byte> msg;
    wire::RequestWriter(&msg).Flush(kPartition, ++id_);
    EXPECT_TRUE(Run(msg).ok());
  }

  Partition& partition() { return exec_->mutable_partition(); }
  DurablePartition& durable() { return *durable_; }

 private:
  TestRegion region_;
  DurabilityOptions options_;
  std::unique_ptr<PartitionExecutor> exec_;
  std::unique_ptr<DurablePartition> durable_;
  std::vector<std::string> siblings_;
  std::vector<std::vector<OutgoingReply>> replies_;
  uint64_t id_ = 0;
};

TEST(DurablePartitionTest, WhatWasAcknowledgedComesBackPreparedVersionsToo) {
  wal::testing::ScratchDir dir;
  Observed before;
  {
    DurableExecutor e(dir.path, {});
    e.Prepare(10, {{"a", "1"}, {"b", "2"}});
    e.Commit(10);
    e.Prepare(20, {{"c", "3"}}, wire::kFlagCommitNow);
    e.Prepare(30, {{"a", "x"}, {"b", "y"}});  // committed elsewhere, not here yet
    e.Prepare(40, {{"c", ""}}, wire::kFlagCommitNow, /*tombstones=*/true);
    before = Observe(e.partition());
  }
  EXPECT_EQ(before.latest, (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}, {"c", "<deleted>"}}));
  EXPECT_EQ(before.prepared.size(), 2u);
  DurableExecutor again(dir.path, {});
  EXPECT_EQ(Observe(again.partition()), before);
  EXPECT_EQ(again.partition().LiveKeys(), 2u);
  // The prepared versions commit as if nothing happened.
  again.Commit(30);
  EXPECT_EQ(again.partition().Get("a")->value, "x");
  EXPECT_EQ(again.durable().recovered().log_records_replayed, 5u);
}

// A PREPARE with IF_UNCHANGED is logged without its list of read versions
// (docs/log_format.md is unchanged): it replays as a plain commit-now write.
TEST(DurablePartitionTest, AnIfUnchangedWriteIsReplayedAsAPlainOne) {
  wal::testing::ScratchDir dir;
  {
    DurableExecutor e(dir.path, {});
    e.Prepare(10, {{"a", "1"}}, wire::kFlagCommitNow);
    e.Prepare(20, {{"a", "2"}, {"b", "1"}}, wire::kFlagCommitNow | wire::kFlagIfUnchanged,
              /*tombstones=*/false, {{"a", 10}, {"b", 0}, {"read only", 0}});
  }
  DurableExecutor again(dir.path, {});
  EXPECT_EQ(again.durable().recovered().log_records_replayed, 2u);
  EXPECT_EQ(again.partition().Get("a")->value, "2");
  EXPECT_EQ(again.partition().Get("b")->value, "1");
}

TEST(DurablePartitionTest, AFlushIsReplayedToo) {
  wal::testing::ScratchDir dir;
  {
    DurableExecutor e(dir.path, {});
    e.Prepare(10, {{"a", "1"}}, wire::kFlagCommitNow);
    e.Flush();
    e.Prepare(20, {{"b", "2"}}, wire::kFlagCommitNow);
  }
  DurableExecutor again(dir.path, {});
  EXPECT_FALSE(again.partition().Get("a").has_value());
  EXPECT_EQ(again.partition().Get("b")->value, "2");
}

// Checkpoints scanned a few keys per turn while random writes go on, over and
// over: whatever state the partition ends in, the newest checkpoint plus the
// log recreate exactly it.
TEST(DurablePartitionTest, FuzzyCheckpointsTakenDuringWritesRecoverTheExactState) {
  wal::testing::ScratchDir dir;
  DurabilityOptions options;
  options.checkpoint_log_bytes = 1;  // always due
  options.checkpoint_keys_per_turn = 7;
  std::mt19937 rng(42);
  Observed live;
  uint64_t checkpoints = 0;
  {
    DurableExecutor e(dir.path, options);
    uint64_t ts = 1;
    std::vector<uint64_t> open;  // prepared, not committed
    for (int turn = 0; turn < 3000; ++turn) {
      const std::string k1 = "k" + std::to_string(rng() % 150);
      const std::string k2 = "k" + std::to_string(rng() % 150);
      const std::string v = std::to_string(turn) + std::string(rng() % 300, 'v');
      switch (rng() % 6) {
        case 0:
        case 1: e.Prepare(++ts, {{k1, v}}, wire::kFlagCommitNow); break;
        case 2:
          if (k1 != k2) {
            e.Prepare(++ts, {{k1, v}, {k2, v}});
            open.push_back(ts);
          }
          break;
        case 3:
          if (!open.empty()) {
            e.Commit(open.back());
            open.pop_back();
          }
          break;
        case 4: e.Prepare(++ts, {{k1, ""}}, wire::kFlagCommitNow, true); break;
        default:
          if (turn % 500 == 499) e.Flush();
          break;
      }
      const bool was_busy = e.durable().busy();
      ASSERT_TRUE(e.durable().Background(Clock::now()).ok());
      if (was_busy && !e.durable().busy()) ++checkpoints;
    }
    live = Observe(e.partition());
  }
  EXPECT_GE(checkpoints, 5u);  // each waits for the log to outgrow the last checkpoint
  DurableExecutor again(dir.path, options);
  EXPECT_GT(again.durable().recovered().checkpoint_records, 0u);
  EXPECT_EQ(Observe(again.partition()), live);
}

TEST(DurablePartitionTest, AnotherNodesLogIsRefused) {
  wal::testing::ScratchDir dir;
  {
    DurableExecutor e(dir.path, {});
    e.Prepare(10, {{"a", "1"}}, wire::kFlagCommitNow);
  }
  DurabilityOptions other;
  other.node = 3;
  TestRegion region(1 << 20, 0);
  PartitionExecutor exec(kPartition, region.span(), ExecutorOptions{});
  other.open_store = [&](uint32_t) -> Result<std::unique_ptr<wal::SegmentStore>> {
    RAMPART_ASSIGN_OR_RETURN(auto s, wal::DirectoryStore::Open(dir.path, 1 << 20));
    return std::unique_ptr<wal::SegmentStore>(std::move(s));
  };
  other.cluster = "test";
  other.partition_count = 8;
  auto d = DurablePartition::Open(other, kPartition, exec, wire::ProtocolLimits(), nullptr);
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(exec.partition().Get("a").has_value());
}

TEST(DurablePartitionTest, UnderAlwaysATurnIsAckedOnlyOnceItsSyncRan) {
  wal::testing::ScratchDir dir;
  DurabilityOptions options;
  options.sync = wal::SyncPolicy::kAlways;
  DurableExecutor e(dir.path, options);
  for (uint64_t ts = 1; ts <= 20; ++ts) {
    e.Prepare(ts, {{"k" + std::to_string(ts), "v"}}, wire::kFlagCommitNow);
    // Written, its sync asked for; acked once the sync thread ran.
    const uint64_t turn = e.durable().turn_lsn();
    for (int i = 0; i < 2000 && e.durable().acked_lsn() < turn; ++i) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_GE(e.durable().acked_lsn(), turn);
    EXPECT_GE(e.durable().writer().durable_lsn(), turn);
  }
  EXPECT_TRUE(e.durable().sync_error().ok());
}

TEST(LogSyncerTest, SyncsEveryWriterEveryInterval) {
  wal::testing::ScratchDir dir;
  DurableExecutor e(dir.path, {});
  e.Prepare(10, {{"a", "1"}}, wire::kFlagCommitNow);
  wal::LogWriter& w = e.durable().writer();
  EXPECT_LT(w.durable_lsn(), w.committed_lsn());
  {
    LogSyncer syncer(5ms, nullptr);
    syncer.Add(&w);
    for (int i = 0; i < 400 && w.durable_lsn() < w.committed_lsn(); ++i) std::this_thread::sleep_for(5ms);
    syncer.Remove(&w);
  }
  EXPECT_EQ(w.durable_lsn(), w.committed_lsn());
}

// The shape a node's logs were written with is kept in <node dir>/layout; a
// configuration of another shape is refused, naming it, and so is a
// directory from before layout files holding the log of a partition the node
// no longer serves. Empty partition directories and the node's own are fine.
TEST(DataLayoutTest, LogsOfAnotherShapeAreRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / StrCat("rampart-layout-", getpid());
  fs::remove_all(dir);
  // A new directory: created, with its layout (4 nodes x 2: node 1 serves 1 and 5).
  ASSERT_TRUE(CheckDataLayout(dir.string(), 1, {1, 5}, 4, 2).ok());
  std::ifstream in(dir / "node-1" / "layout");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "rampart kv layout 1\nnodes 4\npartitions_per_node 2\n");
  EXPECT_TRUE(CheckDataLayout(dir.string(), 1, {1, 5}, 4, 2).ok());  // the same again
  Status refused = CheckDataLayout(dir.string(), 1, {1, 5, 9}, 4, 3);  // more partitions
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("kv.partitions_per_node = 2"), std::string::npos)
      << refused.ToString();
  refused = CheckDataLayout(dir.string(), 1, {1, 6}, 5, 2);  // another node count
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("written by a cluster of 4 nodes x 2"), std::string::npos)
      << refused.ToString();
  std::ofstream(dir / "node-1" / "layout") << "something else\n";
  EXPECT_EQ(CheckDataLayout(dir.string(), 1, {1, 5}, 4, 2).code(), StatusCode::kCorruption);

  // A directory from before layout files, with logs of partitions 1 and 5.
  fs::remove(dir / "node-1" / "layout");
  for (uint32_t p : {1u, 5u}) {
    fs::create_directories(PartitionLogDir(dir.string(), 1, p));
    std::ofstream(PartitionLogDir(dir.string(), 1, p) + "/segment-0") << "x";
  }
  fs::create_directories(PartitionLogDir(dir.string(), 1, 9));  // empty: never logged
  fs::create_directories(dir / "node-1" / "partition-x");      // not a partition's
  // Now 1 partition per node: node 1 serves only 1, partition 5's keys are orphaned.
  refused = CheckDataLayout(dir.string(), 1, {1}, 4, 1);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find(PartitionLogDir(dir.string(), 1, 5)), std::string::npos)
      << refused.ToString();
  EXPECT_NE(refused.message().find("kv.partitions_per_node >= 2"), std::string::npos)
      << refused.ToString();
  EXPECT_FALSE(fs::exists(dir / "node-1" / "layout"));  // nothing written when refused
  // With the shape it was written with it starts, and the layout is recorded.
  EXPECT_TRUE(CheckDataLayout(dir.string(), 1, {1, 5}, 4, 2).ok());
  EXPECT_TRUE(fs::exists(dir / "node-1" / "layout"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rampart::kv
