// Volume under failures at open and mid-write: the RAID write hole and the
// intent log that closes it, nodes down at open, a node that comes back
// stale, a node dying during a stream of writes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "storage/volume.h"
#include "storage/volume_test_cluster.h"

namespace rampart::storage {
namespace {

using testing::ClusterShape;
using testing::CompareWhole;
using testing::RandomBytes;
using testing::TestCluster;

// The write hole. A writer dies between the data write and the parity write
// of a partial-stripe write (the hook drops the parity writes). The stripe's
// parity is then stale, so once another node of the stripe fails, reading
// that node's cell by reconstruction returns garbage, though nobody wrote it.
// Open closes the hole: the intent log marks the stripe dirty, and the resync
// recomputes its parity from the data cells before anything reads it.
TEST(VolumeWriteHole, ResyncAtOpenRepairsAStripeWhoseParityWriteWasLost) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 256u << 10});
  std::mt19937_64 rng(7);
  std::vector<std::byte> model;
  const uint64_t stripe = 5;
  uint64_t written_at = 0, other_at = 0;  // volume offsets of cells 0 and 1 of the stripe
  uint32_t other_node = 0;
  {
    auto v = cluster.Open();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    model = RandomBytes(rng, (*v)->size());
    ASSERT_TRUE((*v)->Write(0, model).ok());
    ASSERT_TRUE((*v)->Flush().ok());
    ASSERT_TRUE((*v)->VerifyStripe(stripe).ok());
    const VolumeLayout& layout = (*v)->layout();
    written_at = stripe * layout.stripe_data_bytes();
    other_at = written_at + layout.cell_bytes();
    other_node = layout.DataCell(stripe, 1).node_index;

    // The crash: 1000 bytes of cell 0 reach their node, the parity does not.
    (*v)->SetTestHooks(VolumeTestHooks{.drop_parity_writes = true});
    std::vector<std::byte> update = RandomBytes(rng, 1000);
    EXPECT_EQ((*v)->Write(written_at + 100, update).code(), StatusCode::kAborted);
    std::memcpy(model.data() + written_at + 100, update.data(), update.size());
  }  // the process is gone: no flush, no cleanup

  const uint64_t cell = 4096;
  auto read_other_cell_around_its_node = [&](Volume& v) {
    v.SetNodeDown(other_node);
    std::vector<std::byte> got(cell);
    EXPECT_TRUE(v.Read(other_at, got).ok());
    EXPECT_GT(v.stats().degraded_reads, 0u);
    return std::memcmp(got.data(), model.data() + other_at, cell) == 0;
  };

  // Without the resync the bug shows: a cell nobody wrote reads wrong.
  {
    auto v = cluster.Open(VolumeOptions{.testing = {.skip_resync = true}});
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ((*v)->VerifyStripe(stripe).code(), StatusCode::kCorruption);
    EXPECT_FALSE(read_other_cell_around_its_node(**v))
        << "the lost parity write should have corrupted the degraded read";
  }
  // With it, both the new bytes and the untouched cells read right.
  {
    auto v = cluster.Open();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_GE((*v)->stats().resynced_stripes, 1u);
    EXPECT_TRUE((*v)->VerifyStripe(stripe).ok());
    EXPECT_TRUE(read_other_cell_around_its_node(**v));
    EXPECT_EQ(CompareWhole(**v, model), "");
  }
}

