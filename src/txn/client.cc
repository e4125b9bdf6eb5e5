// Client: connections, the send-all-then-wait-all exchange, and the three
// isolation modes on top of the pure steps of ramp_logic.h.
//
// Everything runs on the thread that owns the Fabric; handlers and completions
// are called from inside Fabric::Wait()/Progress() in Exchange(), so the state
// below needs no locks.
#include "txn/client.h"

#include <algorithm>
#include <unordered_map>

#include "common/timestamp.h"
#include "txn/ramp_logic.h"

namespace rampart::txn {

namespace wire = kv::wire;
using internal::OutgoingRequest;
using internal::PartitionGroup;
using transport::Endpoint;

std::string_view IsolationName(Isolation isolation) {
  switch (isolation) {
    case Isolation::kRamp: return "ramp";
    case Isolation::kS2pl: return "s2pl";
    case Isolation::kNone: return "none";
  }
  return "unknown";
}

Result<Isolation> ParseIsolation(std::string_view name) {
  if (name == "ramp") return Isolation::kRamp;
  if (name == "s2pl") return Isolation::kS2pl;
  if (name == "none") return Isolation::kNone;
  return InvalidArgument("unknown isolation \"", name, "\" (expected ramp, s2pl or none)");
}

std::string_view GetModeName(GetMode mode) {
  switch (mode) {
    case GetMode::kRpc: return "rpc";
  }
  return "unknown";
}

Result<GetMode> ParseGetMode(std::string_view name) {
  if (name == "rpc") return GetMode::kRpc;
  return InvalidArgument("unknown get mode \"", name, "\" (expected rpc)");
}

// ---------------------------------------------------------------------------

// One request in flight to one partition, and what came back.
struct Call {
  uint32_t partition = 0;
  wire::MsgType type = wire::MsgType::kGet;
  uint64_t request_id = 0;
  size_t expected_results = 0;  // GET / GET_BY_TS: keys asked
  bool done = false;
  Status status;
  // The reply message the results' views point into.
  std::shared_ptr<const std::vector<std::byte>> hold;
  std::vector<wire::GetResult> results;
};

class Client::Impl {
 public:
  Impl(ClientOptions options, kv::Placement placement, std::unique_ptr<TimestampSource> ts,
       std::unique_ptr<transport::Fabric> fabric)
      : options_(std::move(options)),
        placement_(std::move(placement)),
        timestamps_(std::move(ts)),
        fabric_(std::move(fabric)),
        conns_(placement_.partition_count()),
        ever_connected_(placement_.partition_count(), false) {
    fabric_->SetMessageHandler(
        [this](const std::shared_ptr<Endpoint>& ep, std::span<const std::byte> bytes) {
          OnMessage(ep, bytes);
        });
    fabric_->SetDisconnectHandler([this](const std::shared_ptr<Endpoint>& ep, Status why) {
      OnDisconnect(ep, std::move(why));
    });
  }

  ~Impl() {
    inflight_.clear();
    for (auto& ep : conns_) {
      if (ep) ep->Close();
    }
    conns_.clear();
    fabric_.reset();  // completions still queued run now and find nothing in flight
  }

  Status Write(std::span<const internal::WriteOp> writes);
  Result<std::vector<std::optional<std::string>>> Read(const std::vector<std::string>& keys);

  const ClientOptions& options() const { return options_; }
  const kv::Placement& placement() const { return placement_; }
  Stats stats() const { return stats_; }

 private:
  internal::PartitionOf PartitionFn() const {
    return [this](std::string_view key) { return placement_.PartitionOf(key); };
  }
  uint64_t TakeIds(size_t n) {
    uint64_t first = next_request_id_;
    next_request_id_ += n;
    return first;
  }
  std::string Where(uint32_t p) const {
    const kv::PartitionAddress& a = placement_.Address(p);
    return StrCat("partition ", p, " (", a.host, ":", a.port, ")");
  }

