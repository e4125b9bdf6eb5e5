#include "kv/partition_thread.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <optional>

#include "common/progress.h"
#include "common/size.h"

namespace rampart::kv::internal {
namespace {

using namespace std::chrono_literals;
constexpr auto kTickEvery = 100ms;
// How long a stopping thread waits for its last replies to be sent.
constexpr auto kDrainTimeout = 1s;
// Recoveries of less than this replay silently; longer ones draw progress.
constexpr uint64_t kProgressFromBytes = uint64_t{32} << 20;

// A reply on its way: the bytes and the slice that names them stay alive
// until the send completes.
struct PendingSend {
  std::vector<std::byte> bytes;
  transport::IoSlice slice{};
};

// A partition's arena extents as registered memory of its thread's fabric:
// the first allocated at start-up, more whenever the arena grows. DESCRIBE
// answers from here. Outlives the executor and goes before the fabric.
class RegisteredExtents : public ExtentSource {
 public:
  explicit RegisteredExtents(transport::Fabric& fabric) : fabric_(fabric) {}

  Result<std::span<std::byte>> NewExtent(uint64_t bytes) override {
    RAMPART_ASSIGN_OR_RETURN(transport::MemoryRegion region, fabric_.Allocate(bytes));
    std::span<std::byte> memory(region.data(), bytes);
    regions_.push_back(std::move(region));
    descriptors_.emplace_back();
    return memory;
  }

  // Extent `index`'s descriptor, made once. REQUIRES: index < extents made.
  Result<std::vector<std::byte>> Describe(uint32_t index) {
    std::vector<std::byte>& d = descriptors_[index];
    if (d.empty()) {
      RAMPART_ASSIGN_OR_RETURN(d, regions_[index].Descriptor());
    }
    return d;
  }

 private:
  transport::Fabric& fabric_;
  std::deque<transport::MemoryRegion> regions_;
  std::deque<std::vector<std::byte>> descriptors_;
};

}  // namespace

// The serving state; lives on the thread, outlives the fabric's callbacks.
// A client reaches the executor through its endpoint (two-sided messages) and
// through each message channel it opened over that endpoint (GET+/PUT+): each
// path is a ConnectionId of its own, and replies go back the way their
// request came. Members are destroyed bottom up: the log before the executor,
// the executor before the arena's extents, those before the fabric.
struct PartitionThread::State {
  std::unique_ptr<transport::Fabric> fabric;
  std::unique_ptr<RegisteredExtents> extents;
  std::unique_ptr<PartitionExecutor> executor;
  std::unique_ptr<DurablePartition> durable;
  std::unordered_map<const transport::Endpoint*, ConnectionId> ids;
  std::unordered_map<ConnectionId, std::shared_ptr<transport::Endpoint>> endpoints;
  std::unordered_map<ConnectionId, std::shared_ptr<transport::Channel>> channels;
  // The channels opened over an endpoint, closed with it.
  std::unordered_multimap<const transport::Endpoint*, ConnectionId> channels_of;
  ConnectionId next_id = 1;
  size_t in_flight = 0;  // sends not yet completed
  std::vector<OutgoingReply> held;  // this turn's replies, until its log commit
  // Committed turns' replies waiting for the sync that covers them (kAlways),
  // by the lsn they wait for, oldest first.
  std::deque<std::pair<uint64_t, std::vector<OutgoingReply>>> waiting;
  bool fatal = false;  // the log failed: nothing more is acknowledged

