// Volume labels (docs/volume_format.md, "Volume label"): a new volume labels
// every node; a node whose device was replaced while nothing was written (no
// label), or that carries another volume's or another index's label, or a
// torn one, is failed at Open like a node that missed writes: read around,
// recorded failed until Rebuild, which writes the label last.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "storage/volume.h"
#include "storage/volume_intent.h"
#include "storage/volume_test_cluster.h"

namespace rampart::storage {
namespace {

using testing::ClusterShape;
using testing::CompareWhole;
using testing::RandomBytes;
using testing::TestCluster;

constexpr uint64_t kLabelAt = uint64_t{kVolumeLabelBlock} * kIntentBlockBytes;  // node_offset 0

std::vector<std::byte> ReadLabelBlock(const std::string& path) {
  std::vector<std::byte> block(kIntentBlockBytes);
  const int fd = open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(pread(fd, block.data(), block.size(), kLabelAt), static_cast<ssize_t>(block.size()));
  close(fd);
  return block;
}

void WriteLabelBlock(const std::string& path, const std::vector<std::byte>& block) {
  const int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, block.data(), block.size(), kLabelAt), static_cast<ssize_t>(block.size()));
  fsync(fd);
  close(fd);
}

// A volume written in full and closed cleanly (nothing dirty, nothing failed).
std::vector<std::byte> WriteAndClose(TestCluster& cluster, uint64_t seed) {
  auto v = cluster.Open();
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (!v.ok()) return {};
  std::mt19937_64 rng(seed);
  std::vector<std::byte> model = RandomBytes(rng, (*v)->size());
  EXPECT_TRUE((*v)->Write(0, model).ok());
  EXPECT_TRUE((*v)->Close().ok());
  return model;
}

// Node `bad` is out at Open: every byte reads right around it, verify refuses,
// a reopen keeps it out (recorded failed), Rebuild restores it and after a
// reopen it serves: its cells take part in reconstructing another node's.
void ExpectFailedUntilRebuilt(TestCluster& cluster, uint32_t bad, const std::vector<std::byte>& model) {
  {
    auto v = cluster.Open();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    VolumeStats s = (*v)->stats();
    EXPECT_EQ(s.nodes_down, 1u);
    EXPECT_FALSE(s.nodes[bad].up);
    EXPECT_EQ(CompareWhole(**v, model), "");
    EXPECT_GT((*v)->stats().degraded_reads, 0u);
    EXPECT_EQ((*v)->VerifyStripe(0).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ((*v)->Verify().status().code(), StatusCode::kFailedPrecondition);
  }
  {
    auto v = cluster.Open();  // still out: the intent log records it failed
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_FALSE((*v)->stats().nodes[bad].up);
    EXPECT_EQ(CompareWhole(**v, model), "");
    Status st = (*v)->Rebuild(bad);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE((*v)->Close().ok());
  }
  Result<VolumeLabel> label = DecodeVolumeLabel(ReadLabelBlock(cluster.config().storage_nodes[bad].path));
  ASSERT_TRUE(label.ok()) << label.status().ToString();
  EXPECT_EQ(label->node_index, bad);
  auto v = cluster.Open();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)->stats().nodes_down, 0u);
  Result<uint64_t> corrupt = (*v)->Verify();
  ASSERT_TRUE(corrupt.ok()) << corrupt.status().ToString();
  EXPECT_EQ(*corrupt, 0u);
  EXPECT_EQ(CompareWhole(**v, model), "");
  (*v)->SetNodeDown((bad + 1) % 4);
  EXPECT_EQ(CompareWhole(**v, model), "");
}

TEST(VolumeLabel, EncodeDecodeAndTornLabels) {
  const VolumeLabel l{0x12345678u, 2, 12, 4};
  std::vector<std::byte> block(kIntentBlockBytes);
  ASSERT_TRUE(EncodeVolumeLabel(l, block).ok());
  Result<VolumeLabel> back = DecodeVolumeLabel(block);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, l);
  testing::ExpectTornIsCorruption(block, {9, 16, 20, kIntentBlockBytes - 1}, std::byte{0x01},
                                  [](const auto& b) { return DecodeVolumeLabel(b); });
  EXPECT_EQ(DecodeVolumeLabel(std::vector<std::byte>(kIntentBlockBytes)).status().code(),
            StatusCode::kNotFound);
  // A label is no intent record, nor the other way round.
  EXPECT_EQ(DecodeIntentRecord(block).status().code(), StatusCode::kNotFound);
}