  Result<std::shared_ptr<Endpoint>> Connection(uint32_t partition);
  void DropConnection(uint32_t partition);
  int PartitionOfEndpoint(const Endpoint* ep) const;
  void FailPartition(uint32_t partition, const Status& status);
  void OnMessage(const std::shared_ptr<Endpoint>& ep, std::span<const std::byte> bytes);
  void OnDisconnect(const std::shared_ptr<Endpoint>& ep, Status why);
  Status SendRequest(OutgoingRequest& req);

  // Sends every request (one per partition), then waits for all replies or
  // the request timeout. calls[i] answers reqs[i]. Returns the first error in
  // request order (naming its partition), OK when every reply was OK.
  Status Exchange(std::vector<OutgoingRequest>& reqs, std::vector<Call>& calls);

  Status WriteRamp(std::span<const internal::WriteOp> writes,
                   std::span<const PartitionGroup> groups, uint64_t ts);
  Status WriteS2pl(std::span<const internal::WriteOp> writes,
                   std::span<const PartitionGroup> groups, uint64_t ts);
  // Round 1 (+ round 2 under ramp): results[i] for keys[i]; `calls` keeps the
  // reply bytes the results view alive.
  Status ReadVersions(std::span<const std::string_view> keys,
                      std::span<const PartitionGroup> groups, bool repair,
                      std::vector<wire::GetResult>& results, std::vector<Call>& calls);
  // S2PL: LOCK partition after partition in ascending order. Appends every
  // partition a LOCK was sent to (granted or not) to *touched.
  Status LockAll(std::span<const std::string_view> keys, std::span<const PartitionGroup> groups,
                 kv::LockMode mode, uint64_t txn, std::vector<uint32_t>* touched);
  void UnlockAll(std::span<const uint32_t> partitions, uint64_t txn);