TEST(VolumeOpen, ANodeDownAtOpenIsDegradedTwoAreUnavailable) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 192u << 10});
  std::mt19937_64 rng(8);
  std::vector<std::byte> model;
  {
    auto v = cluster.Open();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    model = RandomBytes(rng, (*v)->size());
    ASSERT_TRUE((*v)->Write(0, model).ok());
    ASSERT_TRUE((*v)->Flush().ok());
  }
  cluster.StopNode(2);
  {
    auto v = cluster.Open();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ((*v)->stats().nodes_down, 1u);
    EXPECT_EQ(CompareWhole(**v, model), "");
    std::vector<std::byte> update = RandomBytes(rng, 30000);
    ASSERT_TRUE((*v)->Write(5000, update).ok());
    std::memcpy(model.data() + 5000, update.data(), update.size());
    ASSERT_TRUE((*v)->Flush().ok());
    EXPECT_EQ(CompareWhole(**v, model), "");
  }
  cluster.StopNode(0);
  EXPECT_EQ(cluster.Open().status().code(), StatusCode::kUnavailable);

  // Node 2 comes back with the cells it had before it went away: stale. The
  // intent log recorded it as failed, so the volume keeps it out (and reads
  // right) until it is rebuilt.
  ASSERT_TRUE(cluster.StartNode(0).ok());
  ASSERT_TRUE(cluster.StartNode(2).ok());
  auto v = cluster.Open();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)->stats().nodes_down, 1u);
  EXPECT_FALSE((*v)->stats().nodes[2].up);
  EXPECT_EQ(CompareWhole(**v, model), "");
  ASSERT_TRUE((*v)->Rebuild(2).ok());
  Result<uint64_t> bad = (*v)->Verify();
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(*bad, 0u);
  v->reset();
  auto w = cluster.Open();  // rebuilt: in service again after a reopen
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)->stats().nodes_down, 0u);
  EXPECT_EQ(CompareWhole(**w, model), "");
}

// A node stops while writes stream in: every write succeeds, and every byte
// reads back right, degraded.
TEST(VolumeFault, NodeStopsDuringWrites) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 512u << 10});
  auto v = cluster.Open();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  std::mt19937_64 rng(9);
  std::vector<std::byte> model(( *v)->size());
  std::atomic<bool> stopped{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cluster.StopNode(1);
    stopped = true;
  });
  int writes = 0;
  while (!stopped || writes < 400) {
    const uint64_t length = 1 + rng() % 30000;
    const uint64_t offset = rng() % (model.size() - length);
    std::vector<std::byte> data = RandomBytes(rng, length);
    Status st = (*v)->Write(offset, data);
    ASSERT_TRUE(st.ok()) << "write " << writes << ": " << st.ToString();
    std::memcpy(model.data() + offset, data.data(), length);
    ++writes;
  }
  killer.join();
  EXPECT_EQ((*v)->stats().nodes_down, 1u);
  EXPECT_EQ(CompareWhole(**v, model), "");
}

// A node whose reads fail (a bad device) but that is still up: reads go
// around it, writes that needed its old data or parity plan again without it
// and still write it, so the parity stays right.
TEST(VolumeFault, ReadErrorsOfANodeAreReadAroundAndItsCellsStayRight) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 256u << 10});
  auto v = cluster.Open();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  std::mt19937_64 rng(10);
  std::vector<std::byte> model = RandomBytes(rng, (*v)->size());
  ASSERT_TRUE((*v)->Write(0, model).ok());
  (*v)->SetTestHooks(VolumeTestHooks{.fail_reads_on_node = 1});
  EXPECT_EQ(CompareWhole(**v, model), "");
  EXPECT_GT((*v)->stats().degraded_reads, 0u);
  for (int i = 0; i < 200; ++i) {
    const uint64_t length = 1 + rng() % 9000;
    const uint64_t offset = rng() % (model.size() - length);
    std::vector<std::byte> data = RandomBytes(rng, length);
    Status st = (*v)->Write(offset, data);
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::memcpy(model.data() + offset, data.data(), length);
  }
  EXPECT_EQ((*v)->stats().nodes_down, 0u);
  EXPECT_EQ(CompareWhole(**v, model), "");
  (*v)->SetTestHooks(VolumeTestHooks{});
  Result<uint64_t> bad = (*v)->Verify();
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(*bad, 0u);
  EXPECT_EQ(CompareWhole(**v, model), "");
}

TEST(VolumeOpen, RefusesNodesWhoseLimitsDoNotFitTheCells) {
  TestCluster cluster(ClusterShape{.nodes = 3, .cell_bytes = 16384, .size = 64u << 10,
                                   .max_io_bytes = 8192});
  EXPECT_EQ(cluster.Open().status().code(), StatusCode::kFailedPrecondition);
  VolumeOptions small;
  small.pool_bytes = 1u << 20;
  EXPECT_EQ(Volume::Open(cluster.config(), "v", small).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Volume::Open(cluster.config(), "nope").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace rampart::storage