  ConnectionId IdOf(const std::shared_ptr<transport::Endpoint>& ep) {
    auto it = ids.find(ep.get());
    if (it != ids.end()) return it->second;
    const ConnectionId id = next_id++;
    ids.emplace(ep.get(), id);
    endpoints.emplace(id, ep);
    return id;
  }
};

PartitionThread::PartitionThread(PartitionThreadOptions options) : options_(std::move(options)) {}

PartitionThread::~PartitionThread() {
  RequestStop();
  Join();
}

std::string PartitionThread::name() const {
  const PartitionAddress& a = options_.address;
  return StrCat("partition ", a.partition, " (", a.host, ":", a.port, ")");
}

void PartitionThread::Start() { thread_ = std::thread([this] { Run(); }); }

void PartitionThread::Join() {
  if (thread_.joinable()) thread_.join();
}

void PartitionThread::Report(Phase phase, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase == Phase::kCreated) {
    created_ = true;
    created_status_ = std::move(status);
  } else {
    started_ = true;
    started_status_ = std::move(status);
  }
  cv_.notify_all();
}

Status PartitionThread::AwaitCreated() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return created_; });
  return created_status_;
}

Status PartitionThread::AwaitStarted() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return started_; });
  return started_status_;
}

void PartitionThread::RequestStop() {
  stop_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);
  if (fabric_ != nullptr) fabric_->Notify();
}

void PartitionThread::Fatal(State& s, const Status& status) {
  spdlog::critical("{}: {}; the partition stops (what was not acknowledged yet never is)",
                   name(), status.ToString());
  s.held.clear();
  s.waiting.clear();
  s.fatal = true;
  stop_.store(true, std::memory_order_release);
  if (options_.on_fatal) options_.on_fatal(status.WithContext(name()));
}

Status PartitionThread::Create(State& s) {
  RAMPART_ASSIGN_OR_RETURN(s.fabric, transport::Fabric::Create(options_.fabric));
  s.extents = std::make_unique<RegisteredExtents>(*s.fabric);
  const uint64_t first_bytes =
      (options_.arena_bytes + Arena::kPageBytes - 1) / Arena::kPageBytes * Arena::kPageBytes;
  Result<std::span<std::byte>> first = s.extents->NewExtent(first_bytes);
  if (!first.ok()) {
    return first.status().WithContext(
        StrCat("allocating the ", FormatSize(options_.arena_bytes), " arena"));
  }
  ExecutorOptions options = options_.executor;
  options.partition.arena.grow = s.extents.get();
  options.partition.arena.budget = options_.budget;
  s.executor = std::make_unique<PartitionExecutor>(options_.address.partition, *first, options);
  if (s.fabric->backend() == transport::Backend::kUcx) {
    // GET* clients import the arena's extents through DESCRIBE.
    RegisteredExtents* extents = s.extents.get();
    s.executor->ExposeArena([extents](uint32_t extent) { return extents->Describe(extent); });
  }
  return Status::Ok();
}

Status PartitionThread::Recover(State& s) {
  const DurabilityOptions* d = options_.durability;
  if (d == nullptr || !d->enabled()) return Status::Ok();
  std::optional<ProgressMeter> meter;
  auto progress = [&](uint64_t done, uint64_t total) {
    if (!meter && total >= kProgressFromBytes) {
      meter.emplace(ProgressOptions{.label = StrCat(name(), " recovery"),
                                    .unit = "MiB",
                                    .total = total >> 20,
                                    .bytes_per_unit = uint64_t{1} << 20});
    }
    if (meter) meter->Update(done >> 20);
  };
  wire::ProtocolLimits limits;
  limits.max_message_bytes = static_cast<uint32_t>(
      std::min<uint64_t>(options_.executor.max_message_bytes, UINT32_MAX));
  limits.max_key_bytes = static_cast<uint32_t>(options_.executor.partition.max_key_bytes);
  limits.max_value_bytes = static_cast<uint32_t>(options_.executor.partition.max_value_bytes);
  const auto started = std::chrono::steady_clock::now();
  transport::Fabric* fabric = s.fabric.get();
  RAMPART_ASSIGN_OR_RETURN(
      s.durable, DurablePartition::Open(*d, options_.address.partition, *s.executor, limits,
                                        progress, [fabric] { fabric->Notify(); }));
  if (meter) meter->Finish();
  const wal::RecoveredLog& r = s.durable->recovered();
  for (const std::string& note : r.notes) spdlog::warn("{}: recovery: {}", name(), note);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  spdlog::info("{}: recovered {} keys in {:.3f} s: checkpoint {} ({} records, {} bytes), then {} "
               "log records ({} bytes) up to record {}",
               name(), s.executor->partition().LiveKeys(), seconds, r.checkpoint_id,
               r.checkpoint_records, r.checkpoint_bytes, r.log_records_replayed,
               r.log_bytes_replayed, r.next_lsn - 1);
  if (options_.syncer != nullptr) options_.syncer->Add(&s.durable->writer());
  return Status::Ok();
}