  ClientOptions options_;
  kv::Placement placement_;
  std::unique_ptr<TimestampSource> timestamps_;
  std::unique_ptr<transport::Fabric> fabric_;
  std::vector<std::shared_ptr<Endpoint>> conns_;  // by partition; null = not open
  std::vector<bool> ever_connected_;
  std::unordered_map<uint64_t, Call*> inflight_;  // request id -> call in Exchange()
  uint64_t next_request_id_ = 1;                  // 0 is the node's "whole message" id
  Stats stats_;
};

// ---------------------------------------------------------------------------
// Connections and replies

Result<std::shared_ptr<Endpoint>> Client::Impl::Connection(uint32_t partition) {
  std::shared_ptr<Endpoint>& ep = conns_[partition];
  if (ep && ep->connected()) return ep;
  if (ep) DropConnection(partition);
  const kv::PartitionAddress& a = placement_.Address(partition);
  auto connected = fabric_->Connect(a.host, a.port);
  if (!connected.ok()) {
    return connected.status().WithContext(StrCat(Where(partition), ": connect"));
  }
  if (ever_connected_[partition]) ++stats_.reconnects;
  ever_connected_[partition] = true;
  conns_[partition] = std::move(*connected);
  return conns_[partition];
}

void Client::Impl::DropConnection(uint32_t partition) {
  if (conns_[partition]) {
    conns_[partition]->Close();
    conns_[partition].reset();
  }
}

int Client::Impl::PartitionOfEndpoint(const Endpoint* ep) const {
  for (size_t p = 0; p < conns_.size(); ++p) {
    if (conns_[p].get() == ep) return static_cast<int>(p);
  }
  return -1;
}

void Client::Impl::FailPartition(uint32_t partition, const Status& status) {
  for (auto& [id, call] : inflight_) {
    if (call->partition == partition && !call->done) {
      call->done = true;
      call->status = status;
    }
  }
}

void Client::Impl::OnDisconnect(const std::shared_ptr<Endpoint>& ep, Status why) {
  int p = PartitionOfEndpoint(ep.get());
  if (p < 0) return;  // an endpoint we already dropped
  conns_[p].reset();
  FailPartition(static_cast<uint32_t>(p),
                Unavailable(Where(p), ": connection lost: ", why.ToString()));
}

void Client::Impl::OnMessage(const std::shared_ptr<Endpoint>& ep,
                             std::span<const std::byte> bytes) {
  int p = PartitionOfEndpoint(ep.get());
  // Results are views into the message: keep one copy of it for them.
  auto hold = std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end());
  auto replies = wire::DecodeReplies(*hold, options_.limits);
  if (!replies.ok()) {
    if (p >= 0) {
      FailPartition(p, replies.status().WithContext(StrCat(Where(p), ": bad reply")));
      DropConnection(p);
    }
    return;
  }
  for (const wire::Reply& reply : *replies) {
    if (reply.header.request_id == 0 && !reply.ok()) {
      // The node could not frame our message; it closes the connection.
      if (p >= 0) FailPartition(p, reply.ToStatus().WithContext(Where(p)));
      continue;
    }
    auto it = inflight_.find(reply.header.request_id);
    if (it == inflight_.end() || it->second->done) continue;  // late (timed out)
    Call& call = *it->second;
    call.done = true;
    std::string context = StrCat(wire::MsgTypeName(call.type), " on ", Where(call.partition));
    if (reply.header.partition != call.partition ||
        reply.header.type != static_cast<uint8_t>(call.type)) {
      call.status = Corruption(context, ": reply for partition ", reply.header.partition,
                               " type ", static_cast<int>(reply.header.type),
                               " does not match the request");
      continue;
    }
    if (!reply.ok()) {
      call.status = reply.ToStatus().WithContext(context);
      continue;
    }
    if (call.type == wire::MsgType::kGet || call.type == wire::MsgType::kGetByTs) {
      if (reply.results.size() != call.expected_results) {
        call.status = Corruption(context, ": ", reply.results.size(), " results for ",
                                 call.expected_results, " keys");
        continue;
      }
      call.results = reply.results;
      call.hold = hold;
    }
    call.status = Status::Ok();
  }
}

Status Client::Impl::SendRequest(OutgoingRequest& req) {
  RAMPART_ASSIGN_OR_RETURN(std::shared_ptr<Endpoint> ep, Connection(req.partition));
  // The bytes must live until the send completes, which may be after the
  // call gave up on the reply: the completion owns them.
  struct Outgoing {
    std::vector<std::byte> bytes;
    transport::IoSlice slice;
  };
  auto out = std::make_shared<Outgoing>();
  out->bytes = std::move(req.message);
  out->slice = transport::IoSlice{out->bytes.data(), out->bytes.size()};
  uint64_t id = req.request_id;
  uint32_t partition = req.partition;
  Status sent = ep->Send(std::span<const transport::IoSlice>(&out->slice, 1),
                         [this, out, id, partition](Status s) {
                           if (s.ok()) return;
                           auto it = inflight_.find(id);
                           if (it == inflight_.end() || it->second->done) return;
                           it->second->done = true;
                           it->second->status =
                               Unavailable(Where(partition), ": send failed: ", s.ToString());
                         });
  if (!sent.ok()) {
    if (!ep->connected()) DropConnection(partition);
    return sent.WithContext(StrCat(Where(partition), ": send"));
  }
  return Status::Ok();
}

