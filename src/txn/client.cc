// Client: connections, the send-all-then-wait-all exchange, and writes under
// the three isolation modes on top of the pure steps of ramp_logic.h. Reads
// are in client_read.cc; the shared state in client_impl.h.
#include "txn/client.h"

#include <algorithm>
#include <map>

#include "common/local_host.h"
#include "txn/client_impl.h"

namespace rampart::txn {

namespace wire = kv::wire;
using internal::OutgoingRequest;
using internal::PartitionGroup;
using transport::Endpoint;

namespace {

// The names of an enum's values, for the Name/Parse pairs below.
template <typename E, size_t N>
using NameTable = std::pair<E, std::string_view>[N];

template <typename E, size_t N>
std::string_view NameOf(E value, const NameTable<E, N>& table) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

// InvalidArgument: unknown <what> "x" (expected a, b or c)
template <typename E, size_t N>
Result<E> ParseName(std::string_view name, const NameTable<E, N>& table, std::string_view what) {
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    if (table[i].second == name) return table[i].first;
    expected += StrCat(i == 0 ? "" : i + 1 == N ? " or " : ", ", table[i].second);
  }
  return InvalidArgument("unknown ", what, " \"", name, "\" (expected ", expected, ")");
}

constexpr NameTable<Isolation, 3> kIsolationNames = {
    {Isolation::kRamp, "ramp"}, {Isolation::kS2pl, "s2pl"}, {Isolation::kNone, "none"}};
constexpr NameTable<GetMode, 4> kGetModeNames = {
    {GetMode::kRpc, "rpc"}, {GetMode::kRing, "ring"}, {GetMode::kRead, "read"},
    {GetMode::kAuto, "auto"}};
constexpr NameTable<PutMode, 2> kPutModeNames = {{PutMode::kRpc, "rpc"}, {PutMode::kRing, "ring"}};

}  // namespace

std::string_view IsolationName(Isolation isolation) { return NameOf(isolation, kIsolationNames); }
Result<Isolation> ParseIsolation(std::string_view name) {
  return ParseName(name, kIsolationNames, "isolation");
}
std::string_view GetModeName(GetMode mode) { return NameOf(mode, kGetModeNames); }
Result<GetMode> ParseGetMode(std::string_view name) {
  return ParseName(name, kGetModeNames, "get mode");
}
std::string_view PutModeName(PutMode mode) { return NameOf(mode, kPutModeNames); }
Result<PutMode> ParsePutMode(std::string_view name) {
  return ParseName(name, kPutModeNames, "put mode");
}

Client::Stats& Client::Stats::operator+=(const Stats& o) {
  transactions += o.transactions;
  repair_rounds += o.repair_rounds;
  repaired_keys += o.repaired_keys;
  reconnects += o.reconnects;
  unreachable += o.unreachable;
  slot_reads += o.slot_reads;
  slot_rejects += o.slot_rejects;
  cache_misses += o.cache_misses;
  return *this;
}

double Client::Stats::slot_fallback_rate() const {
  const uint64_t keys = slot_reads + slot_rejects + cache_misses;
  return keys == 0 ? 0.0 : static_cast<double>(slot_rejects + cache_misses) / keys;
}

// ---------------------------------------------------------------------------

