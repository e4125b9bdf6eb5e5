#include "kv/placement.h"

#include <xxhash.h>

namespace rampart::kv {

Result<Placement> Placement::Create(const std::vector<NodeConfig>& nodes,
                                    uint32_t partitions_per_node) {
  if (nodes.empty()) return InvalidArgument("placement: the cluster has no nodes");
  if (partitions_per_node == 0) return InvalidArgument("placement: partitions_per_node must be at least 1");
  Placement p;
  const uint32_t n = static_cast<uint32_t>(nodes.size());
  for (uint32_t partition = 0; partition < n * partitions_per_node; ++partition) {
    const NodeConfig& node = nodes[partition % n];
    const uint32_t slot = partition / n;
    if (static_cast<uint32_t>(node.port) + slot > 65535) {
      return InvalidArgument("placement: node ", node.id, " port ", node.port, " + partition slot ",
                             slot, " exceeds 65535");
    }
    p.addresses_.push_back(PartitionAddress{partition, node.id, slot, node.host,
                                            static_cast<uint16_t>(node.port + slot)});
  }
  return p;
}

uint32_t Placement::PartitionOf(std::string_view key) const {
  return static_cast<uint32_t>(XXH3_64bits(key.data(), key.size()) % addresses_.size());
}

std::vector<uint32_t> Placement::PartitionsOfNode(uint32_t node_id) const {
  std::vector<uint32_t> out;
  for (const PartitionAddress& a : addresses_) {
    if (a.node_id == node_id) out.push_back(a.partition);
  }
  return out;
}

}  // namespace rampart::kv
