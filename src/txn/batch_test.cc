// Client::RunBatch against in-process kv-nodes: mixed batches of reads and
// writes with and without coalescing, replicas, duplicate writes, a dead node,
// and read atomicity of concurrent batches (the proxy's execution model).
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "txn/test_cluster.h"

namespace rampart::txn {
namespace {

// Partition of a key for these tests: stable, spreads over n.
uint32_t Home(std::string_view key, uint32_t n) { return std::hash<std::string_view>()(key) % n; }

// The first of prefix0, prefix1, ... whose partition is (`same`) or is not
// (`!same`) that of `key`.
std::string KeyBeside(std::string_view key, bool same, std::string_view prefix, uint32_t n) {
  for (int i = 0;; ++i) {
    std::string k = std::string(prefix) + std::to_string(i);
    if ((Home(k, n) == Home(key, n)) == same) return k;
  }
}

// BatchTxn holds views: the tests' keys and values live here.
std::string_view Keep(std::string s) {
  static std::mutex mu;
  static std::deque<std::string> kept;
  std::lock_guard<std::mutex> lock(mu);
  return kept.emplace_back(std::move(s));
}

BatchTxn ReadTxn(const std::vector<std::string>& keys, uint32_t n, uint32_t shift = 0) {
  BatchTxn t;
  for (const auto& k : keys) t.reads.push_back({Keep(k), (Home(k, n) + shift) % n});
  return t;
}

// Writes every key as `value` to `replicas` consecutive partitions.
BatchTxn WriteTxn(const std::vector<std::string>& keys, const std::string& value, uint32_t n,
                  uint32_t replicas = 1) {
  BatchTxn t;
  const std::string_view v = Keep(value);
  for (const auto& k : keys) {
    const std::string_view key = Keep(k);
    for (uint32_t r = 0; r < replicas; ++r) t.writes.push_back({key, v, false, (Home(k, n) + r) % n});
  }
  return t;
}

class BatchTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  const std::string backend = std::get<0>(GetParam());
  const bool coalesce = std::get<1>(GetParam());
};

TEST_P(BatchTest, MixedBatchReadsWritesAndDeletes) {
  LocalCluster cluster(3, 5000, backend);
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  std::vector<std::string> a{"a0", "a1", "a2", "a3"}, b{"b0"}, c{"c0", "c1", "c2"};
  std::vector<BatchTxn> first;
  first.push_back(WriteTxn(a, "A", 3));
  first.push_back(WriteTxn(b, "B", 3));  // one partition: committed in round 1
  first.push_back(ReadTxn(c, 3));        // nothing there yet
  client->RunBatch(first, coalesce);
  for (const auto& t : first) ASSERT_TRUE(t.status.ok()) << t.status.ToString();
  EXPECT_EQ(first[2].values, std::vector<std::optional<std::string>>(3, std::nullopt));

  std::vector<BatchTxn> second;
  second.push_back(ReadTxn({"a2", "b0", "a2", "zz"}, 3));  // a repeated key, a missing one
  BatchTxn del;
  del.writes.push_back({"a1", "", true, Home("a1", 3)});
  second.push_back(std::move(del));
  second.push_back(ReadTxn(a, 3));
  client->RunBatch(second, coalesce);
  for (const auto& t : second) ASSERT_TRUE(t.status.ok()) << t.status.ToString();
  EXPECT_EQ(second[0].values,
            (std::vector<std::optional<std::string>>{"A", "B", "A", std::nullopt}));
  // Concurrent with the delete: a1 is either still there or gone, the rest A.
  EXPECT_EQ(second[2].values[0], "A");
  EXPECT_EQ(second[2].values[3], "A");

  std::vector<BatchTxn> third{ReadTxn(a, 3)};
  client->RunBatch(third, coalesce);
  ASSERT_TRUE(third[0].status.ok());
  EXPECT_EQ(third[0].values, (std::vector<std::optional<std::string>>{"A", std::nullopt, "A", "A"}));
  EXPECT_EQ(client->stats().transactions, 7u);
}

// RunBatch's writes leave their slots in a GET* client's address cache:
// committed in round 1 (one partition) or after COMMIT (several), the keys
// are read one-sidedly next, with no GET. (GET* needs ucx: tcp exposes no
// arena.)
TEST(BatchSlotsTest, AGetStarClientReadsItsBatchWritesOneSidedly) {
  LocalCluster cluster(3, 5000, "ucx");
  auto client = cluster.Connect(GetMode::kRead, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  uint64_t slot_reads = 0;
  for (bool coalesce : {false, true}) {
    const std::string tag = coalesce ? "c" : "s";
    std::vector<std::string> a{tag + "a0", tag + "a1", tag + "a2", tag + "a3"}, b{tag + "b0"};
    std::vector<BatchTxn> writes;
    writes.push_back(WriteTxn(a, "A", 3));
    writes.push_back(WriteTxn(b, "B", 3));
    client->RunBatch(writes, coalesce);
    for (const auto& t : writes) ASSERT_TRUE(t.status.ok()) << t.status.ToString();
    std::vector<BatchTxn> reads{ReadTxn(a, 3), ReadTxn(b, 3)};
    client->RunBatch(reads, coalesce);
    ASSERT_TRUE(reads[0].status.ok() && reads[1].status.ok());
    EXPECT_EQ(reads[0].values, std::vector<std::optional<std::string>>(4, "A"));
    EXPECT_EQ(reads[1].values, std::vector<std::optional<std::string>>{"B"});
    slot_reads += 5;
    EXPECT_EQ(client->stats().slot_reads, slot_reads) << tag;
    EXPECT_EQ(client->stats().cache_misses, 0u) << tag;
  }
}

// ReadOneSided: a read transaction whose keys all have cached addresses is
// served from their slots with no message; one with a key never seen, or a
// stale address, is left to RunBatch untouched.
TEST(BatchSlotsTest, ReadOneSidedServesOnlyCachedKeysAndSendsNothing) {
  LocalCluster cluster(3, 5000, "ucx");
  auto client = cluster.Connect(GetMode::kRead, PutMode::kRpc);
  auto other = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  ASSERT_NE(other, nullptr);
  std::vector<BatchTxn> put{WriteTxn({"o1", "o2", "o3"}, "v", 3)};
  client->RunBatch(put, /*coalesce=*/true);
  ASSERT_TRUE(put[0].status.ok()) << put[0].status.ToString();
  EXPECT_FALSE(client->MayExist("never", Home("never", 3)));
  EXPECT_TRUE(client->MayExist("o1", Home("o1", 3)));
  // Only arenas already imported are read this way (RunBatch's first
  // one-sided read imports them, with a message).
  BatchTxn first = ReadTxn({"o1", "o3"}, 3);
  EXPECT_FALSE(client->ReadOneSided(first));
  std::vector<BatchTxn> imports{ReadTxn({"o1", "o2", "o3"}, 3)};
  client->RunBatch(imports, /*coalesce=*/true);
  ASSERT_TRUE(imports[0].status.ok());

  const uint64_t misses = client->stats().cache_misses;
  const uint64_t reads = client->stats().slot_reads;
  BatchTxn read = ReadTxn({"o1", "o3", "o1"}, 3);
  ASSERT_TRUE(client->ReadOneSided(read));
  EXPECT_TRUE(read.status.ok());
  EXPECT_EQ(read.values, std::vector<std::optional<std::string>>(3, "v"));
  EXPECT_NE(read.read_ts, 0u);
  EXPECT_EQ(client->stats().cache_misses, misses);
  EXPECT_EQ(client->stats().slot_reads, reads + 2);

  BatchTxn unknown = ReadTxn({"o1", "never"}, 3);
  EXPECT_FALSE(client->ReadOneSided(unknown));
  EXPECT_TRUE(unknown.values.empty());
  EXPECT_EQ(client->stats().slot_reads, reads + 2);  // a read given up counts nothing

  // Another client's write supersedes the cached slot: refused by its check.
  std::vector<BatchTxn> overwrite{WriteTxn({"o2"}, "w", 3)};
  other->RunBatch(overwrite, /*coalesce=*/true);
  ASSERT_TRUE(overwrite[0].status.ok());
  const uint64_t rejects = client->stats().slot_rejects;
  BatchTxn stale = ReadTxn({"o2"}, 3);
  EXPECT_FALSE(client->ReadOneSided(stale));
  EXPECT_EQ(client->stats().slot_rejects, rejects);  // left to RunBatch's read to count
  std::vector<BatchTxn> fallback{ReadTxn({"o2"}, 3)};
  client->RunBatch(fallback, /*coalesce=*/true);
  EXPECT_EQ(fallback[0].values, std::vector<std::optional<std::string>>{"w"});
}

// A key written to two replicas: its address is kept for the partition it
// was learnt from, so a read of the other replica never tries it (before, the
// last replica's address was read in the first one's arena and refused).
TEST(BatchSlotsTest, AReplicaIsNeverReadAtAnotherReplicasAddress) {
  LocalCluster cluster(3, 5000, "ucx");
  auto client = cluster.Connect(GetMode::kRead, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  std::vector<std::string> keys{"r0", "r1", "r2", "r3", "r4", "r5"};
  std::vector<BatchTxn> put{WriteTxn(keys, "v", 3, /*replicas=*/2)};
  client->RunBatch(put, /*coalesce=*/true);
  ASSERT_TRUE(put[0].status.ok()) << put[0].status.ToString();
  for (uint32_t shift : {0u, 1u}) {  // the home replica, then the next one
    std::vector<BatchTxn> get{ReadTxn(keys, 3, shift)};
    client->RunBatch(get, /*coalesce=*/true);
    ASSERT_TRUE(get[0].status.ok()) << get[0].status.ToString();
    EXPECT_EQ(get[0].values, std::vector<std::optional<std::string>>(keys.size(), "v"));
  }
  EXPECT_EQ(client->stats().slot_rejects, 0u);
  EXPECT_EQ(client->stats().slot_reads + client->stats().cache_misses, 2 * keys.size());
}

TEST_P(BatchTest, ReplicasAreWrittenInOneTransactionAndReadFromAny) {
  LocalCluster cluster(3, 5000, backend);
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  std::vector<std::string> keys{"r0", "r1", "r2", "r3", "r4"};
  std::vector<BatchTxn> put{WriteTxn(keys, "v", 3, /*replicas=*/2)};
  client->RunBatch(put, coalesce);
  ASSERT_TRUE(put[0].status.ok()) << put[0].status.ToString();
  for (uint32_t shift : {0u, 1u}) {
    std::vector<BatchTxn> get{ReadTxn(keys, 3, shift)};
    client->RunBatch(get, coalesce);
    ASSERT_TRUE(get[0].status.ok());
    EXPECT_EQ(get[0].values, std::vector<std::optional<std::string>>(5, "v")) << shift;
  }
  // The third partition of each key has no copy.
  std::vector<BatchTxn> none{ReadTxn(keys, 3, 2)};
  client->RunBatch(none, coalesce);
  EXPECT_EQ(none[0].values, std::vector<std::optional<std::string>>(5, std::nullopt));
}

TEST_P(BatchTest, BadTransactionsFailAloneAndADeadNodeFailsOnlyItsOwn) {
  LocalCluster cluster(2, 5000, backend);
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  BatchTxn twice;
  twice.writes.push_back({"k", "1", false, 0});
  twice.writes.push_back({"k", "2", false, 0});
  BatchTxn both = ReadTxn({"x"}, 2);
  both.writes.push_back({"y", "1", false, 0});
  std::vector<BatchTxn> batch{std::move(twice), std::move(both), WriteTxn({"ok"}, "1", 2)};
  client->RunBatch(batch, coalesce);
  EXPECT_EQ(batch[0].status.code(), StatusCode::kInvalidArgument) << batch[0].status.ToString();
  EXPECT_EQ(batch[1].status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(batch[2].status.ok()) << batch[2].status.ToString();

  cluster.Stop(1);
  std::vector<BatchTxn> reads;
  BatchTxn on0, on1;
  on0.reads.push_back({"ok", 0});
  on1.reads.push_back({"ok", 1});
  reads.push_back(std::move(on0));
  reads.push_back(std::move(on1));
  client->RunBatch(reads, coalesce);
  EXPECT_TRUE(reads[0].status.ok()) << reads[0].status.ToString();
  EXPECT_FALSE(reads[1].status.ok());
  EXPECT_EQ(reads[1].failed_partition, 1) << reads[1].status.ToString();
}

// Writers commit 4-key transactions (2 replicas) in batches, readers read
// 4-key sets in batches from random replicas: every read shows one writer
// transaction per key group whole (values name the transaction).
TEST_P(BatchTest, ConcurrentBatchesAreReadAtomic) {
  constexpr uint32_t kNodes = 3;
  LocalCluster cluster(kNodes, 5000, backend);
  std::vector<std::string> keys{"g0", "g1", "g2", "g3"};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  std::thread writer([&] {
    auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
    ASSERT_NE(client, nullptr);
    for (uint64_t seq = 1; seq <= 3000 && !stop; seq += 3) {
      std::vector<BatchTxn> batch;
      for (uint64_t s = seq; s < seq + 3; ++s) batch.push_back(WriteTxn(keys, std::to_string(s), kNodes, 2));
      client->RunBatch(batch, coalesce);
      for (const auto& t : batch) ASSERT_TRUE(t.status.ok()) << t.status.ToString();
      written = seq + 2;
    }
  });
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  std::mt19937 rng(7);
  uint64_t reads = 0, fractured = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (written < 3000 && std::chrono::steady_clock::now() < deadline) {
    std::vector<BatchTxn> batch;
    for (int i = 0; i < 4; ++i) batch.push_back(ReadTxn(keys, kNodes, rng() % 2));
    client->RunBatch(batch, coalesce);
    for (const auto& t : batch) {
      ASSERT_TRUE(t.status.ok()) << t.status.ToString();
      ++reads;
      for (const auto& v : t.values) fractured += v != t.values[0];
    }
  }
  stop = true;
  writer.join();
  EXPECT_GT(reads, 100u);
  EXPECT_EQ(fractured, 0u) << "of " << reads << " reads";
}

TEST_P(BatchTest, CountKeysAndFlushAll) {
  LocalCluster cluster(3, 5000, backend);
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  std::vector<std::string> keys{"c0", "c1", "c2", "c3", "c4", "c5"};
  std::vector<BatchTxn> put{WriteTxn(keys, "v", 3, /*replicas=*/2)};
  client->RunBatch(put, coalesce);
  ASSERT_TRUE(put[0].status.ok());
  std::vector<BatchTxn> del(1);  // a tombstone on c0's first replica only
  del[0].writes.push_back({"c0", "", true, Home("c0", 3)});
  client->RunBatch(del, coalesce);
  ASSERT_TRUE(del[0].status.ok());
  auto count = client->CountKeys();
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  // c1..c5 on two partitions each, c0 once more live on its second replica.
  EXPECT_EQ(*count, 11u);
  ASSERT_TRUE(client->FlushAll().ok());
  EXPECT_EQ(*client->CountKeys(), 0u);
  std::vector<BatchTxn> get{ReadTxn(keys, 3, 1)};
  client->RunBatch(get, coalesce);
  EXPECT_EQ(get[0].values, std::vector<std::optional<std::string>>(6, std::nullopt));
}

// Coalesced, the write sets of a batch commit as a group at one timestamp
// (clashing ones apart); every set is still read whole, and clashing sets
// both commit.
TEST_P(BatchTest, GroupedWriteSetsAreEachReadWhole) {
  constexpr uint32_t kNodes = 3;
  LocalCluster cluster(kNodes, 5000, backend);
  std::atomic<bool> done{false};
  auto group = [](int g) {
    std::vector<std::string> keys;
    for (int k = 0; k < 4; ++k) keys.push_back("s" + std::to_string(g) + "." + std::to_string(k));
    return keys;
  };
  std::thread writer([&] {
    auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
    ASSERT_NE(client, nullptr);
    for (int seq = 1; seq <= 300; ++seq) {
      std::vector<BatchTxn> batch;
      for (int g = 0; g < 6; ++g) batch.push_back(WriteTxn(group(g), std::to_string(seq), kNodes, 2));
      batch.push_back(WriteTxn(group(0), "x" + std::to_string(seq), kNodes, 2));  // clashes
      client->RunBatch(batch, coalesce);
      for (const auto& t : batch) ASSERT_TRUE(t.status.ok()) << t.status.ToString();
    }
    done = true;
  });
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  uint64_t reads = 0, fractured = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    std::vector<BatchTxn> batch;
    for (int g = 0; g < 6; ++g) batch.push_back(ReadTxn(group(g), kNodes, g % 2));
    client->RunBatch(batch, coalesce);
    for (const auto& t : batch) {
      ASSERT_TRUE(t.status.ok()) << t.status.ToString();
      ++reads;
      for (const auto& v : t.values) fractured += v != t.values[0];
    }
  }
  writer.join();
  EXPECT_GT(reads, 50u);
  EXPECT_EQ(fractured, 0u) << "of " << reads << " reads";
  std::vector<BatchTxn> last{ReadTxn(group(0), kNodes), ReadTxn(group(5), kNodes)};
  client->RunBatch(last, coalesce);
  EXPECT_TRUE(last[0].values[0] == "300" || last[0].values[0] == "x300") << *last[0].values[0];
  EXPECT_EQ(last[1].values, std::vector<std::optional<std::string>>(4, "300"));
}

// Writes of one key within one batch take effect in batch order, also when
// an earlier group of the other kind could have taken the later write.
TEST_P(BatchTest, WritesOfOneKeyInABatchKeepTheirOrder) {
  constexpr uint32_t kNodes = 3;
  LocalCluster cluster(kNodes, 5000, backend);
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  const std::string b = KeyBeside("a", false, "b", kNodes);
  std::vector<BatchTxn> batch;
  batch.push_back(WriteTxn({"x"}, "0", kNodes));       // one partition: a commit-now group
  batch.push_back(WriteTxn({"a", b}, "1", kNodes));    // two partitions: the two-round group
  batch.push_back(WriteTxn({"a"}, "2", kNodes));       // must not join the first group
  batch.push_back(WriteTxn({"y"}, "4", kNodes));       // free to join any
  client->RunBatch(batch, coalesce);
  for (const auto& t : batch) ASSERT_TRUE(t.status.ok()) << t.status.ToString();
  std::vector<BatchTxn> read{ReadTxn({"a", b, "x", "y"}, kNodes)};
  client->RunBatch(read, coalesce);
  EXPECT_EQ(read[0].values, (std::vector<std::optional<std::string>>{"2", "1", "0", "4"}));
}

// if_absent write sets: each commits alone, in one round, only where its keys
// are new; a refused one fails with AlreadyExists and writes nothing, and the
// plain writes grouped around it are not held back. One spanning partitions
// is refused before anything is sent.
TEST_P(BatchTest, IfAbsentWritesCommitOnlyNewKeys) {
  constexpr uint32_t kNodes = 3;
  LocalCluster cluster(kNodes, 5000, backend);
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  std::vector<BatchTxn> first{WriteTxn({"old"}, "1", kNodes)};
  client->RunBatch(first, coalesce);
  ASSERT_TRUE(first[0].status.ok()) << first[0].status.ToString();

  const std::string other = KeyBeside("new2", false, "o", kNodes);
  std::vector<BatchTxn> batch;
  batch.push_back(WriteTxn({"new"}, "n", kNodes));
  batch.push_back(WriteTxn({"old"}, "2", kNodes));
  batch.push_back(WriteTxn({"plain"}, "p", kNodes));
  batch.push_back(WriteTxn({"new2", other}, "x", kNodes));
  batch[0].if_absent = batch[1].if_absent = batch[3].if_absent = true;
  client->RunBatch(batch, coalesce);
  EXPECT_TRUE(batch[0].status.ok()) << batch[0].status.ToString();
  EXPECT_EQ(batch[1].status.code(), StatusCode::kAlreadyExists) << batch[1].status.ToString();
  EXPECT_TRUE(batch[2].status.ok()) << batch[2].status.ToString();
  EXPECT_EQ(batch[3].status.code(), StatusCode::kInvalidArgument) << batch[3].status.ToString();
  std::vector<BatchTxn> read{ReadTxn({"new", "old", "plain", "new2"}, kNodes)};
  client->RunBatch(read, coalesce);
  EXPECT_EQ(read[0].values,
            (std::vector<std::optional<std::string>>{"n", "1", "p", std::nullopt}));
}

// if_unchanged write sets: a read-modify-write's write commits only while
// what it read is still the newest version; two clients that read the same
// version both try, one wins, the other fails with FailedPrecondition and
// writes nothing, and a plain write grouped beside it is not held back.
TEST_P(BatchTest, IfUnchangedWritesCommitOnlyOverTheVersionRead) {
  constexpr uint32_t kNodes = 3;
  LocalCluster cluster(kNodes, 5000, backend);
  auto one = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  auto two = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  std::vector<BatchTxn> first{WriteTxn({"counter"}, "5", kNodes)};
  one->RunBatch(first, coalesce);
  ASSERT_TRUE(first[0].status.ok()) << first[0].status.ToString();

  // Both read counter = 5 and "fresh" (absent) at the same versions.
  std::vector<BatchTxn> read1{ReadTxn({"counter", "fresh"}, kNodes)};
  std::vector<BatchTxn> read2{ReadTxn({"counter", "fresh"}, kNodes)};
  one->RunBatch(read1, coalesce);
  two->RunBatch(read2, coalesce);
  ASSERT_EQ(read1[0].values[0], "5");
  ASSERT_EQ(read1[0].versions, read2[0].versions);
  ASSERT_EQ(read1[0].versions[1], 0u);
  auto increment = [&](const BatchTxn& read, const std::string& value) {
    BatchTxn w = WriteTxn({"counter"}, value, kNodes);
    w.after_ts = read.read_ts;
    w.if_unchanged = {{"counter", read.versions[0]}};
    return w;
  };
  std::vector<BatchTxn> won{increment(read1[0], "6")};
  one->RunBatch(won, coalesce);
  EXPECT_TRUE(won[0].status.ok()) << won[0].status.ToString();
  std::vector<BatchTxn> lost{increment(read2[0], "6 again"), WriteTxn({"plain"}, "p", kNodes)};
  two->RunBatch(lost, coalesce);
  EXPECT_EQ(lost[0].status.code(), StatusCode::kFailedPrecondition) << lost[0].status.ToString();
  EXPECT_TRUE(lost[1].status.ok()) << lost[1].status.ToString();
  // Read again, the second client's write goes through.
  std::vector<BatchTxn> again{ReadTxn({"counter"}, kNodes)};
  two->RunBatch(again, coalesce);
  std::vector<BatchTxn> retried{increment(again[0], "7")};
  two->RunBatch(retried, coalesce);
  EXPECT_TRUE(retried[0].status.ok()) << retried[0].status.ToString();

  // A key that had no version must still have none: "fresh" written by one
  // client refuses the other's write over its "absent" read.
  std::vector<BatchTxn> create{WriteTxn({"fresh"}, "f", kNodes)};
  create[0].if_unchanged = {{"fresh", 0}};
  one->RunBatch(create, coalesce);
  EXPECT_TRUE(create[0].status.ok()) << create[0].status.ToString();
  std::vector<BatchTxn> late{WriteTxn({"fresh"}, "g", kNodes)};
  late[0].if_unchanged = {{"fresh", read2[0].versions[1]}};
  two->RunBatch(late, coalesce);
  EXPECT_EQ(late[0].status.code(), StatusCode::kFailedPrecondition) << late[0].status.ToString();

  std::vector<BatchTxn> check{ReadTxn({"counter", "plain", "fresh"}, kNodes)};
  one->RunBatch(check, coalesce);
  EXPECT_EQ(check[0].values, (std::vector<std::optional<std::string>>{"7", "p", "f"}));

  // Spanning partitions: refused before anything is sent.
  const std::string other = KeyBeside("counter", false, "o", kNodes);
  std::vector<BatchTxn> wide{WriteTxn({"counter", other}, "x", kNodes)};
  wide[0].if_unchanged = {{"counter", 0}};
  one->RunBatch(wide, coalesce);
  EXPECT_EQ(wide[0].status.code(), StatusCode::kInvalidArgument) << wide[0].status.ToString();
}

// Checked write sets of a batch commit as a group per partition when
// coalescing: one stale condition refuses its partition's PREPARE, so every
// checked set there fails (and wrote nothing), while those on another
// partition commit; without coalescing only the stale one fails.
TEST_P(BatchTest, CheckedWriteSetsShareAPrepareAndItsRefusal) {
  constexpr uint32_t kNodes = 3;
  LocalCluster cluster(kNodes, 5000, backend);
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  const std::string same = KeyBeside("stale", true, "s", kNodes);
  const std::string other = KeyBeside("stale", false, "o", kNodes);
  std::vector<BatchTxn> first{WriteTxn({"stale"}, "1", kNodes)};
  client->RunBatch(first, coalesce);
  ASSERT_TRUE(first[0].status.ok()) << first[0].status.ToString();
  std::vector<BatchTxn> batch{WriteTxn({"stale"}, "2", kNodes), WriteTxn({same}, "x", kNodes),
                              WriteTxn({other}, "y", kNodes)};
  batch[0].if_unchanged = {{"stale", 0}};  // it has a version: stale
  batch[1].if_unchanged = {{same, 0}};
  batch[2].if_unchanged = {{other, 0}};
  client->RunBatch(batch, coalesce);
  EXPECT_EQ(batch[0].status.code(), StatusCode::kFailedPrecondition) << batch[0].status.ToString();
  EXPECT_EQ(batch[1].status.code(), coalesce ? StatusCode::kFailedPrecondition : StatusCode::kOk)
      << batch[1].status.ToString();
  EXPECT_TRUE(batch[2].status.ok()) << batch[2].status.ToString();
  std::vector<BatchTxn> read{ReadTxn({"stale", same, other}, kNodes)};
  client->RunBatch(read, coalesce);
  EXPECT_EQ(read[0].values, (std::vector<std::optional<std::string>>{
                                "1", coalesce ? std::nullopt : std::optional<std::string>("x"), "y"}));
}

// A group commit of single-partition write sets commits partition by
// partition: one partition refusing its PREPARE (a value over the node's
// limit) fails the write sets there only; the others are written and say so.
TEST_P(BatchTest, AGroupCommitFailsOnlyTheWriteSetsOfTheRefusingPartition) {
  constexpr uint32_t kNodes = 3;
  LocalCluster cluster(kNodes, 5000, backend);
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc);
  ASSERT_NE(client, nullptr);
  const std::string other = KeyBeside("big", false, "o", kNodes);
  std::vector<BatchTxn> batch{WriteTxn({"big"}, std::string(2 << 20, 'x'), kNodes),
                              WriteTxn({other}, "fine", kNodes)};
  client->RunBatch(batch, coalesce);
  EXPECT_FALSE(batch[0].status.ok());
  EXPECT_TRUE(batch[1].status.ok()) << batch[1].status.ToString();
  std::vector<BatchTxn> read{ReadTxn({"big", other}, kNodes)};
  client->RunBatch(read, coalesce);
  EXPECT_EQ(read[0].values, (std::vector<std::optional<std::string>>{std::nullopt, "fine"}));

  // Without isolation a write set on two partitions commits in round 1 too:
  // it fails where it has a write on the refusing partition, a write set
  // elsewhere in its group does not.
  auto none = cluster.Connect(GetMode::kRpc, PutMode::kRpc, Isolation::kNone);
  ASSERT_NE(none, nullptr);
  std::string third = "t0";  // on the partition neither "big" nor `other` is on
  for (int i = 1; Home(third, kNodes) == Home("big", kNodes) || Home(third, kNodes) == Home(other, kNodes); ++i) {
    third = "t" + std::to_string(i);
  }
  BatchTxn wide = WriteTxn({"big"}, std::string(2 << 20, 'x'), kNodes);
  wide.writes.push_back(WriteTxn({other}, "wide", kNodes).writes[0]);
  std::vector<BatchTxn> mixed{std::move(wide), WriteTxn({third}, "alone", kNodes)};
  none->RunBatch(mixed, coalesce);
  EXPECT_FALSE(mixed[0].status.ok());
  EXPECT_TRUE(mixed[1].status.ok()) << mixed[1].status.ToString();
}

INSTANTIATE_TEST_SUITE_P(Modes, BatchTest,
                         ::testing::Combine(::testing::Values("tcp", "ucx"), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) +
                                  (std::get<1>(info.param) ? "_coalesced" : "_separate");
                         });

// The checker above catches fractures: without isolation they happen.
TEST(BatchCheckerTest, NoIsolationFractures) {
  constexpr uint32_t kNodes = 3;
  LocalCluster cluster(kNodes, 5000, "tcp");
  std::vector<std::string> keys{"g0", "g1", "g2", "g3"};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc, Isolation::kNone);
    for (uint64_t seq = 1; seq <= 200000 && !stop; ++seq) {
      std::vector<BatchTxn> batch{WriteTxn(keys, std::to_string(seq), kNodes)};
      client->RunBatch(batch, false);
    }
  });
  auto client = cluster.Connect(GetMode::kRpc, PutMode::kRpc, Isolation::kNone);
  uint64_t fractured = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (fractured == 0 && std::chrono::steady_clock::now() < deadline) {
    std::vector<BatchTxn> batch{ReadTxn(keys, kNodes)};
    client->RunBatch(batch, false);
    for (const auto& v : batch[0].values) fractured += v != batch[0].values[0];
  }
  stop = true;
  writer.join();
  EXPECT_GT(fractured, 0u);
}

}  // namespace
}  // namespace rampart::txn