Client::Impl::Impl(ClientOptions options, kv::Placement placement,
                   std::shared_ptr<TimestampSource> ts, std::unique_ptr<transport::Fabric> fabric)
    : options_(std::move(options)),
      placement_(std::move(placement)),
      timestamps_(std::move(ts)),
      fabric_(std::move(fabric)),
      links_(placement_.partition_count()),
      addresses_(std::max<size_t>(options_.address_cache_entries, 1)),
      health_(placement_.partition_count()),
      one_sided_(placement_.partition_count(), false) {
  const bool auto_local = options_.get_mode == GetMode::kAuto &&
                          fabric_->backend() == transport::Backend::kUcx;
  std::map<std::string, bool, std::less<>> local;  // by host: IsLocalHost, resolved once
  for (uint32_t p = 0; p < one_sided_.size(); ++p) {
    bool on_this_host = false;
    if (auto_local) {
      const std::string& host = placement_.Address(p).host;
      auto it = local.find(host);
      if (it == local.end()) it = local.emplace(host, IsLocalHost(host)).first;
      on_this_host = it->second;
    }
    one_sided_[p] = options_.get_mode == GetMode::kRead || on_this_host;
    any_one_sided_ = any_one_sided_ || one_sided_[p];
  }
  fabric_->SetMessageHandler(
      [this](const std::shared_ptr<Endpoint>& ep, std::span<const std::byte> bytes) {
        int p = PartitionOfEndpoint(ep.get());
        if (p >= 0) OnReply(static_cast<uint32_t>(p), bytes);
      });
  fabric_->SetDisconnectHandler([this](const std::shared_ptr<Endpoint>& ep, Status why) {
    OnDisconnect(ep, std::move(why));
  });
}

Client::Impl::~Impl() {
  inflight_.clear();
  for (uint32_t p = 0; p < links_.size(); ++p) DropConnection(p);
  links_.clear();
  fabric_.reset();  // completions still queued run now and find nothing in flight
}

std::string Client::Impl::Where(uint32_t p) const {
  const kv::PartitionAddress& a = placement_.Address(p);
  return StrCat("partition ", p, " (", a.host, ":", a.port, ")");
}

// ---------------------------------------------------------------------------
// Connections and replies

Result<Client::Impl::Link*> Client::Impl::Connection(uint32_t partition) {
  Link& link = links_[partition];
  if (link.endpoint && link.endpoint->connected() &&
      (!NeedsChannel(partition) || (link.channel && link.channel->connected()))) {
    return &link;
  }
  if (link.endpoint) DropConnection(partition);
  const kv::PartitionAddress& a = placement_.Address(partition);
  // Bounded by unreachable_after: a host that is cut off makes connect()
  // wait for its whole timeout, and everything else of the caller with it.
  auto connected = fabric_->Connect(
      a.host, a.port, std::min(options_.fabric.connect_timeout, options_.unreachable_after));
  if (!connected.ok()) {
    return connected.status().WithContext(StrCat(Where(partition), ": connect"));
  }
  if (link.ever_connected) ++stats_.reconnects;
  link.ever_connected = true;
  link.endpoint = std::move(*connected);
  if (NeedsChannel(partition)) {
    auto channel = fabric_->OpenChannel(link.endpoint, options_.channel);
    if (!channel.ok()) {
      DropConnection(partition);
      return channel.status().WithContext(StrCat(Where(partition), ": opening the message channel"));
    }
    link.channel = std::move(*channel);
    link.channel->SetMessageHandler(
        [this, partition](std::span<const std::byte> bytes) { OnReply(partition, bytes); });
  }
  return &link;
}

void Client::Impl::DropConnection(uint32_t partition) {
  Link& link = links_[partition];
  if (link.channel) {
    link.channel->SetMessageHandler([](std::span<const std::byte>) {});
    link.channel.reset();
  }
  link.extents.clear();
  if (link.endpoint) {
    link.endpoint->Close();
    link.endpoint.reset();
  }
  ++link.epoch;  // every cached address of this partition is dead now
}

