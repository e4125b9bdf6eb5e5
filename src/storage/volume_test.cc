// Volume against in-process storage nodes: random IO against an in-memory
// model, every single node down (reads reconstruct, writes go on, rebuild
// brings it back), verify, and the intent log's format and amortisation.
// The write hole and open-time failures: volume_fault_test.cc.
#include "storage/volume.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "storage/volume_intent.h"
#include "storage/volume_test_cluster.h"

namespace rampart::storage {
namespace {

using testing::ClusterShape;
using testing::CompareWhole;
using testing::RandomBytes;
using testing::TestCluster;

// Writes `rounds` random ranges (odd sizes, odd offsets, whole stripes,
// ranges crossing cells and stripes) into `v` and `model`, checking a random
// read after each.
void RandomIo(Volume& v, std::vector<std::byte>& model, std::mt19937_64& rng, int rounds) {
  const uint64_t size = model.size();
  const uint64_t stripe = v.layout().stripe_data_bytes();
  for (int i = 0; i < rounds; ++i) {
    uint64_t offset, length;
    switch (rng() % 4) {
      case 0:  // small and unaligned
        length = 1 + rng() % 5000;
        offset = rng() % (size - length + 1);
        break;
      case 1:  // whole stripes
        offset = (rng() % (size / stripe)) * stripe;
        length = std::min<uint64_t>(stripe * (1 + rng() % 3), size - offset);
        break;
      case 2:  // block-aligned
        length = 4096 * (1 + rng() % 8);
        offset = 4096 * (rng() % ((size - length) / 4096 + 1));
        break;
      default:  // large, anywhere
        length = 1 + rng() % (3 * stripe);
        offset = rng() % (size - length + 1);
        break;
    }
    std::vector<std::byte> data = RandomBytes(rng, length);
    Status st = v.Write(offset, data);
    ASSERT_TRUE(st.ok()) << "write " << offset << "+" << length << ": " << st.ToString();
    std::memcpy(model.data() + offset, data.data(), length);

    const uint64_t rlen = 1 + rng() % (2 * stripe);
    const uint64_t roff = rng() % (size - rlen + 1);
    std::vector<std::byte> got(rlen);
    st = v.Read(roff, got);
    ASSERT_TRUE(st.ok()) << "read " << roff << "+" << rlen << ": " << st.ToString();
    ASSERT_EQ(std::memcmp(got.data(), model.data() + roff, rlen), 0)
        << "read " << roff << "+" << rlen << " after write " << offset << "+" << length;
  }
}

// One ReadMany of 40 ranges (small and unaligned, 4 KiB blocks, across cells
// and stripes, one repeated, one inside another) against the model.
void ExpectReadManyMatches(Volume& v, const std::vector<std::byte>& model, std::mt19937_64& rng) {
  const uint64_t size = model.size();
  const uint64_t stripe = v.layout().stripe_data_bytes();
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // offset, length
  for (int i = 0; i < 38; ++i) {
    uint64_t length = i % 3 == 0 ? 4096 : 1 + rng() % (i % 3 == 1 ? 5000 : 2 * stripe);
    length = std::min(length, size);
    const uint64_t offset = i % 3 == 0 ? 4096 * (rng() % (size / 4096)) : rng() % (size - length + 1);
    ranges.emplace_back(offset, length);
  }
  ranges.push_back(ranges[5]);
  ranges.emplace_back(ranges[7].first + 1, ranges[7].second > 2 ? ranges[7].second - 2 : 1);
  std::vector<std::vector<std::byte>> got(ranges.size());
  std::vector<BlockDevice::ReadRange> reads;
  for (size_t i = 0; i < ranges.size(); ++i) {
    got[i].resize(ranges[i].second);
    reads.push_back({ranges[i].first, got[i]});
  }
  Status st = v.ReadMany(reads);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (size_t i = 0; i < ranges.size(); ++i) {
    ASSERT_EQ(std::memcmp(got[i].data(), model.data() + ranges[i].first, ranges[i].second), 0)
        << "range " << i << ": " << ranges[i].first << "+" << ranges[i].second;
  }
  std::vector<std::byte> past(16);
  reads.push_back({size - 8, past});  // past the end: refused, nothing read
  EXPECT_EQ(v.ReadMany(reads).code(), StatusCode::kInvalidArgument);
}

TEST(VolumeTest, RandomWritesReadBackByteIdenticalAndParityVerifies) {
  // An odd size: the last stripe is partly past the end.
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = (1u << 20) + 12345});
  auto v = cluster.Open();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  Volume& vol = **v;
  EXPECT_EQ(vol.size(), (1u << 20) + 12345);
  EXPECT_EQ(vol.preferred_block_size(), 4096u);

