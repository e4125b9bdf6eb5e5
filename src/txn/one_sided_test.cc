// The one-sided data path end to end: txn::Client in every get/put mode
// against in-process kv-nodes (kv::KvNode, one partition each) over UCX on
// shared memory — GET+/PUT+ over message channels, GET* through the address
// cache, slot reuse under aggressive GC, and dead or replaced nodes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "txn/client.h"
#include "txn/test_cluster.h"

namespace rampart::txn {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> Keys(int n, const std::string& prefix = "k") {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

Status PutAll(Client& c, const std::vector<std::string>& keys, const std::string& tag) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& k : keys) pairs.emplace_back(k, k + "=" + tag);
  return c.MultiPut(pairs);
}

void ExpectAll(Client& c, const std::vector<std::string>& keys, const std::string& tag) {
  auto got = c.MultiGet(keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE((*got)[i].has_value()) << keys[i];
    EXPECT_EQ(*(*got)[i], keys[i] + "=" + tag);
  }
}

// ---------------------------------------------------------------------------

using Modes = std::tuple<GetMode, PutMode>;
class ModesTest : public ::testing::TestWithParam<Modes> {};

TEST_P(ModesTest, ReadsWhatWasWrittenAcrossPartitions) {
  LocalCluster cluster(2, /*grace_ms=*/1000);
  auto [get, put] = GetParam();
  auto writer = cluster.Connect(get, put);
  auto reader = cluster.Connect(get, put);
  ASSERT_TRUE(writer && reader);
  const auto keys = Keys(16);
  ASSERT_TRUE(PutAll(*writer, keys, "1").ok());
  ExpectAll(*reader, keys, "1");
  ExpectAll(*reader, keys, "1");
  ASSERT_TRUE(PutAll(*writer, keys, "2").ok());
  ExpectAll(*reader, keys, "2");
  ASSERT_TRUE(writer->Del("k3").ok());
  auto gone = reader->Get("k3");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_FALSE(gone->has_value());
  auto absent = reader->Get("never-written");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());

  const Client::Stats s = reader->stats();
  if (get == GetMode::kRead) {
    // Read 1 learns the addresses, read 2 uses them, read 3 finds them all
    // superseded by the second write.
    EXPECT_EQ(s.slot_reads, 16u);
    EXPECT_GE(s.slot_rejects, 16u);
  } else {
    EXPECT_EQ(s.slot_reads + s.slot_rejects + s.cache_misses, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, ModesTest,
    ::testing::Combine(::testing::Values(GetMode::kRpc, GetMode::kRing, GetMode::kRead),
                       ::testing::Values(PutMode::kRpc, PutMode::kRing)),
    [](const ::testing::TestParamInfo<Modes>& info) {
      return StrCat("get_", GetModeName(std::get<0>(info.param)), "_put_",
                    PutModeName(std::get<1>(info.param)));
    });

// A GET* writer learns where its writes live from the PREPARE replies
// (kFlagReturnSlots): its next reads of those keys are one-sided, without a
// GET first, after a two-partition RAMP write, a single-partition write and a
// delete alike. Another client's write later supersedes the slots: the reads
// are refused one-sidedly and fall back to GET, which finds the new values.
TEST(GetStarOwnWritesTest, AWriterReadsWhatItWroteOneSidedly) {
  LocalCluster cluster(2, /*grace_ms=*/1000);
  auto writer = cluster.Connect(GetMode::kRead, PutMode::kRpc);
  auto other = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_TRUE(writer && other);
  const auto keys = Keys(16);
  ASSERT_TRUE(PutAll(*writer, keys, "1").ok());  // both partitions: PREPARE, COMMIT
  ExpectAll(*writer, keys, "1");
  EXPECT_EQ(writer->stats().slot_reads, 16u);
  EXPECT_EQ(writer->stats().cache_misses, 0u);
  EXPECT_EQ(writer->stats().slot_rejects, 0u);

  ASSERT_TRUE(writer->Put("k3", "single").ok());  // one partition: committed at once
  ASSERT_TRUE(writer->Del("k4").ok());
  auto k3 = writer->Get("k3");
  auto k4 = writer->Get("k4");
  ASSERT_TRUE(k3.ok() && k4.ok());
  EXPECT_EQ(*k3, std::optional<std::string>("single"));
  EXPECT_EQ(*k4, std::nullopt);
  EXPECT_EQ(writer->stats().slot_reads, 18u);
  EXPECT_EQ(writer->stats().cache_misses, 0u);

  // A later millisecond: the other client's timestamps are then above the
  // writer's (within one millisecond their sequences decide).
  std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(PutAll(*other, keys, "2").ok());
  ExpectAll(*writer, keys, "2");
  EXPECT_EQ(writer->stats().slot_rejects, 16u);
}

// One node; a PUT+ writer and a GET* reader.
class GetStarTest : public ::testing::Test {
 protected:
  void Start(uint32_t grace_ms) {
    cluster_ = std::make_unique<LocalCluster>(1, grace_ms);
    writer_ = cluster_->Connect(GetMode::kRpc, PutMode::kRing);
    reader_ = cluster_->Connect(GetMode::kRead, PutMode::kRing);
    ASSERT_TRUE(writer_ && reader_);
  }
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> writer_, reader_;
};

// An arena that grew: addresses in every extent are read one-sidedly (each
// extent imported by its own DESCRIBE) and their values are right.
TEST(GetStarExtentsTest, ReadsOneSidedlyFromEveryExtent) {
  LocalCluster cluster(1, /*grace_ms=*/1000, "ucx", /*arena_bytes=*/1 << 20);
  auto writer = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  auto reader = cluster.Connect(GetMode::kRead, PutMode::kRpc);
  ASSERT_TRUE(writer && reader);
  std::vector<std::string> keys = Keys(64);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& k : keys) pairs.emplace_back(k, k + std::string(100000, '#'));
  for (const auto& p : pairs) ASSERT_TRUE(writer->Put(p.first, p.second).ok()) << p.first;
  for (int round = 0; round < 2; ++round) {  // round 0 learns the addresses, 1 uses them
    auto got = reader->MultiGet(keys);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE((*got)[i].has_value()) << keys[i];
      EXPECT_EQ(*(*got)[i], pairs[i].second) << keys[i];
    }
  }
  EXPECT_EQ(reader->stats().slot_reads, 64u);  // 6.4 MB: extents 0-3 of a 1 MiB first one
  EXPECT_EQ(reader->stats().slot_rejects, 0u);
}

