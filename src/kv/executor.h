// A partition's request executor: decodes wire messages (kv/protocol.h),
// applies them to the partition's versions (kv/partition.h) and locks
// (kv/lock_table.h), and produces reply messages. No networking: the node's
// partition thread feeds it bytes and sends what it returns, so it is tested
// without processes.
//
// Isolation modes on the node side:
//   ramp  PREPARE (siblings, not visible) then COMMIT(ts); GET returns the
//         latest committed version with its slot address; GET_BY_TS returns
//         an exact version, prepared or committed (RAMP's repair round).
//   s2pl  LOCK(keys in global key order, S or X) — granted now or queued; the
//         reply comes when granted, possibly while executing another client's
//         UNLOCK —, then GET / PREPARE(kFlagCommitNow), then UNLOCK(txn).
//   none  PREPARE(kFlagCommitNow) and GET, nothing else.
// DESCRIBE answers with the transport descriptor of one extent of the arena
// (ExposeArena), so a GET* client can read slots one-sidedly; NotSupported
// until a describer is set (the tcp transport exposes no memory).
// COUNT answers Partition::LiveKeys(); STATS the keys, versions and arena
// memory; FLUSH runs Partition::Flush() (locks are left alone) and answers OK.
//
// Thread-safety: one thread (the partition's) owns an executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "kv/partition.h"

namespace rampart::kv {

class PartitionRedo;

struct ExecutorOptions {
  PartitionOptions partition;
  // How long a transaction may hold or wait for S2PL locks before they are
  // broken (its client presumably died). Default: 10 s.
  std::chrono::milliseconds lock_timeout = std::chrono::seconds(10);
  // Largest request message accepted; larger ones are answered with an error.
  // Default: 64 MiB.
  size_t max_message_bytes = 64u << 20;
};

// Who sent a message; replies go back to the same connection.
using ConnectionId = uint64_t;

struct OutgoingReply {
  ConnectionId to;
  std::vector<std::byte> message;  // a whole reply message (kv/protocol.h)
};

class PartitionExecutor {
 public:
  // REQUIRES: `arena` outlives the executor (the node allocates it registered,
  // so clients can read slots one-sidedly).
  PartitionExecutor(uint32_t partition, std::span<std::byte> arena, const ExecutorOptions& options);
  ~PartitionExecutor();

  // Executes every request of `message` from `from`. Returns the replies to
  // send: normally one message to `from` answering each request in order;
  // LOCK requests that must wait are answered later (from another call), and
  // UNLOCK may produce replies to other connections whose locks it granted.
  // A malformed message yields one error reply (request id 0) to `from`.
  std::vector<OutgoingReply> Execute(ConnectionId from, std::span<const std::byte> message,
                                     std::chrono::steady_clock::time_point now);

  // Periodic work: GC of superseded and expired versions, breaking expired
  // locks (with replies to waiters that were granted or timed out).
  std::vector<OutgoingReply> Tick(std::chrono::steady_clock::time_point now);

  // A connection closed: its waiting LOCK requests are dropped (locks it holds
  // stay until UNLOCK or lock_timeout, since a transaction may span
  // connections).
  std::vector<OutgoingReply> ConnectionClosed(ConnectionId id, std::chrono::steady_clock::time_point now);

  // What DESCRIBE answers from now on: the transport::MemoryRegion::
  // Descriptor() of arena extent `extent` (< partition().arena().extent_count()).
  using DescribeExtent = std::function<Result<std::vector<std::byte>>(uint32_t extent)>;
  void ExposeArena(DescribeExtent describe);

  // Every change a request makes (PREPARE, COMMIT, FLUSH) is recorded in
  // `redo` from now on, before its reply is returned; the caller commits the
  // log before it sends the replies. nullptr: volatile (the default).
  // REQUIRES: `redo` outlives the executor or is detached first.
  void AttachRedo(PartitionRedo* redo);

  const Partition& partition() const;
  // For recovery and checkpoints, on the executor's thread.
  Partition& mutable_partition();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rampart::kv