Status Client::Impl::Exchange(std::vector<OutgoingRequest>& reqs, std::vector<Call>& calls) {
  calls.assign(reqs.size(), Call());  // no reallocation below: inflight_ points in
  for (size_t i = 0; i < reqs.size(); ++i) {
    Call& c = calls[i];
    c.partition = reqs[i].partition;
    c.type = reqs[i].type;
    c.request_id = reqs[i].request_id;
    c.expected_results = reqs[i].indices.size();
    inflight_[c.request_id] = &c;
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    Status s = SendRequest(reqs[i]);
    if (!s.ok()) {
      calls[i].done = true;
      calls[i].status = s;
    }
  }
  auto deadline = std::chrono::steady_clock::now() + options_.request_timeout;
  auto pending = [&] {
    return std::any_of(calls.begin(), calls.end(), [](const Call& c) { return !c.done; });
  };
  while (pending()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      for (Call& c : calls) {
        if (c.done) continue;
        c.done = true;
        c.status = TimedOut(wire::MsgTypeName(c.type), " on ", Where(c.partition),
                            ": no reply within ", options_.request_timeout.count(), " ms");
        // A hung node: start over with a fresh connection next time (the node
        // drops our queued LOCKs when the connection closes).
        DropConnection(c.partition);
      }
      break;
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    fabric_->Wait(left);
  }
  for (const Call& c : calls) inflight_.erase(c.request_id);

  Status first;
  size_t failed = 0;
  for (const Call& c : calls) {
    if (c.status.ok()) continue;
    if (failed++ == 0) first = c.status;
  }
  if (failed > 1) {
    return Status(first.code(), StrCat(first.message(), " (and ", failed - 1,
                                       " more partitions failed)"));
  }
  return first;
}

// ---------------------------------------------------------------------------
// Writes

Status Client::Impl::Write(std::span<const internal::WriteOp> writes) {
  if (writes.empty()) return Status::Ok();
  std::vector<std::string_view> keys;
  keys.reserve(writes.size());
  for (const auto& w : writes) keys.push_back(w.key);
  {
    std::vector<std::string_view> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      return InvalidArgument("MultiPut: key \"", *dup, "\" appears more than once");
    }
  }
  std::vector<PartitionGroup> groups = internal::GroupByPartition(keys, PartitionFn());
  uint64_t ts = timestamps_->Next();
  ++stats_.transactions;
  switch (options_.isolation) {
    case Isolation::kRamp:
      return WriteRamp(writes, groups, ts);
    case Isolation::kS2pl:
      return WriteS2pl(writes, groups, ts);
    case Isolation::kNone: {
      auto reqs = internal::BuildPrepareRequests(writes, groups, ts, wire::kFlagCommitNow,
                                                 TakeIds(groups.size()));
      std::vector<Call> calls;
      return Exchange(reqs, calls);
    }
  }
  return InternalError("unknown isolation");
}

Status Client::Impl::WriteRamp(std::span<const internal::WriteOp> writes,
                               std::span<const PartitionGroup> groups, uint64_t ts) {
  // A write set on one partition is applied there in one step (the node runs
  // a message atomically), so PREPARE+COMMIT collapse into PREPARE(commit now).
  bool single = groups.size() == 1;
  auto prepares = internal::BuildPrepareRequests(
      writes, groups, ts, single ? wire::kFlagCommitNow : 0, TakeIds(groups.size()));
  std::vector<Call> calls;
  // Not every partition prepared: never commit; the prepared versions are
  // reclaimed by the nodes' prepared_timeout.
  RAMPART_RETURN_IF_ERROR(Exchange(prepares, calls));
  if (single) return Status::Ok();
  using StopWrite = ClientOptions::StopWrite;
  if (options_.stop_write == StopWrite::kAfterPrepare) {
    return Aborted("fault injection: stopped after PREPARE");
  }
  auto commits = internal::BuildCommitRequests(groups, ts, TakeIds(groups.size()));
  if (options_.stop_write == StopWrite::kAfterFirstCommit) {
    commits.resize(1);
    RAMPART_RETURN_IF_ERROR(Exchange(commits, calls));
    return Aborted("fault injection: stopped after COMMIT on partition ", commits[0].partition);
  }
  // A failure here leaves the transaction committed on some partitions:
  // readers repair the rest by timestamp (docs/transactions.md).
  return Exchange(commits, calls);
}

