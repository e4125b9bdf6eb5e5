#include "kv/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace rampart::kv {
namespace {

std::vector<NodeConfig> FourNodes() {
  std::vector<NodeConfig> nodes;
  for (uint32_t i = 0; i < 4; ++i) nodes.push_back(NodeConfig{i, "127.0.0.1", static_cast<uint16_t>(7000 + 10 * i)});
  return nodes;
}

TEST(Placement, PartitionsRoundRobinOverNodesWithOnePortEach) {
  auto p = Placement::Create(FourNodes(), 2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->partition_count(), 8u);
  EXPECT_EQ(p->Address(5).node_id, 1u);
  EXPECT_EQ(p->Address(5).slot, 1u);
  EXPECT_EQ(p->Address(5).port, 7011);
  EXPECT_EQ(p->PartitionsOfNode(2), (std::vector<uint32_t>{2, 6}));
  std::set<std::pair<std::string, uint16_t>> endpoints;
  for (uint32_t i = 0; i < 8; ++i) endpoints.insert({p->Address(i).host, p->Address(i).port});
  EXPECT_EQ(endpoints.size(), 8u) << "every partition thread has its own port";
}

TEST(Placement, KeysSpreadAndAreStable) {
  auto p = Placement::Create(FourNodes(), 2);
  ASSERT_TRUE(p.ok());
  std::map<uint32_t, int> counts;
  for (int i = 0; i < 80000; ++i) ++counts[p->PartitionOf("key" + std::to_string(i))];
  ASSERT_EQ(counts.size(), 8u);
  for (auto [partition, n] : counts) EXPECT_NEAR(n, 10000, 600) << partition;
  auto again = Placement::Create(FourNodes(), 2);
  EXPECT_EQ(p->PartitionOf("user:42"), again->PartitionOf("user:42"));
}

TEST(Placement, BadShapesAreRefused) {
  EXPECT_FALSE(Placement::Create({}, 1).ok());
  EXPECT_FALSE(Placement::Create(FourNodes(), 0).ok());
  std::vector<NodeConfig> high = {NodeConfig{0, "127.0.0.1", 65535}};
  EXPECT_EQ(Placement::Create(high, 2).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rampart::kv