TEST_F(GetStarTest, StaleAddressFallsBackToGetPlusAndIsRefreshed) {
  ASSERT_NO_FATAL_FAILURE(Start(/*grace_ms=*/1000));
  ASSERT_TRUE(writer_->Put("a", "v1").ok());
  EXPECT_EQ(*reader_->Get("a"), "v1");  // miss: GET+, address cached
  EXPECT_EQ(*reader_->Get("a"), "v1");  // one-sided
  EXPECT_EQ(reader_->stats().cache_misses, 1u);
  EXPECT_EQ(reader_->stats().slot_reads, 1u);
  ASSERT_TRUE(writer_->Put("a", "v2").ok());
  EXPECT_EQ(*reader_->Get("a"), "v2");  // the old slot is no longer VALID: refused
  EXPECT_EQ(reader_->stats().slot_rejects, 1u);
  EXPECT_EQ(*reader_->Get("a"), "v2");  // the refreshed address
  EXPECT_EQ(reader_->stats().slot_reads, 2u);
}

TEST_F(GetStarTest, ReclaimedAndReusedSlotIsNeverAccepted) {
  // grace 0: a superseded slot is freed at the node's next tick (100 ms) and
  // handed to the next write of its size class with a new gen.
  ASSERT_NO_FATAL_FAILURE(Start(/*grace_ms=*/0));
  ASSERT_TRUE(writer_->Put("a", "old-value").ok());
  EXPECT_EQ(*reader_->Get("a"), "old-value");  // caches a's slot
  ASSERT_TRUE(writer_->Put("a", "new-value").ok());
  std::this_thread::sleep_for(300ms);          // the old slot is reclaimed
  ASSERT_TRUE(writer_->Put("b", "bbb-value").ok());  // same class: likely a's old slot
  for (int i = 0; i < 3; ++i) {
    auto got = reader_->Get("a");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(**got, "new-value");
  }
  EXPECT_EQ(reader_->stats().slot_rejects, 1u);
  EXPECT_EQ(reader_->stats().slot_reads, 2u);
}

