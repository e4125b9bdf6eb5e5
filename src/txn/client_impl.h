// Client::Impl: the state behind txn::Client, shared by client.cc
// (connections, the exchange of requests and replies, writes) and
// client_read.cc (reads: GET / GET+ / GET*, RAMP's repair round). Private to
// src/txn.
//
// Everything runs on the thread that owns the Fabric; handlers and completions
// are called from inside Fabric::Wait()/Progress() in Exchange() (or the
// one-sided read wait), so the state below needs no locks.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/tcp_probe.h"
#include "common/timestamp.h"
#include "txn/address_cache.h"
#include "txn/client.h"
#include "txn/ramp_logic.h"

namespace rampart::txn {

// One request in flight to one partition, and what came back.
struct Call {
  uint32_t partition = 0;
  kv::wire::MsgType type = kv::wire::MsgType::kGet;
  uint64_t request_id = 0;
  size_t expected_results = 0;  // GET / GET_BY_TS: keys asked
  uint64_t epoch = 0;           // of the partition's connection it was sent on
  bool done = false;
  Status status;
  // The reply message (or one-sided read buffer) the results' views point into.
  std::shared_ptr<const std::vector<std::byte>> hold;
  std::vector<kv::wire::GetResult> results;
  kv::wire::ArenaInfo arena;  // DESCRIBE
  uint64_t count = 0;         // COUNT
  kv::wire::PartitionStatsInfo stats;  // STATS
  kv::wire::ScanResult scan;           // SCAN (views into `hold`)
  std::vector<kv::wire::SlotAddress> slots;  // PREPARE with kFlagReturnSlots
};

// Keeps alive the reply messages (or one-sided read buffers) that GET
// results view into.
using ReplyHolds = std::vector<std::shared_ptr<const std::vector<std::byte>>>;

// GET*'s one-sided reads of a round (client_read.cc).
struct SlotReads;
// One RunBatch's state across its rounds (client_batch.cc).
struct BatchRun;

// Which path a request takes: two-sided messages or the message channel.
enum class Route { kRpc, kRing };

class Client::Impl {
 public:
  Impl(ClientOptions options, kv::Placement placement, std::shared_ptr<TimestampSource> ts,
       std::unique_ptr<transport::Fabric> fabric);
  ~Impl();

  Status Write(std::span<const internal::WriteOp> writes);
  Result<std::vector<std::optional<std::string>>> Read(const std::vector<std::string>& keys);

  const ClientOptions& options() const { return options_; }
  void ObserveTimestamp(uint64_t ts) { timestamps_->NextAfter(ts); }
  const kv::Placement& placement() const { return placement_; }
  bool MayExist(std::string_view key, uint32_t partition) const {
    if (!one_sided_[partition]) return true;
    const internal::AddressCache::Entry* e = addresses_.Find(key);
    return e != nullptr && e->partition == partition;
  }
  Stats stats() const { return stats_; }

  // client_health.cc: partitions that do not answer.
  void Tick();
  uint32_t unreachable_partitions() const { return unreachable_; }

 private:
  // One partition's connection: the endpoint, its message channel (ring
  // modes) and the extents of the partition's arena imported for GET*
  // (extents[i] invalid: not imported yet).
  struct Link {
    std::shared_ptr<transport::Endpoint> endpoint;
    std::shared_ptr<transport::Channel> channel;
    std::vector<transport::RemoteRegion> extents;
    // Bumped whenever the connection is dropped: addresses learnt on an
    // older epoch point into memory that may no longer be the partition's.
    uint64_t epoch = 0;
    bool ever_connected = false;
  };

  internal::PartitionOf PartitionFn() const {
    return [this](std::string_view key) { return placement_.PartitionOf(key); };
  }
  uint64_t TakeIds(size_t n) {
    uint64_t first = next_request_id_;
    next_request_id_ += n;
    return first;
  }
  std::string Where(uint32_t p) const;
  Route WriteRoute() const { return options_.put_mode == PutMode::kRing ? Route::kRing : Route::kRpc; }
  // GET and GET_BY_TS to `partition`: over its channel (GET+, and GET*'s
  // misses) or as messages.
  Route ReadRoute(uint32_t partition) const {
    switch (options_.get_mode) {
      case GetMode::kRpc: return Route::kRpc;
      case GetMode::kRing:
      case GetMode::kRead: return Route::kRing;
      case GetMode::kAuto: return one_sided_[partition] ? Route::kRing : Route::kRpc;
    }
    return Route::kRpc;
  }
  // ReadRoute of each request.
  std::vector<Route> ReadRoutes(std::span<const internal::OutgoingRequest> reqs) const;
  bool NeedsChannel(uint32_t partition) const {
    return WriteRoute() == Route::kRing || ReadRoute(partition) == Route::kRing;
  }
  // Whether GET* reads `partition`'s slots (get mode read, or auto and on
  // this host).
  bool ReadsSlots(uint32_t partition) const { return one_sided_[partition]; }
  bool AnySlotReads() const { return any_one_sided_; }