TEST(VolumeLabel, ANewVolumeLabelsEveryNode) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 256u << 10});
  for (uint32_t n = 0; n < 4; ++n) {
    EXPECT_EQ(DecodeVolumeLabel(ReadLabelBlock(cluster.config().storage_nodes[n].path)).status().code(),
              StatusCode::kNotFound);
  }
  auto v = cluster.Open();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)->stats().nodes_down, 0u);
  const uint32_t fingerprint = IntentGeometryFor((*v)->layout()).fingerprint;
  for (uint32_t n = 0; n < 4; ++n) {
    Result<VolumeLabel> label = DecodeVolumeLabel(ReadLabelBlock(cluster.config().storage_nodes[n].path));
    ASSERT_TRUE(label.ok()) << n << ": " << label.status().ToString();
    EXPECT_EQ(*label, (VolumeLabel{fingerprint, n, 10 + n, 4}));
  }
}

// The data-loss bug: a node's device replaced by an empty one while nothing
// was written. Without labels the node came back up and its zeros were read
// as data (and verify found every stripe Corruption).
TEST(VolumeLabel, ANodeReplacedWhileIdleIsFailedUntilRebuilt) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 256u << 10});
  const std::vector<std::byte> model = WriteAndClose(cluster, 1);
  cluster.StopNode(1);
  ASSERT_TRUE(cluster.StartNode(1, /*wipe=*/true).ok());
  ExpectFailedUntilRebuilt(cluster, 1, model);
}

// A device that answers with a label not this volume's node's: another
// layout's (fingerprint), another index's, or a torn one.
TEST(VolumeLabel, AForeignOrTornLabelIsFailedUntilRebuilt) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 256u << 10});
    const std::vector<std::byte> model = WriteAndClose(cluster, 2 + variant);
    const uint32_t bad = 2;
    const std::string& path = cluster.config().storage_nodes[bad].path;
    std::vector<std::byte> block = ReadLabelBlock(path);
    Result<VolumeLabel> label = DecodeVolumeLabel(block);
    ASSERT_TRUE(label.ok()) << label.status().ToString();
    if (variant == 0) {
      label->fingerprint ^= 1;
      ASSERT_TRUE(EncodeVolumeLabel(*label, block).ok());
    } else if (variant == 1) {
      label->node_index = 0;
      ASSERT_TRUE(EncodeVolumeLabel(*label, block).ok());
    } else {
      block[100] ^= std::byte{0x40};  // torn: checksum mismatch, counts as none
    }
    cluster.StopNode(bad);
    WriteLabelBlock(path, block);
    ASSERT_TRUE(cluster.StartNode(bad).ok());
    ExpectFailedUntilRebuilt(cluster, bad, model);
  }
}

TEST(VolumeLabel, TwoReplacedNodesAreUnavailableNamingThem) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 256u << 10});
  WriteAndClose(cluster, 5);
  for (uint32_t n : {1u, 3u}) {
    cluster.StopNode(n);
    ASSERT_TRUE(cluster.StartNode(n, /*wipe=*/true).ok());
  }
  auto v = cluster.Open();
  ASSERT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(v.status().message().find("storage node 11 (index 1) no volume label"), std::string::npos)
      << v.status().ToString();
  EXPECT_NE(v.status().message().find("storage node 13 (index 3) no volume label"), std::string::npos)
      << v.status().ToString();
}

// Another volume's device where a new volume should be: not relabelled.
TEST(VolumeLabel, ANewVolumeDoesNotClaimAnotherVolumesDevice) {
  TestCluster cluster(ClusterShape{.nodes = 4, .cell_bytes = 4096, .size = 256u << 10});
  std::vector<std::byte> block(kIntentBlockBytes);
  ASSERT_TRUE(EncodeVolumeLabel(VolumeLabel{0xdeadbeefu, 0, 10, 4}, block).ok());
  cluster.StopNode(0);
  WriteLabelBlock(cluster.config().storage_nodes[0].path, block);
  ASSERT_TRUE(cluster.StartNode(0).ok());
  auto v = cluster.Open();
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition) << v.status().ToString();
  EXPECT_EQ(DecodeVolumeLabel(ReadLabelBlock(cluster.config().storage_nodes[1].path)).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace rampart::storage