void PartitionThread::Hold(State& s, std::vector<OutgoingReply> replies) {
  if (!s.durable) return Dispatch(s, std::move(replies));
  for (OutgoingReply& r : replies) s.held.push_back(std::move(r));
}

bool PartitionThread::EndTurn(State& s) {
  if (!s.durable) return true;
  Status st = s.durable->CommitTurn();
  // What is safe, read before the error check: a sync that failed never
  // moves it again (wal::LogWriter::SyncNow).
  const uint64_t acked = s.durable->acked_lsn();
  if (st.ok()) st = s.durable->sync_error();
  if (!st.ok()) {
    Fatal(s, st.WithContext("the redo log"));
    return false;
  }
  if (!s.held.empty()) {
    s.waiting.emplace_back(s.durable->turn_lsn(), std::move(s.held));
    s.held = {};
  }
  while (!s.waiting.empty() && s.waiting.front().first <= acked) {
    Dispatch(s, std::move(s.waiting.front().second));
    s.waiting.pop_front();
  }
  return true;
}

void PartitionThread::Dispatch(State& s, std::vector<OutgoingReply> replies) {
  for (OutgoingReply& r : replies) {
    if (auto ch = s.channels.find(r.to); ch != s.channels.end()) {
      transport::IoSlice slice{r.message.data(), r.message.size()};
      Status st = ch->second->Send(std::span<const transport::IoSlice>(&slice, 1));
      if (!st.ok() && ch->second->connected()) {
        spdlog::warn("{}: reply of {} bytes to {} not sent on its channel: {}", name(),
                     r.message.size(), ch->second->endpoint()->peer_name(), st.ToString());
      }
      continue;  // Send copied the bytes
    }
    auto it = s.endpoints.find(r.to);
    if (it == s.endpoints.end() || !it->second->connected()) continue;  // gone: drop
    auto send = std::make_shared<PendingSend>();
    send->bytes = std::move(r.message);
    send->slice = transport::IoSlice{send->bytes.data(), send->bytes.size()};
    ++s.in_flight;
    Status st = it->second->Send(std::span<const transport::IoSlice>(&send->slice, 1),
                                 [send, &s](Status) { --s.in_flight; });
    if (!st.ok()) {
      --s.in_flight;
      spdlog::warn("{}: reply of {} bytes to {} not sent: {}", name(), send->bytes.size(),
                   it->second->peer_name(), st.ToString());
    }
  }
}

void PartitionThread::SetHandlers(State& s) {
  transport::Fabric& f = *s.fabric;
  f.SetAcceptHandler([&s](std::shared_ptr<transport::Endpoint> ep) { s.IdOf(ep); });
  f.SetChannelHandler([this, &s](std::shared_ptr<transport::Channel> channel) {
    const ConnectionId id = s.next_id++;
    s.channels.emplace(id, channel);
    s.channels_of.emplace(channel->endpoint().get(), id);
    channel->SetMessageHandler([this, &s, id](std::span<const std::byte> message) {
      Hold(s, s.executor->Execute(id, message, Clock::now()));
    });
  });
  f.SetMessageHandler([this, &s](const std::shared_ptr<transport::Endpoint>& ep,
                                 std::span<const std::byte> message) {
    Hold(s, s.executor->Execute(s.IdOf(ep), message, Clock::now()));
  });
  f.SetDisconnectHandler([this, &s](const std::shared_ptr<transport::Endpoint>& ep, Status) {
    auto it = s.ids.find(ep.get());
    if (it == s.ids.end()) return;
    const ConnectionId id = it->second;
    s.ids.erase(it);
    s.endpoints.erase(id);
    Hold(s, s.executor->ConnectionClosed(id, Clock::now()));
    auto [first, last] = s.channels_of.equal_range(ep.get());
    std::vector<ConnectionId> channel_ids;
    for (auto c = first; c != last; ++c) channel_ids.push_back(c->second);
    s.channels_of.erase(first, last);
    for (ConnectionId c : channel_ids) {
      s.channels.erase(c);
      Hold(s, s.executor->ConnectionClosed(c, Clock::now()));
    }
  });
}