  // client.cc: connections and the exchange.
  Result<Link*> Connection(uint32_t partition);
  void DropConnection(uint32_t partition);
  int PartitionOfEndpoint(const transport::Endpoint* ep) const;
  void FailPartition(uint32_t partition, const Status& status);
  void OnReply(uint32_t partition, std::span<const std::byte> bytes);
  void OnDisconnect(const std::shared_ptr<transport::Endpoint>& ep, Status why);
  // Sends one message to `partition`; `calls` are the requests it carries.
  // A failed send fails them.
  void SendMessage(uint32_t partition, std::vector<std::byte> message, Route route,
                   std::span<Call* const> calls);
  // Sends every request (one per partition), then waits for all replies or
  // the request timeout. calls[i] answers reqs[i]. Returns the first error in
  // request order (naming its partition), OK when every reply was OK.
  Status Exchange(std::vector<internal::OutgoingRequest>& reqs, std::vector<Call>& calls,
                  Route route);
  // Exchange with a route per request; coalesce: the requests for one
  // partition and route travel in one message (bounded by the limits).
  Status Exchange(std::vector<internal::OutgoingRequest>& reqs, std::vector<Call>& calls,
                  std::span<const Route> routes, bool coalesce);
  // Exchange's two halves: send every request, then wait for the calls'
  // replies, the request timeout, or a partition found unreachable.
  void SendAll(std::vector<internal::OutgoingRequest>& reqs, std::vector<Call>& calls,
               std::span<const Route> routes, bool coalesce);
  void AwaitCalls(std::span<Call> calls);

  Status WriteRamp(std::span<const internal::WriteOp> writes,
                   std::span<const internal::PartitionGroup> groups, uint64_t ts);
  Status WriteS2pl(std::span<const internal::WriteOp> writes,
                   std::span<const internal::PartitionGroup> groups, uint64_t ts);
  // S2PL: LOCK partition after partition in ascending order. Appends every
  // partition a LOCK was sent to (granted or not) to *touched.
  Status LockAll(std::span<const std::string_view> keys,
                 std::span<const internal::PartitionGroup> groups, kv::LockMode mode,
                 uint64_t txn, std::vector<uint32_t>* touched);
  void UnlockAll(std::span<const uint32_t> partitions, uint64_t txn);

  // client_read.cc: round 1 (+ round 2 under ramp): results[i] for keys[i];
  // `holds` keeps the bytes the results view alive.
  Status ReadVersions(std::span<const std::string_view> keys,
                      std::span<const internal::PartitionGroup> groups, bool repair,
                      std::vector<kv::wire::GetResult>& results, ReplyHolds& holds);
  // Round 1 by GET or GET+ for the keys of `groups`.
  Status GetRound(std::span<const std::string_view> keys,
                  std::span<const internal::PartitionGroup> groups,
                  std::vector<kv::wire::GetResult>& results, ReplyHolds& holds);
  // Round 1 by GET*: one-sided reads of cached addresses, GET+ for the rest.
  Status ReadRound(std::span<const std::string_view> keys,
                   std::span<const internal::PartitionGroup> groups,
                   std::vector<kv::wire::GetResult>& results, ReplyHolds& holds);
  // GET*'s one-sided part: reads the slots of the keys with a usable cached
  // address into results; returns the indices (ascending) of the keys left
  // for GET+.
  Result<std::vector<size_t>> ReadSlots(std::span<const std::string_view> keys,
                                        std::span<const internal::PartitionGroup> groups,
                                        std::vector<kv::wire::GetResult>& results,
                                        ReplyHolds& holds);
  // GET*'s reads themselves (client_read.cc's SlotReads): each by a copy or
  // a one-sided read; waits up to unreachable_after for those out.
  void IssueSlotReads(const std::shared_ptr<SlotReads>& state);
  // Copies the results of answered GET requests into results[indices] and
  // (GET*) refreshes the address cache; moves the reply bytes into holds.
  void TakeGetResults(std::span<const std::string_view> keys,
                      std::span<const internal::OutgoingRequest> gets, std::span<Call> calls,
                      std::vector<kv::wire::GetResult>& results, ReplyHolds& holds);

