// KvNode: the partitions one node of the cluster serves, one thread each.
//
//   auto node = KvNode::Start(config, /*node_id=*/0);
//   if (!node.ok()) return node.status();   // "partition 4 (127.0.0.1:7001): ..."
//   ... wait for a signal ...
//   (*node)->Stop();
//
// Each partition thread (docs/design.md §5: one writer per partition, shared-nothing;
// kv/partition_thread.h) creates its own transport::Fabric, allocates the
// partition's arena as registered memory through it (so clients can later
// read slots one-sidedly), recovers the partition from its redo log when the
// node is durable (kv/durability.h), listens on the partition's host:port
// (kv/placement.h) and loops: every message goes to its PartitionExecutor;
// the turn's changes go to the redo log; then the replies are sent back.
// Requests arrive as two-sided messages or over message channels that clients
// open (GET+/PUT+); each is answered the way it came. On ucx GET* clients
// import the arena's extents through DESCRIBE.
//
// Thread-safety: Start, Stop, ready and the accessors may be called from any
// thread; Stop may be called concurrently and more than once. The partition
// threads share the stop flag, the memory budget and the log syncer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "kv/durability.h"
#include "kv/executor.h"
#include "kv/placement.h"
#include "transport/transport.h"

namespace rampart::kv {

// The executor options the [kv] table asks for. InvalidArgument when the
// arena cannot hold the largest version the limits allow
// (Partition::CheckOptions).
Result<ExecutorOptions> ExecutorOptionsFromConfig(const ClusterConfig& config);

namespace internal {
class PartitionThread;
}

struct KvNodeOptions {
  // Where and how the partitions log (cluster, node and partition count are
  // filled in from the configuration). Default: volatile.
  DurabilityOptions durability;
  // Called (from a partition or the syncer thread) when a redo log write or
  // sync failed: the partition stopped without acknowledging that turn; the
  // node should exit and recover on restart. nullptr: only logged.
  std::function<void(const Status&)> on_fatal;
};

class KvNode {
 public:
  // Starts the threads of every partition of `node_id` and returns once all
  // of them recovered their logs and listen. Errors (unknown node, bad [kv]
  // settings, an arena that cannot be allocated, a log that cannot be
  // recovered, a port in use) name the partition and its address; threads
  // already started are stopped first.
  static Result<std::unique_ptr<KvNode>> Start(const ClusterConfig& config, uint32_t node_id,
                                               KvNodeOptions options = {});

  KvNode(const KvNode&) = delete;
  KvNode& operator=(const KvNode&) = delete;
  ~KvNode();  // Stop()s

  // Asks every partition thread to finish (closing its connections, syncing
  // its log) and joins them. Idempotent; thread-safe.
  void Stop();

  // True while every partition thread listens (after Start, before Stop).
  bool ready() const;

  uint32_t node_id() const { return node_id_; }
  transport::Backend backend() const { return backend_; }
  // The partitions served, in slot order.
  const std::vector<PartitionAddress>& partitions() const { return partitions_; }

 private:
  KvNode();

  uint32_t node_id_ = 0;
  transport::Backend backend_ = transport::Backend::kUcx;
  std::vector<PartitionAddress> partitions_;
  DurabilityOptions durability_;
  std::unique_ptr<LogSyncer> syncer_;
  std::mutex stop_mu_;  // serialises Stop()s (joining)
  std::vector<std::unique_ptr<internal::PartitionThread>> threads_;
};

}  // namespace rampart::kv
