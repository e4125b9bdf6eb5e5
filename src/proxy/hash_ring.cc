#include "proxy/hash_ring.h"

#include <xxhash.h>

#include <algorithm>
#include <set>
#include <string>

#include "proxy/internal_keys.h"

namespace rampart::proxy {
namespace {

// Seeds the slot hash so that it is independent of the ring position hash.
// Persisted placement: do not change.
constexpr uint64_t kSlotSeed = 0x72616d7061727431ULL;  // "rampart1"

uint64_t Hash(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

}  // namespace

Result<HashRing> HashRing::Create(const std::vector<NodeConfig>& nodes, uint32_t partitions_per_node,
                                  RingOptions options) {
  if (nodes.empty()) return InvalidArgument("hash ring: the cluster has no nodes");
  if (partitions_per_node == 0) {
    return InvalidArgument("hash ring: partitions_per_node must be at least 1");
  }
  if (static_cast<uint64_t>(nodes.size()) * partitions_per_node > UINT32_MAX) {
    return InvalidArgument("hash ring: ", nodes.size(), " nodes × ", partitions_per_node,
                           " partitions per node do not fit 32-bit partition ids");
  }
  if (options.vnodes == 0 || options.vnodes > kMaxVnodes) {
    return InvalidArgument("hash ring: vnodes is ", options.vnodes, "; it must be 1..", kMaxVnodes);
  }
  const uint32_t max_replicas = std::min<uint32_t>(static_cast<uint32_t>(nodes.size()), kMaxReplicas);
  if (options.replicas == 0 || options.replicas > max_replicas) {
    return InvalidArgument("hash ring: replicas is ", options.replicas, "; with ", nodes.size(),
                           " nodes it must be 1..", max_replicas,
                           " (each replica on its own node, at most ", kMaxReplicas, ")");
  }

  HashRing ring;
  ring.node_count_ = static_cast<uint32_t>(nodes.size());
  ring.partitions_per_node_ = partitions_per_node;
  ring.replicas_ = options.replicas;
  ring.points_.reserve(static_cast<size_t>(nodes.size()) * options.vnodes);
  std::set<std::string> seen;
  for (uint32_t i = 0; i < ring.node_count_; ++i) {
    const std::string address = nodes[i].address();
    if (!seen.insert(address).second) {
      return InvalidArgument("hash ring: node address ", address, " appears twice");
    }
    for (uint32_t v = 0; v < options.vnodes; ++v) {
      ring.points_.push_back(Point{Hash(StrCat(address, "#", v)), i});
    }
  }
  std::sort(ring.points_.begin(), ring.points_.end(), [](const Point& a, const Point& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.node < b.node;
  });
  return ring;
}

std::string_view HashRing::HashTag(std::string_view key) {
  const size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

Replicas HashRing::ReplicasOf(std::string_view key) const {
  const std::string_view tag = HashTag(PlacementKey(key));
  const uint64_t h = Hash(tag);
  const uint32_t slot =
      static_cast<uint32_t>(XXH3_64bits_withSeed(tag.data(), tag.size(), kSlotSeed) % partitions_per_node_);

  Replicas out;
  auto it = std::lower_bound(points_.begin(), points_.end(), h,
                             [](const Point& p, uint64_t value) { return p.hash < value; });
  // Every node has a point, so the walk finds replicas_ (<= node_count_)
  // distinct nodes within one turn.
  for (size_t walked = 0; walked < points_.size() && out.count < replicas_; ++walked, ++it) {
    if (it == points_.end()) it = points_.begin();
    const uint32_t partition = slot * node_count_ + it->node;
    if (std::find(out.begin(), out.end(), partition) == out.end()) {
      out.partition[out.count++] = partition;
    }
  }
  return out;
}

}  // namespace rampart::proxy
