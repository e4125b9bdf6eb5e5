#include "proxy/hash_ring.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace rampart::proxy {
namespace {

std::vector<NodeConfig> Nodes(uint32_t n) {
  std::vector<NodeConfig> nodes;
  for (uint32_t i = 0; i < n; ++i) {
    nodes.push_back(NodeConfig{i, "127.0.0.1", static_cast<uint16_t>(7000 + 10 * i)});
  }
  return nodes;
}

HashRing MustCreate(const std::vector<NodeConfig>& nodes, uint32_t partitions_per_node, RingOptions options) {
  auto ring = HashRing::Create(nodes, partitions_per_node, options);
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  return std::move(ring).value();
}

std::string Key(int i) { return "user" + std::to_string(i); }

TEST(HashRing, HashTagFollowsRedisCluster) {
  EXPECT_EQ(HashRing::HashTag("{user1}.a"), "user1");
  EXPECT_EQ(HashRing::HashTag("x{user1}"), "user1");
  EXPECT_EQ(HashRing::HashTag("a{b}{c}"), "b");
  EXPECT_EQ(HashRing::HashTag("a{{b}}"), "{b");
  EXPECT_EQ(HashRing::HashTag("plain"), "plain");
  EXPECT_EQ(HashRing::HashTag(""), "");
  EXPECT_EQ(HashRing::HashTag("{}"), "{}");
  EXPECT_EQ(HashRing::HashTag("{}{x}"), "{}{x}") << "only the first '{' counts";
  EXPECT_EQ(HashRing::HashTag("a{"), "a{");
  EXPECT_EQ(HashRing::HashTag("}{"), "}{");
  EXPECT_EQ(HashRing::HashTag("}{a}"), "a");
  EXPECT_EQ(HashRing::HashTag(std::string_view("{\0}", 3)), std::string_view("\0", 1));
}

TEST(HashRing, SameTagSamePartitionsAndDeterministic) {
  HashRing ring = MustCreate(Nodes(4), 3, {.replicas = 2});
  HashRing again = MustCreate(Nodes(4), 3, {.replicas = 2});
  std::set<uint32_t> primaries;
  for (int i = 0; i < 1000; ++i) {
    const std::string tag = StrCat("{", Key(i), "}");
    Replicas a = ring.ReplicasOf(tag + ".a");
    Replicas b = ring.ReplicasOf(tag + ".b");
    Replicas c = again.ReplicasOf(tag + ".a");
    ASSERT_EQ(a.count, 2u);
    EXPECT_EQ(a.partition, b.partition) << tag;
    EXPECT_EQ(a.partition, c.partition) << tag;
    EXPECT_EQ(a.partition, ring.ReplicasOf(Key(i)).partition) << "tag hashes like the bare key";
    primaries.insert(a.partition[0]);
  }
  EXPECT_EQ(primaries.size(), 12u) << "every partition is some key's primary";
}

TEST(HashRing, ReplicasAreOnDistinctNodesWithPlacementNumbering) {
  const uint32_t nodes = 5, per_node = 4;
  HashRing ring = MustCreate(Nodes(nodes), per_node, {.vnodes = 40, .replicas = 5});
  EXPECT_EQ(ring.node_count(), nodes);
  EXPECT_EQ(ring.partition_count(), nodes * per_node);
  EXPECT_EQ(ring.replicas(), 5u);
  for (int i = 0; i < 2000; ++i) {
    Replicas r = ring.ReplicasOf(Key(i));
    ASSERT_EQ(r.count, 5u);
    std::set<uint32_t> node_ids;
    std::set<uint32_t> slots;
    for (uint32_t p : r) {
      ASSERT_LT(p, ring.partition_count());
      node_ids.insert(p % nodes);
      slots.insert(p / nodes);
    }
    EXPECT_EQ(node_ids.size(), 5u) << Key(i);
    EXPECT_EQ(slots.size(), 1u) << "a key uses the same slot on every replica node";
  }
  // Fewer replicas are a prefix of more: the primary does not depend on R.
  HashRing two = MustCreate(Nodes(nodes), per_node, {.vnodes = 40, .replicas = 2});
  for (int i = 0; i < 200; ++i) {
    Replicas all = ring.ReplicasOf(Key(i)), some = two.ReplicasOf(Key(i));
    EXPECT_EQ(some.partition[0], all.partition[0]);
    EXPECT_EQ(some.partition[1], all.partition[1]);
  }
}

TEST(HashRing, KeysBalanceOverNodesAndSlots) {
  HashRing ring = MustCreate(Nodes(4), 2, {});
  std::map<uint32_t, int> per_node, per_partition;
  const int keys = 100000;
  for (int i = 0; i < keys; ++i) {
    const uint32_t p = ring.ReplicasOf(Key(i)).partition[0];
    ++per_node[p % 4];
    ++per_partition[p];
  }
  ASSERT_EQ(per_node.size(), 4u);
  ASSERT_EQ(per_partition.size(), 8u);
  for (auto [node, n] : per_node) EXPECT_NEAR(n, keys / 4, keys / 4 * 0.15) << "node " << node;
  for (auto [p, n] : per_partition) {
    // A node's keys split evenly over its slots.
    const int node_total = per_node[p % 4];
    EXPECT_NEAR(n, node_total / 2, node_total / 2 * 0.05) << "partition " << p;
  }
}

TEST(HashRing, RemovingANodeMovesOnlyItsKeys) {
  std::vector<NodeConfig> four = Nodes(4);
  std::vector<NodeConfig> three = {four[0], four[1], four[3]};  // node 2 leaves
  HashRing before = MustCreate(four, 2, {});
  HashRing after = MustCreate(three, 2, {});
  auto primary_address = [](const HashRing& ring, const std::vector<NodeConfig>& nodes, const std::string& key) {
    return nodes[ring.ReplicasOf(key).partition[0] % ring.node_count()].address();
  };
  const int keys = 100000;
  int moved = 0;
  for (int i = 0; i < keys; ++i) {
    const std::string key = Key(i);
    const std::string was = primary_address(before, four, key);
    const std::string is = primary_address(after, three, key);
    if (was == is) continue;
    ++moved;
    EXPECT_EQ(was, four[2].address()) << key << " moved though its node stayed";
  }
  EXPECT_GT(moved, 0);
  EXPECT_LE(moved, keys * 0.30);
}

TEST(HashRing, BadShapesAreRefused) {
  auto code = [](const Result<HashRing>& r) { return r.status().code(); };
  EXPECT_EQ(code(HashRing::Create({}, 2, {})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(HashRing::Create(Nodes(3), 0, {})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(HashRing::Create(Nodes(3), 2, {.vnodes = 0})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(HashRing::Create(Nodes(3), 2, {.vnodes = kMaxVnodes + 1})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(HashRing::Create(Nodes(3), 2, {.replicas = 0})), StatusCode::kInvalidArgument);
  auto too_many = HashRing::Create(Nodes(3), 2, {.replicas = 4});
  EXPECT_EQ(too_many.status().message(),
            "hash ring: replicas is 4; with 3 nodes it must be 1..3 (each replica on its own node, at most 8)");
  EXPECT_EQ(code(HashRing::Create(Nodes(10), 2, {.replicas = kMaxReplicas + 1})), StatusCode::kInvalidArgument);
  EXPECT_TRUE(HashRing::Create(Nodes(10), 2, {.replicas = kMaxReplicas}).ok());
  std::vector<NodeConfig> twice = Nodes(2);
  twice[1].port = twice[0].port;
  EXPECT_EQ(HashRing::Create(twice, 2, {}).status().message(),
            "hash ring: node address 127.0.0.1:7000 appears twice");
  EXPECT_EQ(code(HashRing::Create(Nodes(2), 0x80000000u, {})), StatusCode::kInvalidArgument);
}

TEST(HashRing, OneNodeHoldsEverything) {
  HashRing ring = MustCreate(Nodes(1), 3, {.vnodes = 1});
  std::set<uint32_t> seen;
  for (int i = 0; i < 300; ++i) {
    Replicas r = ring.ReplicasOf(Key(i));
    ASSERT_EQ(r.count, 1u);
    seen.insert(r.partition[0]);
  }
  EXPECT_EQ(seen, (std::set<uint32_t>{0, 1, 2}));
}

}  // namespace
}  // namespace rampart::proxy
