// HashRing: which kv partitions hold a Redis key, by consistent hashing
// (ketama-like) over the cluster's nodes, so that adding or removing a node
// moves only the keys of the ring arcs it gains or loses.
//
//   auto ring = HashRing::Create(config.nodes, config.kv.partitions_per_node, {.replicas = 2});
//   if (!ring.ok()) return ring.status();
//   for (uint32_t partition : ring->ReplicasOf("{user1}.name")) ...   // primary first
//
// The ring:
//   point(node i, vnode v) = XXH3_64bits("host:port#v")   (the node's address, NodeConfig::address())
//   tag(key)               = HashTag(PlacementKey(key))    (Redis Cluster's {...} rule;
//                                                            a collection page goes with
//                                                            its user key, internal_keys.h)
//   replicas(key)          = the first R distinct nodes met walking clockwise
//                            (increasing points, wrapping) from XXH3_64bits(tag)
//   slot(key)              = XXH3_64bits_withSeed(tag, kSlotSeed) mod partitions_per_node
//   partition(key, node i) = slot * nodes + i              (kv::Placement's numbering)
//
// A node's points depend on its address only, not on its place in the list, so
// the ring of a cluster minus one node differs only by that node's arcs. The
// partition ids do depend on the node count (Placement's numbering), as they
// must for the kv tier to find them.
//
// Thread-safety: immutable after Create; share freely.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace rampart::proxy {

struct RingOptions {
  // Points each node puts on the ring, 1..kMaxVnodes. More points spread keys
  // more evenly: with 4 nodes, the busiest node holds about 10% more than the
  // mean at 160 points (up to 25% for unlucky addresses), about 5% at 500
  // (up to 12%). Default: 160.
  uint32_t vnodes = 160;
  // Copies of each key, each on a different node, 1..min(nodes, kMaxReplicas).
  // Default: 1.
  uint32_t replicas = 1;
};

inline constexpr uint32_t kMaxReplicas = 8;
inline constexpr uint32_t kMaxVnodes = 65536;

// Up to kMaxReplicas partition ids, primary first.
struct Replicas {
  std::array<uint32_t, kMaxReplicas> partition{};
  uint32_t count = 0;

  const uint32_t* begin() const { return partition.data(); }
  const uint32_t* end() const { return partition.data() + count; }
};

class HashRing {
 public:
  // `nodes`: the cluster's [[nodes]] in config order; node i is the ring member
  // named by its address. InvalidArgument when nodes is empty or has a repeated
  // address, partitions_per_node is 0, nodes × partitions_per_node overflows 32
  // bits, vnodes is outside 1..kMaxVnodes, or replicas is outside
  // 1..min(nodes, kMaxReplicas).
  static Result<HashRing> Create(const std::vector<NodeConfig>& nodes, uint32_t partitions_per_node,
                                 RingOptions options);

  // Redis Cluster's hash-tag rule: when the key has a '{' and, after the first
  // '{', a '}' with at least one byte between them, the bytes between the first
  // '{' and the first '}' after it; otherwise the whole key.
  //   "{user1}.a" → "user1"   "a{b}{c}" → "b"   "{}" / "a{" / "}{" / "{}{x}" → the whole key
  static std::string_view HashTag(std::string_view key);

  // The key's replicas() partitions, on distinct nodes, primary first. Keys
  // with the same hash tag get the same partitions.
  Replicas ReplicasOf(std::string_view key) const;

  uint32_t replicas() const { return replicas_; }
  uint32_t node_count() const { return node_count_; }
  uint32_t partition_count() const { return node_count_ * partitions_per_node_; }

 private:
  struct Point {
    uint64_t hash;
    uint32_t node;  // index into the config's node list
  };

  HashRing() = default;

  std::vector<Point> points_;  // sorted by (hash, node)
  uint32_t node_count_ = 0;
  uint32_t partitions_per_node_ = 0;
  uint32_t replicas_ = 0;
};

}  // namespace rampart::proxy
