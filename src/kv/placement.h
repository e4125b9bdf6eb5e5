// Where a key lives: partition, node, and the port of the partition's thread.
// Computed from the cluster file alone, so every process agrees without a
// metadata service.
//
//   partition(key) = XXH3_64bits(key) mod (nodes × partitions_per_node)
//   node(p)        = nodes[p mod nodes]          (partitions round-robin over nodes)
//   slot(p)        = p div nodes                 (the partition's thread on that node)
//   port(p)        = node(p).port + slot(p)      (each partition thread listens on its own port)
//
// Thread-safety: immutable after construction; share freely.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace rampart::kv {

struct PartitionAddress {
  uint32_t partition;
  uint32_t node_id;
  uint32_t slot;  // index of the partition among its node's partitions
  std::string host;
  uint16_t port;
};

class Placement {
 public:
  // REQUIRES: `nodes` is non-empty; partitions_per_node >= 1; every
  // node.port + partitions_per_node - 1 fits in 16 bits (checked: error).
  static Result<Placement> Create(const std::vector<NodeConfig>& nodes, uint32_t partitions_per_node);

  uint32_t partition_count() const { return static_cast<uint32_t>(addresses_.size()); }
  uint32_t PartitionOf(std::string_view key) const;
  const PartitionAddress& Address(uint32_t partition) const { return addresses_[partition]; }
  // The partitions a node serves, in slot order.
  std::vector<uint32_t> PartitionsOfNode(uint32_t node_id) const;

 private:
  std::vector<PartitionAddress> addresses_;
};

}  // namespace rampart::kv