  // A new volume reads as zeros and is consistent.
  std::vector<std::byte> model(vol.size());
  EXPECT_EQ(CompareWhole(vol, model), "");
  std::mt19937_64 rng(1);
  RandomIo(vol, model, rng, 300);
  EXPECT_EQ(CompareWhole(vol, model), "");
  ASSERT_TRUE(vol.Flush().ok());
  Result<uint64_t> bad = vol.Verify();
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(*bad, 0u);

  const VolumeStats s = vol.stats();
  EXPECT_GT(s.healthy_reads, 0u);
  EXPECT_EQ(s.degraded_reads, 0u);
  EXPECT_GT(s.full_stripe_writes, 0u);
  EXPECT_GT(s.rmw_writes, 0u);
  EXPECT_GT(s.rcw_writes, 0u);
  EXPECT_EQ(s.nodes_down, 0u);
  ASSERT_EQ(s.nodes.size(), 4u);
  for (const VolumeNodeStats& n : s.nodes) {
    EXPECT_TRUE(n.up);
    EXPECT_GT(n.ios, 0u);
    EXPECT_GT(n.latency_us, 0.0);
    EXPECT_EQ(n.outstanding, 0u);
  }

  // Reopened, the same bytes.
  v->reset();
  auto again = cluster.Open();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(CompareWhole(**again, model), "");
  EXPECT_EQ((*again)->Read((*again)->size(), std::span<std::byte>()).code(), StatusCode::kOk);
  std::byte one[2];
  EXPECT_EQ((*again)->Read((*again)->size() - 1, one).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*again)->Write((*again)->size(), one).code(), StatusCode::kInvalidArgument);
}

// Parity verification catches a cell changed behind the volume's back.
TEST(VolumeTest, VerifyFindsABadStripe) {
  TestCluster cluster(ClusterShape{.nodes = 3, .cell_bytes = 4096, .size = 64u << 10});
  VolumeOptions o;
  o.clear_delay = std::chrono::milliseconds(0);  // Flush clears: no resync at reopen
  auto v = cluster.Open(o);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  std::mt19937_64 rng(2);
  std::vector<std::byte> data = RandomBytes(rng, 64u << 10);
  ASSERT_TRUE((*v)->Write(0, data).ok());
  ASSERT_TRUE((*v)->Flush().ok());
  EXPECT_TRUE((*v)->VerifyStripe(3).ok());
  // Node index 0's cell of stripe 3, overwritten through its own file.
  const VolumeLayout layout = (*v)->layout();
  v->reset();
  {
    FILE* f = fopen(cluster.config().storage_nodes[0].path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    const long at = static_cast<long>(layout.StripeOffset(3) + 100);
    fseek(f, at, SEEK_SET);
    const int old = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(0x5a ^ old, f);
    fclose(f);
  }
  auto reopened = cluster.Open(o);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->VerifyStripe(3).code(), StatusCode::kCorruption);
  EXPECT_TRUE((*reopened)->VerifyStripe(2).ok());
  uint64_t calls = 0;
  Result<uint64_t> bad = (*reopened)->Verify([&](uint64_t done, uint64_t total) {
    ++calls;
    EXPECT_LE(done, total);
    return true;
  });
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(*bad, 1u);
  EXPECT_GT(calls, 0u);
}