// Writers overwrite a few keys as fast as they can (grace 0, so slots are
// reclaimed and reused all the time) while readers use GET*. Every value a
// reader accepts must be one a writer wrote for that key.
TEST(GetStarTortureTest, EveryAcceptedReadIsAWrittenVersion) {
  LocalCluster cluster(2, /*grace_ms=*/0);
  constexpr int kKeys = 8;
  const auto keys = Keys(kKeys, "t");
  std::mutex mu;
  std::map<std::string, std::set<std::string>> written;  // GUARDED_BY(mu)
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, reads{0}, writes{0}, errors{0};
  Client::Stats totals;

  auto writer = [&](int w) {
    auto c = cluster.Connect(GetMode::kRpc, PutMode::kRing, Isolation::kNone);
    if (!c) return;
    std::mt19937 rng(w);
    for (uint64_t n = 0; !stop && n < 200'000; ++n) {
      const std::string& key = keys[rng() % kKeys];
      // Lengths vary within one slot size class and across two.
      std::string value = StrCat(key, "|w", w, "|", n, "|");
      value.append(rng() % 96, static_cast<char>('a' + n % 26));
      {
        std::lock_guard lock(mu);
        written[key].insert(value);
      }
      if (c->Put(key, value).ok()) ++writes; else ++errors;
    }
  };
  auto reader = [&](int r) {
    auto c = cluster.Connect(GetMode::kRead, PutMode::kRing, Isolation::kNone);
    if (!c) return;
    std::mt19937 rng(100 + r);
    for (uint64_t n = 0; !stop && n < 400'000; ++n) {
      std::vector<std::string> ask;
      for (int i = 0; i < 4; ++i) ask.push_back(keys[rng() % kKeys]);
      auto got = c->MultiGet(ask);
      if (!got.ok()) {
        ++errors;
        continue;
      }
      ++reads;
      std::lock_guard lock(mu);
      for (size_t i = 0; i < ask.size(); ++i) {
        if ((*got)[i] && !written[ask[i]].contains(*(*got)[i])) {
          if (bad++ == 0) ADD_FAILURE() << ask[i] << " read as never-written \"" << *(*got)[i] << "\"";
        }
      }
    }
    std::lock_guard lock(mu);
    totals += c->stats();
  };
  std::vector<std::thread> threads;
  threads.emplace_back(writer, 0);
  threads.emplace_back(reader, 0);
  std::this_thread::sleep_for(3s);
  stop = true;
  for (auto& t : threads) t.join();

  const uint64_t keys_read = totals.slot_reads + totals.slot_rejects + totals.cache_misses;
  std::printf("torture: %llu writes, %llu reads (%llu keys): %llu slot reads accepted, %llu "
              "refused, %llu misses; fallback rate %.4f\n",
              static_cast<unsigned long long>(writes.load()),
              static_cast<unsigned long long>(reads.load()),
              static_cast<unsigned long long>(keys_read),
              static_cast<unsigned long long>(totals.slot_reads),
              static_cast<unsigned long long>(totals.slot_rejects),
              static_cast<unsigned long long>(totals.cache_misses),
              totals.slot_fallback_rate());
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_GT(writes.load(), 100u);
  EXPECT_GT(totals.slot_reads, 100u);   // the one-sided path was exercised...
  EXPECT_GT(totals.slot_rejects, 0u);   // ...and so was its fallback
}

TEST_F(GetStarTest, AddressesOfADeadNodeAreNeverUsed) {
  ASSERT_NO_FATAL_FAILURE(Start(/*grace_ms=*/1000));
  ASSERT_TRUE(writer_->Put("a", "before").ok());
  EXPECT_EQ(*reader_->Get("a"), "before");
  EXPECT_EQ(*reader_->Get("a"), "before");
  ASSERT_EQ(reader_->stats().slot_reads, 1u);

  cluster_->Stop(0);
  auto while_down = reader_->Get("a");
  EXPECT_FALSE(while_down.ok()) << "read a dead node's memory: " << **while_down;

  // A new process on the same port starts empty: the old address must not be
  // read against its arena.
  cluster_->Restart(0);
  // The reader found node 0 unreachable; its probe finds it again (bounded).
  for (int i = 0; i < 200 && reader_->unreachable_partitions() > 0; ++i) {
    std::this_thread::sleep_for(10ms);
    reader_->Tick();
  }
  auto after = reader_->Get("a");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_FALSE(after->has_value());
  EXPECT_EQ(reader_->stats().slot_reads, 1u);
}

TEST(ClientModesTest, RingAndReadNeedUcx) {
  ClientOptions o;
  o.nodes = {NodeConfig{0, "127.0.0.1", 1}};
  o.fabric.backend = transport::Backend::kTcp;
  o.get_mode = GetMode::kRead;
  auto c = Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("ucx"), std::string::npos) << c.status().ToString();
  o.get_mode = GetMode::kRpc;
  o.put_mode = PutMode::kRing;
  EXPECT_FALSE(Client::Connect(o).ok());
  o.put_mode = PutMode::kRpc;
  EXPECT_TRUE(Client::Connect(o).ok());
}

}  // namespace
}  // namespace rampart::txn