Status Client::Impl::WriteS2pl(std::span<const internal::WriteOp> writes,
                               std::span<const PartitionGroup> groups, uint64_t ts) {
  std::vector<std::string_view> keys;
  for (const auto& w : writes) keys.push_back(w.key);
  std::vector<uint32_t> touched;
  Status s = LockAll(keys, groups, kv::LockMode::kExclusive, ts, &touched);
  if (s.ok()) {
    auto reqs = internal::BuildPrepareRequests(writes, groups, ts, wire::kFlagCommitNow,
                                               TakeIds(groups.size()));
    std::vector<Call> calls;
    s = Exchange(reqs, calls);
  }
  UnlockAll(touched, ts);
  return s;
}

Status Client::Impl::LockAll(std::span<const std::string_view> keys,
                             std::span<const PartitionGroup> groups, kv::LockMode mode,
                             uint64_t txn, std::vector<uint32_t>* touched) {
  // Global order (partition, key): one partition after the other, so no two
  // transactions wait for each other in a cycle. Costs a round trip per
  // partition, which is the price of the baseline.
  for (const PartitionGroup& g : groups) {
    std::vector<OutgoingRequest> reqs;
    reqs.push_back(internal::BuildLockRequest(keys, g, mode, txn, TakeIds(1)));
    touched->push_back(g.partition);
    std::vector<Call> calls;
    RAMPART_RETURN_IF_ERROR(Exchange(reqs, calls));
  }
  return Status::Ok();
}

void Client::Impl::UnlockAll(std::span<const uint32_t> partitions, uint64_t txn) {
  if (partitions.empty()) return;
  auto reqs = internal::BuildUnlockRequests(partitions, txn, TakeIds(partitions.size()));
  std::vector<Call> calls;
  // Best effort: the transaction's outcome is already decided. Locks an
  // UNLOCK did not reach are broken by the node's lock_timeout.
  (void)Exchange(reqs, calls);
}

// ---------------------------------------------------------------------------
// Reads

Status Client::Impl::ReadVersions(std::span<const std::string_view> keys,
                                  std::span<const PartitionGroup> groups, bool repair,
                                  std::vector<wire::GetResult>& results,
                                  std::vector<Call>& calls) {
  results.assign(keys.size(), wire::GetResult());
  auto gets = internal::BuildGetRequests(keys, groups, TakeIds(groups.size()));
  std::vector<Call> round1;
  RAMPART_RETURN_IF_ERROR(Exchange(gets, round1));
  for (size_t r = 0; r < gets.size(); ++r) {
    for (size_t j = 0; j < gets[r].indices.size(); ++j) {
      results[gets[r].indices[j]] = round1[r].results[j];
    }
  }
  calls = std::move(round1);  // moving the vector keeps the held reply bytes
  if (!repair) return Status::Ok();

  std::vector<uint64_t> need = internal::ComputeRepairTimestamps(keys, results);
  auto by_ts = internal::BuildRepairRequests(keys, need, groups, next_request_id_);
  if (by_ts.empty()) return Status::Ok();
  TakeIds(by_ts.size());
  ++stats_.repair_rounds;
  std::vector<Call> round2;
  RAMPART_RETURN_IF_ERROR(Exchange(by_ts, round2));
  for (size_t r = 0; r < by_ts.size(); ++r) {
    for (size_t j = 0; j < by_ts[r].indices.size(); ++j) {
      size_t i = by_ts[r].indices[j];
      const wire::GetResult& got = round2[r].results[j];
      if (!got.found) {
        // Only GC removes a version a sibling names (the writer prepared
        // every partition before committing any): the read took longer than
        // the grace period. The caller may retry.
        return Aborted("key \"", keys[i], "\" at ts ", need[i], " on ",
                       Where(by_ts[r].partition),
                       " is gone (reclaimed before the repair read); retry the read");
      }
      results[i] = got;
      ++stats_.repaired_keys;
    }
  }
  for (Call& c : round2) calls.push_back(std::move(c));
  return Status::Ok();
}