// Each node of a 4-node volume in turn: stopped mid-life, every byte still
// reads right (by reconstruction), writes go on and read back, and a rebuild
// onto an emptied node restores it (checked by reading around another node).
class VolumeEveryNodeDown : public ::testing::TestWithParam<uint32_t> {};

TEST_P(VolumeEveryNodeDown, ReadsReconstructWritesSucceedRebuildRestores) {
  const uint32_t down = GetParam();
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 8192, .size = 768u << 10});
  auto v = cluster.Open(VolumeOptions{.stripes_per_batch = 4});  // 32 stripes: 8 batches
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  Volume& vol = **v;
  std::mt19937_64 rng(100 + down);
  std::vector<std::byte> model = RandomBytes(rng, vol.size());
  ASSERT_TRUE(vol.Write(0, model).ok());

  ExpectReadManyMatches(vol, model, rng);
  cluster.StopNode(down);
  EXPECT_EQ(CompareWhole(vol, model), "");
  ExpectReadManyMatches(vol, model, rng);  // degraded: pieces read around `down`
  VolumeStats s = vol.stats();
  EXPECT_EQ(s.nodes_down, 1u);
  EXPECT_FALSE(s.nodes[down].up);
  EXPECT_GT(s.degraded_reads, 0u);
  EXPECT_GT(s.reconstructions, 0u);

  RandomIo(vol, model, rng, 120);
  EXPECT_EQ(CompareWhole(vol, model), "");
  ASSERT_TRUE(vol.Flush().ok());
  EXPECT_EQ(vol.VerifyStripe(0).code(), StatusCode::kFailedPrecondition);

  // A replaced, empty node, rebuilt while reads and writes go on.
  ASSERT_TRUE(cluster.StartNode(down, /*wipe=*/true).ok());
  int progress_calls = 0;
  Status st = vol.Rebuild(down, [&](uint64_t done, uint64_t total) {
    ++progress_calls;
    EXPECT_LE(done, total);
    // Serve a request in between, as a server would.
    std::vector<std::byte> data = RandomBytes(rng, 1 + rng() % 20000);
    const uint64_t off = rng() % (model.size() - data.size());
    EXPECT_TRUE(vol.Write(off, data).ok());
    std::memcpy(model.data() + off, data.data(), data.size());
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(progress_calls, 8);
  s = vol.stats();
  EXPECT_EQ(s.nodes_down, 0u);
  EXPECT_TRUE(s.nodes[down].up);
  Result<uint64_t> bad = vol.Verify();
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(*bad, 0u);
  EXPECT_EQ(CompareWhole(vol, model), "");
  // The rebuilt cells are right: read around another node, so they are used
  // to reconstruct.
  vol.SetNodeDown((down + 1) % 4);
  EXPECT_EQ(CompareWhole(vol, model), "");
}

INSTANTIATE_TEST_SUITE_P(Volume, VolumeEveryNodeDown, ::testing::Values(0u, 1u, 2u, 3u));

// Hot-node steering: with one node slow (its completions held back 20 ms),
// whole-stripe reads go around it by reconstruction, and every read, whole
// stripes or not, returns the right bytes; a read of one cell does not steer
// (it would cost k reads); with the switch off nothing steers.
TEST(VolumeSteering, WholeStripeReadsGoAroundASlowNodeUnlessSwitchedOff) {
  for (const bool steer : {true, false}) {
    SCOPED_TRACE(steer ? "steering on" : "steering off");
    TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 384u << 10});
    auto v = cluster.Open(VolumeOptions{.steer_hot_reads = steer});
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    Volume& vol = **v;
    std::mt19937_64 rng(7);
    const std::vector<std::byte> model = RandomBytes(rng, vol.size());
    ASSERT_TRUE(vol.Write(0, model).ok());
    vol.SetTestHooks(
        VolumeTestHooks{.slow_node = 2, .slow_node_delay = std::chrono::milliseconds(20)});
    const uint64_t stripe = vol.layout().stripe_data_bytes();
    const uint64_t stripes = vol.size() / stripe;
    for (int i = 0; i < 24; ++i) {
      // Whole stripes, and (every third) an unaligned range across stripes.
      uint64_t offset = (rng() % (stripes - 3)) * stripe, length = 3 * stripe;
      if (i % 3 == 2) {
        offset += 1 + rng() % 5000;
        length -= 6000;
      }
      std::vector<std::byte> got(length);
      ASSERT_TRUE(vol.Read(offset, got).ok());
      ASSERT_EQ(std::memcmp(got.data(), model.data() + offset, length), 0)
          << offset << "+" << length;
    }
    const VolumeStats s = vol.stats();
    EXPECT_EQ(s.degraded_reads, 0u);
    EXPECT_GT(s.nodes[2].read_latency_us, 10000);  // the EWMA started from fast reads at Open
    if (steer) {
      EXPECT_GE(s.steered_reads, 20u);  // ~3/4 of 24 * 3 pieces are node 2's, 1 in 8 probes
      EXPECT_EQ(s.reconstructions, s.steered_reads);
    } else {
      EXPECT_EQ(s.steered_reads, 0u);
    }
    // The same whole stripes 8 times in one ReadMany: most of the slow node's
    // pieces go around it while copies of the same cell are read from it
    // (1 in 8 probes), and every copy must be right.
    {
      const uint64_t offset = stripe, length = 3 * stripe;
      std::vector<std::vector<std::byte>> got(8, std::vector<std::byte>(length));
      std::vector<BlockDevice::ReadRange> reads;
      for (auto& g : got) reads.push_back({offset, g});
      ASSERT_TRUE(vol.ReadMany(reads).ok());
      for (const auto& g : got) ASSERT_EQ(std::memcmp(g.data(), model.data() + offset, length), 0);
    }
    const uint64_t steered_before_cell = vol.stats().steered_reads;
    // One cell on the slow node: read from it, steering or not.
    const uint64_t cell = vol.layout().DataCellOnNode(0, 2).value();  // stripe 0: D2 on node 2
    std::vector<std::byte> got(4096);
    ASSERT_TRUE(vol.Read(cell * 4096, got).ok());
    EXPECT_EQ(std::memcmp(got.data(), model.data() + cell * 4096, 4096), 0);
    EXPECT_EQ(vol.stats().steered_reads, steered_before_cell);
    // With a node down the volume reads around that one only.
    vol.SetNodeDown(0);
    EXPECT_EQ(CompareWhole(vol, model), "");
    EXPECT_EQ(vol.stats().steered_reads, steered_before_cell);
  }
}