int Client::Impl::PartitionOfEndpoint(const Endpoint* ep) const {
  for (size_t p = 0; p < links_.size(); ++p) {
    if (links_[p].endpoint.get() == ep) return static_cast<int>(p);
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
  DropConnection(static_cast<uint32_t>(p));
  FailPartition(static_cast<uint32_t>(p),
                Unavailable(Where(p), ": connection lost: ", why.ToString()));
}

void Client::Impl::OnReply(uint32_t p, std::span<const std::byte> bytes) {
  // Results are views into the message: keep one copy of it for them.
  auto hold = std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end());
  auto replies = wire::DecodeReplies(*hold, options_.limits);
  if (!replies.ok()) {
    FailPartition(p, replies.status().WithContext(StrCat(Where(p), ": bad reply")));
    DropConnection(p);
    return;
  }
  Heard(p);
  for (const wire::Reply& reply : *replies) {
    if (reply.header.request_id == 0 && !reply.ok()) {
      // The node could not frame our message; it closes the connection.
      FailPartition(p, reply.ToStatus().WithContext(Where(p)));
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
    } else if (call.type == wire::MsgType::kPrepare) {
      call.slots = reply.slots;
    } else if (call.type == wire::MsgType::kDescribe) {
      call.arena = reply.arena;
      call.hold = hold;
    } else if (call.type == wire::MsgType::kCount) {
      call.count = reply.count;
    } else if (call.type == wire::MsgType::kStats) {
      call.stats = reply.stats;
    } else if (call.type == wire::MsgType::kScan) {
      call.scan = reply.scan;
      call.hold = hold;
    }
    call.status = Status::Ok();
  }
}

void Client::Impl::SendMessage(uint32_t partition, std::vector<std::byte> message, Route route,
                               std::span<Call* const> calls) {
  auto fail = [&](const Status& s) {
    for (Call* c : calls) {
      c->done = true;
      c->status = s;
    }
  };
  if (health_[partition].unreachable_since) return fail(UnreachableError(partition));
  auto link = Connection(partition);
  if (!link.ok()) {
    // A host cut off (a timeout) or a node that is down (refused): trying
    // again on every request would hold up the caller or flood both logs;
    // the probe finds it again. Other failures (a refused handshake, no
    // memory) are reported as they are.
    const StatusCode code = link.status().code();
    if (code == StatusCode::kTimedOut || code == StatusCode::kUnavailable) {
      MarkUnreachable(partition, std::string(link.status().message()));
      return fail(UnreachableError(partition));
    }
    return fail(link.status());
  }
  for (Call* c : calls) c->epoch = (*link)->epoch;
  if (route == Route::kRing) {
    // The channel copies the bytes (into the peer's ring or its backlog).
    transport::IoSlice slice{message.data(), message.size()};
    Status sent = (*link)->channel->Send(std::span<const transport::IoSlice>(&slice, 1));
    if (!sent.ok()) {
      DropConnection(partition);
      fail(sent.WithContext(StrCat(Where(partition), ": send on the channel")));
    }
    return;
  }
  // The bytes must live until the send completes, which may be after the
  // calls gave up on their replies: the completion owns them.
  struct Outgoing {
    std::vector<std::byte> bytes;
    transport::IoSlice slice;
    std::vector<uint64_t> ids;
  };
  auto out = std::make_shared<Outgoing>();
  out->bytes = std::move(message);
  out->slice = transport::IoSlice{out->bytes.data(), out->bytes.size()};
  for (Call* c : calls) out->ids.push_back(c->request_id);
  Status sent = (*link)->endpoint->Send(
      std::span<const transport::IoSlice>(&out->slice, 1), [this, out, partition](Status s) {
        if (s.ok()) return;
        for (uint64_t id : out->ids) {
          auto it = inflight_.find(id);
          if (it == inflight_.end() || it->second->done) continue;
          it->second->done = true;
          it->second->status = Unavailable(Where(partition), ": send failed: ", s.ToString());
        }
      });
  if (!sent.ok()) {
    if (!(*link)->endpoint->connected()) DropConnection(partition);
    fail(sent.WithContext(StrCat(Where(partition), ": send")));
  }
}

std::vector<Route> Client::Impl::ReadRoutes(std::span<const OutgoingRequest> reqs) const {
  std::vector<Route> routes;
  routes.reserve(reqs.size());
  for (const OutgoingRequest& r : reqs) routes.push_back(ReadRoute(r.partition));
  return routes;
}