  // The PREPARE flag that asks for written slots: set when GET* reads some
  // partition, so the writer's next read of a key it wrote is one-sided.
  uint8_t SlotsFlag() const { return any_one_sided_ ? kv::wire::kFlagReturnSlots : 0; }
  // Caches the addresses an answered PREPARE `req` (built from `writes`) sent
  // back for its items (kFlagReturnSlots), for partitions GET* reads; a key
  // without an address (its version is not the latest) is forgotten. Call it
  // once the write is committed there. A failed call leaves the cache alone.
  void RememberWrittenSlots(std::span<const internal::WriteOp> writes,
                            const internal::OutgoingRequest& req, const Call& call);
  // The same for every request of a committed write.
  void RememberWrittenSlots(std::span<const internal::WriteOp> writes,
                            std::span<const internal::OutgoingRequest> reqs,
                            std::span<const Call> calls);

  // client_batch.cc
 public:
  void RunBatch(std::span<BatchTxn> txns, bool coalesce);
  bool ReadOneSided(BatchTxn& txn);

 private:
  // Whether GET* would read key's cached slot on `partition` by a plain copy
  // (the arena is mapped here and its extent imported on the live
  // connection): a read that waits for nothing.
  bool CopiesSlot(std::string_view key, uint32_t partition);
  // RunBatch's steps (client_batch.cc): the plan (combined read keys, write
  // units), round 1 (GET* and GETs, PREPAREs), round 2 (repairs, COMMITs).
  void PlanBatch(std::span<BatchTxn> txns, BatchRun& run);
  void BatchFirstRound(BatchRun& run);
  void BatchSecondRound(BatchRun& run);
  std::vector<internal::OutgoingRequest> PlanRepairs(BatchRun& run);
  void TakeRepair(BatchRun& run, const internal::OutgoingRequest& req, const Call& call);

 public:
  // COUNT or FLUSH to every partition; the calls answer partition by partition.
  Status ToEveryPartition(kv::wire::MsgType type, std::vector<Call>& calls);
  Result<Client::KeyPage> ScanKeys(uint32_t partition, const kv::wire::ScanRequest& scan);

 private:
  // Imports the arena extents `wanted` names that are not imported yet on
  // their partition's current connection (DESCRIBE over the channel).
  Status ImportExtents(std::span<const internal::ExtentId> wanted);
  // Extent `extent` of `partition`'s arena if it is imported on a live
  // connection.
  const transport::RemoteRegion* LiveExtent(uint32_t partition, uint32_t extent);

  // client_health.cc. A partition is unreachable once it answered nothing for
  // options_.unreachable_after while a phase waited for it, or could not be
  // connected: its connection is dropped, requests for it fail at once, and
  // a TCP connection attempt probes it every kProbeInterval until one is
  // accepted (then it is tried again). Any reply from it counts as an answer.
  using Clock = std::chrono::steady_clock;
  struct Health {
    Clock::time_point last_heard{};
    std::optional<Clock::time_point> unreachable_since;
    std::string why;  // "no reply within 1000 ms, nor ...", the connect error
    std::optional<TcpAddress> address;  // resolved on the first probe
    std::optional<TcpConnectProbe> probe;
    Clock::time_point probe_started{};
    // A probe of a partition that went silent during a phase, and when the
    // last such probe was accepted (up, just slow: left to the timeout).
    std::optional<TcpConnectProbe> silence_probe;
    Clock::time_point silence_probe_started{};
    Clock::time_point up_at{};
  };
  void Heard(uint32_t partition);
  void MarkUnreachable(uint32_t partition, std::string why);
  void MarkReachable(uint32_t partition);
  // kUnavailable naming the partition, why and since when.
  Status UnreachableError(uint32_t partition) const;
  // A probe of the partition's address, or why there is none (it does not
  // resolve).
  Result<TcpConnectProbe> StartProbe(uint32_t partition);
  // Starts, checks and restarts the probes of unreachable partitions.
  void Probe();
  // In Exchange's wait, from `sent` + unreachable_after on: a partition with
  // open calls that answered nothing since `sent` is probed; refused, or no
  // answer to the probe within ProbeGrace(), and it is unreachable (its open
  // calls fail); accepted, and it is up but slow: left to the request
  // timeout. Returns when to look again.
  Clock::time_point CheckSilence(std::span<Call> calls, Clock::time_point sent);
  std::chrono::milliseconds ProbeGrace() const;

  ClientOptions options_;
  kv::Placement placement_;
  std::shared_ptr<TimestampSource> timestamps_;  // maybe shared with other clients
  std::unique_ptr<transport::Fabric> fabric_;
  std::vector<Link> links_;                       // by partition
  std::unordered_map<uint64_t, Call*> inflight_;  // request id -> call in Exchange()
  uint64_t next_request_id_ = 1;                  // 0 is the node's "whole message" id
  internal::AddressCache addresses_;
  Stats stats_;
  std::vector<Health> health_;  // by partition
  uint32_t unreachable_ = 0;
  std::vector<bool> one_sided_;  // by partition: GET* (ReadsSlots)
  bool any_one_sided_ = false;
};

}  // namespace rampart::txn
