// One partition's thread of a KvNode (private to kv/node.cc): its fabric,
// arena and executor, its durable log, and the serve loop.
//
// Start-up in two steps, so that a node's partitions recover their logs in
// parallel: the thread creates its fabric and arena and reports "created"
// (KvNode::Start starts the next thread only then, because fabric creation may
// touch the process environment); it then recovers its log, listens, and
// reports "started".
//
// A turn of the loop: Fabric::Wait runs the handlers, which execute requests
// and hold their replies; then the log group of everything the turn changed
// is committed (kv/durability.h), and only then do the replies go out. A
// failed log commit is fatal for the node (on_fatal): nothing of that turn
// is acknowledged.
//
// Thread-safety: Start/AwaitCreated/AwaitStarted/RequestStop/listening from
// any thread; everything else on the partition's thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kv/durability.h"
#include "kv/executor.h"
#include "kv/memory_budget.h"
#include "kv/placement.h"
#include "transport/transport.h"

namespace rampart::kv::internal {

struct PartitionThreadOptions {
  PartitionAddress address;
  transport::FabricOptions fabric;
  ExecutorOptions executor;  // without the arena's source and budget
  uint64_t arena_bytes = 0;
  std::shared_ptr<MemoryBudget> budget;   // the node's, shared by its partitions
  const DurabilityOptions* durability = nullptr;  // the node's; not enabled(): volatile
  LogSyncer* syncer = nullptr;            // the node's (kInterval), or nullptr
  std::function<void(const Status&)> on_fatal;
};

class PartitionThread {
 public:
  explicit PartitionThread(PartitionThreadOptions options);
  ~PartitionThread();  // RequestStop()s and joins

  void Start();
  // The outcome of creating the fabric and the arena.
  Status AwaitCreated();
  // The outcome of recovery and Listen.
  Status AwaitStarted();
  void RequestStop();
  void Join();
  bool listening() const { return listening_.load(std::memory_order_acquire); }
  std::string name() const;

 private:
  struct State;
  enum class Phase { kCreated, kStarted };

  void Report(Phase phase, Status status);
  void Run();
  Status Create(State& s);
  Status Recover(State& s);
  void SetHandlers(State& s);
  void Serve(State& s);
  void Shutdown(State& s);
  // Replies go out after the turn's log commit (Hold), or at once when volatile.
  void Hold(State& s, std::vector<OutgoingReply> replies);
  bool EndTurn(State& s);
  void Dispatch(State& s, std::vector<OutgoingReply> replies);
  // A log write or sync failed: drops every reply not sent yet, stops the
  // partition and tells the node.
  void Fatal(State& s, const Status& status);

  const PartitionThreadOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> listening_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool created_ = false;               // GUARDED_BY(mu_)
  bool started_ = false;               // GUARDED_BY(mu_)
  Status created_status_;              // GUARDED_BY(mu_)
  Status started_status_;              // GUARDED_BY(mu_)
  transport::Fabric* fabric_ = nullptr;  // GUARDED_BY(mu_): set while serving, for Notify
  std::thread thread_;
};

}  // namespace rampart::kv::internal