Status Client::Impl::Exchange(std::vector<OutgoingRequest>& reqs, std::vector<Call>& calls,
                              Route route) {
  std::vector<Route> routes(reqs.size(), route);
  return Exchange(reqs, calls, routes, /*coalesce=*/false);
}

Status Client::Impl::Exchange(std::vector<OutgoingRequest>& reqs, std::vector<Call>& calls,
                              std::span<const Route> routes, bool coalesce) {
  // Learn about connections that failed while this client was idle (a node
  // that died and came back): their requests then go to a new connection
  // instead of failing on the dead one.
  for (int i = 0; i < 16 && fabric_->Progress() > 0; ++i) {
  }
  if (unreachable_ > 0) Probe();
  calls.assign(reqs.size(), Call());  // no reallocation below: inflight_ points in
  for (size_t i = 0; i < reqs.size(); ++i) {
    Call& c = calls[i];
    c.partition = reqs[i].partition;
    c.type = reqs[i].type;
    c.request_id = reqs[i].request_id;
    c.expected_results = reqs[i].indices.size();
    inflight_[c.request_id] = &c;
  }
  SendAll(reqs, calls, routes, coalesce);
  AwaitCalls(calls);
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

void Client::Impl::SendAll(std::vector<OutgoingRequest>& reqs, std::vector<Call>& calls,
                           std::span<const Route> routes, bool coalesce) {
  if (!coalesce) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      Call* call = &calls[i];
      SendMessage(reqs[i].partition, std::move(reqs[i].message), routes[i],
                  std::span<Call* const>(&call, 1));
    }
    return;
  }
  // One message per (partition, route), cut where the node's limits would
  // refuse it (half the message bound leaves room for the replies).
  struct Pending {
    std::vector<std::byte> message;
    std::vector<Call*> calls;
  };
  std::map<std::pair<uint32_t, Route>, Pending> by_target;
  auto flush = [&](const std::pair<uint32_t, Route>& target, Pending& p) {
    if (p.calls.empty()) return;
    SendMessage(target.first, std::move(p.message), target.second, p.calls);
    p = Pending();
  };
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto target = std::make_pair(reqs[i].partition, routes[i]);
    Pending& p = by_target[target];
    if (!p.calls.empty() &&
        (p.calls.size() >= options_.limits.max_requests_per_message ||
         p.message.size() + reqs[i].message.size() > options_.limits.max_message_bytes / 2)) {
      flush(target, p);
    }
    internal::AppendMessage(&p.message, reqs[i].message);
    p.calls.push_back(&calls[i]);
  }
  for (auto& [target, p] : by_target) flush(target, p);
}