TEST(VolumeIntentTest, RecordRoundTripsAndDetectsDamage) {
  IntentRecord r{.generation = (7ull << 32) | 3, .block = 2, .fingerprint = 0xabcdef01,
                 .group_stripes = 64, .failed_node = 1,
                 .dirty = {2 * kIntentGroupsPerBlock, 2 * kIntentGroupsPerBlock + 9,
                           3 * kIntentGroupsPerBlock - 1}};
  std::vector<std::byte> block(kIntentBlockBytes);
  ASSERT_TRUE(EncodeIntentRecord(r, block).ok());
  Result<IntentRecord> back = DecodeIntentRecord(block);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, r);
  // A torn write (any flipped bit) is Corruption; an unwritten block NotFound.
  testing::ExpectTornIsCorruption(block, {9, 20, 100, kIntentBlockBytes - 1}, std::byte{0x10},
                                  [](const auto& b) { return DecodeIntentRecord(b); });
  EXPECT_EQ(DecodeIntentRecord(std::vector<std::byte>(kIntentBlockBytes)).status().code(),
            StatusCode::kNotFound);
  // A group outside the block is refused.
  r.dirty = {kIntentGroupsPerBlock};
  EXPECT_EQ(EncodeIntentRecord(r, block).code(), StatusCode::kInvalidArgument);
}