Result<std::vector<std::optional<std::string>>> Client::Impl::Read(
    const std::vector<std::string>& keys) {
  std::vector<std::optional<std::string>> out(keys.size());
  if (keys.empty()) return out;
  internal::DistinctKeys distinct = internal::Deduplicate(keys);
  std::vector<PartitionGroup> groups = internal::GroupByPartition(distinct.keys, PartitionFn());
  ++stats_.transactions;

  std::vector<wire::GetResult> results;
  std::vector<Call> calls;  // owns the reply bytes `results` views
  Status s;
  switch (options_.isolation) {
    case Isolation::kRamp:
      s = ReadVersions(distinct.keys, groups, /*repair=*/true, results, calls);
      break;
    case Isolation::kNone:
      s = ReadVersions(distinct.keys, groups, /*repair=*/false, results, calls);
      break;
    case Isolation::kS2pl: {
      uint64_t txn = timestamps_->Next();
      std::vector<uint32_t> touched;
      s = LockAll(distinct.keys, groups, kv::LockMode::kShared, txn, &touched);
      if (s.ok()) s = ReadVersions(distinct.keys, groups, /*repair=*/false, results, calls);
      UnlockAll(touched, txn);
      break;
    }
  }
  RAMPART_RETURN_IF_ERROR(s);
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i] = internal::VisibleValue(results[distinct.position[i]]);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Client

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  RAMPART_ASSIGN_OR_RETURN(auto timestamps, TimestampSource::Create(options.client_id));
  kv::Placement placement;
  if (options.placement.has_value()) {
    placement = *options.placement;
  } else {
    if (options.nodes.empty()) {
      return InvalidArgument("client options: no nodes and no placement");
    }
    RAMPART_ASSIGN_OR_RETURN(placement,
                             kv::Placement::Create(options.nodes, options.partitions_per_node));
  }
  if (placement.partition_count() == 0) {
    return InvalidArgument("client options: the placement has no partitions");
  }
  if (placement.partition_count() > 65536) {
    return InvalidArgument("client options: ", placement.partition_count(),
                           " partitions; the wire protocol addresses at most 65536");
  }
  if (options.request_timeout.count() <= 0) {
    return InvalidArgument("client options: request_timeout must be positive");
  }
  RAMPART_ASSIGN_OR_RETURN(auto fabric, transport::Fabric::Create(options.fabric));
  return std::unique_ptr<Client>(new Client(std::make_unique<Impl>(
      options, std::move(placement), std::move(timestamps), std::move(fabric))));
}

Status Client::MultiPut(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<internal::WriteOp> writes;
  writes.reserve(pairs.size());
  for (const auto& [k, v] : pairs) writes.push_back(internal::WriteOp{k, v, false});
  return impl_->Write(writes);
}

Result<std::vector<std::optional<std::string>>> Client::MultiGet(
    const std::vector<std::string>& keys) {
  return impl_->Read(keys);
}

Status Client::Put(std::string_view key, std::string_view value) {
  internal::WriteOp w{key, value, false};
  return impl_->Write(std::span<const internal::WriteOp>(&w, 1));
}

Result<std::optional<std::string>> Client::Get(std::string_view key) {
  std::vector<std::string> keys{std::string(key)};
  RAMPART_ASSIGN_OR_RETURN(auto values, impl_->Read(keys));
  return std::move(values[0]);
}

Status Client::Del(std::string_view key) {
  internal::WriteOp w{key, {}, true};
  return impl_->Write(std::span<const internal::WriteOp>(&w, 1));
}

const ClientOptions& Client::options() const { return impl_->options(); }
const kv::Placement& Client::placement() const { return impl_->placement(); }
Client::Stats Client::stats() const { return impl_->stats(); }

}  // namespace rampart::txn