void Client::Impl::AwaitCalls(std::span<Call> calls) {
  const auto sent = Clock::now();
  const auto deadline = sent + options_.request_timeout;
  auto look_for_silence = sent + options_.unreachable_after;
  // Calls complete in any order; the scan resumes where it stopped, so a
  // batch of n calls costs O(n) checks in all, not O(n) per wake-up.
  size_t first_open = 0;
  auto pending = [&] {
    while (first_open < calls.size() && calls[first_open].done) ++first_open;
    return first_open < calls.size();
  };
  while (pending()) {
    auto now = Clock::now();
    if (now >= look_for_silence) {
      look_for_silence = CheckSilence(calls, sent);
      continue;
    }
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
      return;
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(std::min(deadline, look_for_silence) - now);
    fabric_->Wait(left);
  }
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
      auto reqs = internal::BuildPrepareRequests(writes, groups, ts,
                                                 wire::kFlagCommitNow | SlotsFlag(),
                                                 TakeIds(groups.size()));
      std::vector<Call> calls;
      RAMPART_RETURN_IF_ERROR(Exchange(reqs, calls, WriteRoute()));
      RememberWrittenSlots(writes, reqs, calls);
      return Status::Ok();
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
      writes, groups, ts, (single ? wire::kFlagCommitNow : 0) | SlotsFlag(),
      TakeIds(groups.size()));
  std::vector<Call> calls;
  // Not every partition prepared: never commit; the prepared versions are
  // reclaimed by the nodes' prepared_timeout.
  RAMPART_RETURN_IF_ERROR(Exchange(prepares, calls, WriteRoute()));
  const std::vector<Call> prepared = std::move(calls);
  if (single) {
    RememberWrittenSlots(writes, prepares, prepared);
    return Status::Ok();
  }
  using StopWrite = ClientOptions::StopWrite;
  if (options_.stop_write == StopWrite::kAfterPrepare) {
    return Aborted("fault injection: stopped after PREPARE");
  }
  auto commits = internal::BuildCommitRequests(groups, ts, TakeIds(groups.size()));
  if (options_.stop_write == StopWrite::kAfterFirstCommit) {
    commits.resize(1);
    RAMPART_RETURN_IF_ERROR(Exchange(commits, calls, WriteRoute()));
    return Aborted("fault injection: stopped after COMMIT on partition ", commits[0].partition);
  }
  // A failure here leaves the transaction committed on some partitions:
  // readers repair the rest by timestamp (docs/transactions.md).
  RAMPART_RETURN_IF_ERROR(Exchange(commits, calls, WriteRoute()));
  RememberWrittenSlots(writes, prepares, prepared);
  return Status::Ok();
}

Status Client::Impl::WriteS2pl(std::span<const internal::WriteOp> writes,
                               std::span<const PartitionGroup> groups, uint64_t ts) {
  std::vector<std::string_view> keys;
  for (const auto& w : writes) keys.push_back(w.key);
  std::vector<uint32_t> touched;
  Status s = LockAll(keys, groups, kv::LockMode::kExclusive, ts, &touched);
  if (s.ok()) {
    auto reqs = internal::BuildPrepareRequests(writes, groups, ts,
                                               wire::kFlagCommitNow | SlotsFlag(),
                                               TakeIds(groups.size()));
    std::vector<Call> calls;
    s = Exchange(reqs, calls, WriteRoute());
    if (s.ok()) RememberWrittenSlots(writes, reqs, calls);
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
    RAMPART_RETURN_IF_ERROR(Exchange(reqs, calls, WriteRoute()));
  }
  return Status::Ok();
}

void Client::Impl::UnlockAll(std::span<const uint32_t> partitions, uint64_t txn) {
  if (partitions.empty()) return;
  auto reqs = internal::BuildUnlockRequests(partitions, txn, TakeIds(partitions.size()));
  std::vector<Call> calls;
  // Best effort: the transaction's outcome is already decided. Locks an
  // UNLOCK did not reach are broken by the node's lock_timeout.
  (void)Exchange(reqs, calls, WriteRoute());
}

// ---------------------------------------------------------------------------
// Client

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  std::shared_ptr<TimestampSource> timestamps = options.timestamps;
  if (timestamps == nullptr) {
    RAMPART_ASSIGN_OR_RETURN(timestamps, TimestampSource::Create(options.client_id));
  }
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
  if (options.fabric.backend != transport::Backend::kUcx) {
    if (GetModeNeedsUcx(options.get_mode)) {
      return InvalidArgument("client options: get mode ", GetModeName(options.get_mode),
                             " needs the ucx transport (tcp has no one-sided operations); "
                             "use get mode rpc");
    }
    if (options.put_mode != PutMode::kRpc) {
      return InvalidArgument("client options: put mode ", PutModeName(options.put_mode),
                             " needs the ucx transport (tcp has no one-sided operations); "
                             "use put mode rpc");
    }
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

bool Client::MayExist(std::string_view key, uint32_t partition) const {
  return impl_->MayExist(key, partition);
}
Client::Stats Client::stats() const { return impl_->stats(); }

}  // namespace rampart::txn