TEST(VolumeIntentTest, GeometryGroupsAMebibyteAndFitsTheArea) {
  VolumeConfig c{.name = "v", .size = 1ull << 40, .cell_bytes = 4096, .nodes = {1, 2, 3}};
  auto big = VolumeLayout::Create(c);
  ASSERT_TRUE(big.ok());
  const IntentGeometry g = IntentGeometryFor(*big);
  EXPECT_LE(g.blocks, kIntentMaxBlocks);
  EXPECT_GE(g.group_stripes * big->stripe_data_bytes(), 1u << 20);
  c.size = 1u << 20;
  c.cell_bytes = 16384;
  c.nodes = {1, 2, 3, 4};
  auto small = VolumeLayout::Create(c);
  ASSERT_TRUE(small.ok());
  const IntentGeometry h = IntentGeometryFor(*small);
  EXPECT_EQ(h.group_stripes, 32u);  // 32 stripes of 48 KiB: 1.5 MiB
  EXPECT_EQ(h.blocks, 1u);
  EXPECT_NE(h.fingerprint, g.fingerprint);
  // The fingerprint ignores size (it may grow), not the node list.
  c.size = 2u << 20;
  EXPECT_EQ(IntentGeometryFor(*VolumeLayout::Create(c)).fingerprint, h.fingerprint);
  c.nodes = {1, 2, 4, 3};
  EXPECT_NE(IntentGeometryFor(*VolumeLayout::Create(c)).fingerprint, h.fingerprint);
}

// Sequential partial-stripe writes inside one group pay for one record write
// (on two nodes), not one per stripe; records are cleared after a flush once
// idle.
TEST(VolumeIntentTest, RecordsAreAmortisedAndClearedLazily) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 4u << 20});
  VolumeOptions o;
  o.clear_delay = std::chrono::hours(1);
  auto v = cluster.Open(o);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  std::vector<std::byte> data(4096, std::byte{7});
  for (uint64_t off = 0; off < 64 * 4096; off += 4096) ASSERT_TRUE((*v)->Write(off, data).ok());
  VolumeStats s = (*v)->stats();
  // 64 KiB in groups of 1 MiB: one group, one record, two copies.
  EXPECT_EQ(s.dirty_groups, 1u);
  EXPECT_EQ(s.intent_writes, 2u);
  ASSERT_TRUE((*v)->Flush().ok());
  EXPECT_EQ((*v)->stats().dirty_groups, 1u);  // not idle long enough
  v->reset();

  o.clear_delay = std::chrono::milliseconds(0);
  auto w = cluster.Open(o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  // The previous session's group was left marked: resynced at open.
  EXPECT_GT((*w)->stats().resynced_stripes, 0u);
  EXPECT_EQ((*w)->stats().dirty_groups, 0u);
  ASSERT_TRUE((*w)->Write(2u << 20, data).ok());
  EXPECT_EQ((*w)->stats().dirty_groups, 1u);
  ASSERT_TRUE((*w)->Flush().ok());
  EXPECT_EQ((*w)->stats().dirty_groups, 0u);
  w->reset();
  o.clear_delay = std::chrono::hours(1);
  auto x = cluster.Open(o);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ((*x)->stats().resynced_stripes, 0u);  // cleared on disk too
  // Close clears what the delay still holds.
  ASSERT_TRUE((*x)->Write(3u << 20, data).ok());
  EXPECT_EQ((*x)->stats().dirty_groups, 1u);
  ASSERT_TRUE((*x)->Close().ok());
  EXPECT_EQ((*x)->stats().dirty_groups, 0u);
  x->reset();
  auto y = cluster.Open(o);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ((*y)->stats().resynced_stripes, 0u);
}

}  // namespace
}  // namespace rampart::storage