void PartitionThread::Serve(State& s) {
  transport::Fabric& f = *s.fabric;
  auto next_tick = Clock::now() + kTickEvery;
  while (!stop_.load(std::memory_order_acquire)) {
    const bool busy = s.durable && s.durable->busy();
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - Clock::now());
    f.Wait(busy ? 0ms : std::clamp<std::chrono::milliseconds>(left, 0ms, kTickEvery));
    const auto now = Clock::now();
    const bool ticked = now >= next_tick;
    if (ticked) {
      Hold(s, s.executor->Tick(now));
      next_tick = now + kTickEvery;
    }
    if (s.durable && (busy || ticked)) {
      if (Status st = s.durable->Background(now); !st.ok()) {
        return Fatal(s, st.WithContext("checkpoint"));
      }
    }
    if (!EndTurn(s)) return;
  }
}

void PartitionThread::Shutdown(State& s) {
  transport::Fabric& f = *s.fabric;
  if (s.durable) {
    if (options_.syncer != nullptr) options_.syncer->Remove(&s.durable->writer());
    // A clean stop leaves nothing unsynced behind, and answers what that made
    // safe; after a fatal error nothing more is answered.
    if (s.fatal) {
      s.waiting.clear();
    } else if (Status st = s.durable->writer().SyncNow(); st.ok()) {
      for (auto& [lsn, replies] : s.waiting) Dispatch(s, std::move(replies));
    } else {
      spdlog::error("{}: the last sync of the redo log failed: {}", name(), st.ToString());
    }
    s.waiting.clear();
  }
  f.SetAcceptHandler([](std::shared_ptr<transport::Endpoint> ep) { ep->Close(); });
  f.SetMessageHandler([](const std::shared_ptr<transport::Endpoint>&, std::span<const std::byte>) {});
  f.SetDisconnectHandler([](const std::shared_ptr<transport::Endpoint>&, Status) {});
  f.SetChannelHandler([](std::shared_ptr<transport::Channel>) {});
  for (auto& [id, channel] : s.channels) channel->SetMessageHandler([](std::span<const std::byte>) {});
  for (auto& [id, ep] : s.endpoints) ep->Close();
  const auto deadline = Clock::now() + kDrainTimeout;
  while (s.in_flight > 0 && Clock::now() < deadline) f.Wait(10ms);
  s.channels.clear();
  s.channels_of.clear();
  s.endpoints.clear();
  s.ids.clear();
}

void PartitionThread::Run() {
  State s;
  Status st = Create(s);
  Report(Phase::kCreated, st);
  if (st.ok()) st = Recover(s);
  if (st.ok()) {
    SetHandlers(s);
    st = s.fabric->Listen(options_.address.host, options_.address.port)
             .WithContext("listening");
  }
  if (!st.ok()) {
    if (s.durable && options_.syncer != nullptr) options_.syncer->Remove(&s.durable->writer());
    return Report(Phase::kStarted, st);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fabric_ = s.fabric.get();
  }
  listening_.store(true, std::memory_order_release);
  Report(Phase::kStarted, Status::Ok());
  Serve(s);
  listening_.store(false, std::memory_order_release);
  Shutdown(s);
  std::lock_guard<std::mutex> lock(mu_);
  fabric_ = nullptr;
}

}  // namespace rampart::kv::internal
