// KvNode: start-up of a node's partition threads (kv/partition_thread.h) and
// shutdown.
#include "kv/node.h"

#include <algorithm>
#include <utility>

#include "common/size.h"
#include "kv/partition_thread.h"
#include "transport/config_options.h"

namespace rampart::kv {

Result<ExecutorOptions> ExecutorOptionsFromConfig(const ClusterConfig& config) {
  const KvConfig& kv = config.kv;
  ExecutorOptions o;
  o.partition.grace_period = std::chrono::milliseconds(kv.grace_ms);
  o.partition.prepared_timeout = std::chrono::milliseconds(kv.prepared_timeout_ms);
  o.partition.max_key_bytes = kv.max_key_bytes;
  o.partition.max_value_bytes = kv.max_value_bytes;
  o.lock_timeout = std::chrono::milliseconds(kv.lock_timeout_ms);
  o.max_message_bytes = config.transport.max_message_size;
  if (Status st = Partition::CheckOptions(o.partition); !st.ok()) {
    return st.WithContext("kv.max_key_bytes and kv.max_value_bytes");
  }
  return o;
}

Result<std::unique_ptr<KvNode>> KvNode::Start(const ClusterConfig& config, uint32_t node_id,
                                              KvNodeOptions options) {
  if (config.FindNode(node_id) == nullptr) {
    return NotFound("node ", node_id, " is not in the cluster configuration (",
                    config.origin.empty() ? "<unnamed>" : config.origin, ")");
  }
  RAMPART_ASSIGN_OR_RETURN(Placement placement,
                           Placement::Create(config.nodes, config.kv.partitions_per_node));
  RAMPART_ASSIGN_OR_RETURN(ExecutorOptions executor_options, ExecutorOptionsFromConfig(config));
  RAMPART_ASSIGN_OR_RETURN(transport::Backend backend,
                           transport::ParseBackend(config.transport.backend));
  RAMPART_ASSIGN_OR_RETURN(transport::FabricOptions fabric_options,
                           transport::FabricOptionsFromConfig(config));

  std::unique_ptr<KvNode> node(new KvNode());
  node->node_id_ = node_id;
  node->backend_ = backend;
  node->durability_ = std::move(options.durability);
  node->durability_.cluster = config.name;
  node->durability_.node = node_id;
  node->durability_.partition_count = placement.partition_count();
  if (node->durability_.enabled() && node->durability_.sync == wal::SyncPolicy::kInterval) {
    node->syncer_ = std::make_unique<LogSyncer>(node->durability_.sync_interval, options.on_fatal);
  }
  auto budget = std::make_shared<MemoryBudget>(config.kv.maxmemory);
  for (uint32_t p : placement.PartitionsOfNode(node_id)) {
    node->partitions_.push_back(placement.Address(p));
  }
  // Threads are created one at a time (fabric creation may touch the process
  // environment, UCX_* variables, which is not thread-safe); their recoveries
  // then run in parallel.
  for (const PartitionAddress& address : node->partitions_) {
    internal::PartitionThreadOptions o;
    o.address = address;
    o.fabric = fabric_options;
    o.executor = executor_options;
    o.arena_bytes = config.kv.arena_bytes;
    o.budget = budget;
    o.durability = &node->durability_;
    o.syncer = node->syncer_.get();
    o.on_fatal = options.on_fatal;
    auto t = std::make_unique<internal::PartitionThread>(std::move(o));
    t->Start();
    internal::PartitionThread* raw = t.get();
    node->threads_.push_back(std::move(t));
    if (Status st = raw->AwaitCreated(); !st.ok()) {
      node->Stop();
      return st.WithContext(StrCat("node ", node_id, ": ", raw->name()));
    }
  }
  for (auto& t : node->threads_) {
    if (Status st = t->AwaitStarted(); !st.ok()) {
      node->Stop();
      return st.WithContext(StrCat("node ", node_id, ": ", t->name()));
    }
  }
  return node;
}

KvNode::KvNode() = default;
KvNode::~KvNode() { Stop(); }

void KvNode::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  for (auto& t : threads_) t->RequestStop();
  for (auto& t : threads_) t->Join();
  syncer_.reset();  // a last sync round
}

bool KvNode::ready() const {
  if (threads_.empty()) return false;
  return std::all_of(threads_.begin(), threads_.end(),
                     [](const auto& t) { return t->listening(); });
}

}  // namespace rampart::kv
