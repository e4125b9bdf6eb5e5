// KvNode: start-up, the partition threads' serve loop, and shutdown.
#include "kv/node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "common/size.h"
#include "transport/config_options.h"

namespace rampart::kv {
namespace {

using namespace std::chrono_literals;
constexpr auto kTickEvery = 100ms;
// How long a stopping thread waits for its last replies to be sent.
constexpr auto kDrainTimeout = 1s;

// A reply on its way: the bytes and the slice that names them stay alive
// until the send completes.
struct PendingSend {
  std::vector<std::byte> bytes;
  transport::IoSlice slice{};
};

// A partition's arena extents as registered memory of its thread's fabric:
// the first allocated at start-up, more whenever the arena grows. DESCRIBE
// answers from here. Lives on the partition thread; outlives the executor and
// goes before the fabric.
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

// One partition's thread and what Start/Stop share with it.
struct KvNode::PartitionThread {
  PartitionAddress address;
  transport::FabricOptions fabric_options;
  ExecutorOptions executor_options;  // without the arena's source and budget
  uint64_t arena_bytes = 0;
  std::shared_ptr<MemoryBudget> budget;  // the node's, shared by its partitions

  std::atomic<bool> stop{false};
  std::atomic<bool> listening{false};

  std::mutex mu;
  std::condition_variable started_cv;
  bool started = false;                  // GUARDED_BY(mu): start-up finished
  Status start_status;                   // GUARDED_BY(mu)
  transport::Fabric* fabric = nullptr;   // GUARDED_BY(mu): set while serving, for Notify

  std::thread thread;

  // The serving state; lives on the thread, outlives the fabric's callbacks.
  // A client reaches the executor through its endpoint (two-sided messages)
  // and through each message channel it opened over that endpoint (GET+/PUT+):
  // each path is a ConnectionId of its own, and replies go back the way their
  // request came.
  struct State {
    std::unique_ptr<PartitionExecutor> executor;
    std::unordered_map<const transport::Endpoint*, ConnectionId> ids;
    std::unordered_map<ConnectionId, std::shared_ptr<transport::Endpoint>> endpoints;
    std::unordered_map<ConnectionId, std::shared_ptr<transport::Channel>> channels;
    // The channels opened over an endpoint, closed with it.
    std::unordered_multimap<const transport::Endpoint*, ConnectionId> channels_of;
    ConnectionId next_id = 1;
    size_t in_flight = 0;  // sends not yet completed
  };

  std::string name() const {
    return StrCat("partition ", address.partition, " (", address.host, ":", address.port, ")");
  }

  void ReportStart(Status status) {
    std::lock_guard<std::mutex> lock(mu);
    started = true;
    start_status = std::move(status);
    started_cv.notify_all();
  }

  // Waits for the thread's start-up to finish; returns its outcome.
  Status AwaitStart() {
    std::unique_lock<std::mutex> lock(mu);
    started_cv.wait(lock, [this] { return started; });
    return start_status;
  }

  void RequestStop() {
    stop.store(true, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mu);
    if (fabric != nullptr) fabric->Notify();
  }

  static ConnectionId IdOf(State& s, const std::shared_ptr<transport::Endpoint>& ep) {
    auto it = s.ids.find(ep.get());
    if (it != s.ids.end()) return it->second;
    const ConnectionId id = s.next_id++;
    s.ids.emplace(ep.get(), id);
    s.endpoints.emplace(id, ep);
    return id;
  }

  void Dispatch(State& s, std::vector<OutgoingReply> replies) {
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

  void Run() {
    State s;
    auto created = transport::Fabric::Create(fabric_options);
    if (!created.ok()) return ReportStart(created.status().WithContext("creating the fabric"));
    std::unique_ptr<transport::Fabric> f = std::move(*created);
    {
      RegisteredExtents extents(*f);
      Result<std::span<std::byte>> first = extents.NewExtent(
          (arena_bytes + Arena::kPageBytes - 1) / Arena::kPageBytes * Arena::kPageBytes);
      if (!first.ok()) {
        return ReportStart(first.status().WithContext(
            StrCat("allocating the ", FormatSize(arena_bytes), " arena")));
      }
      ExecutorOptions options = executor_options;
      options.partition.arena.grow = &extents;
      options.partition.arena.budget = budget;
      s.executor = std::make_unique<PartitionExecutor>(address.partition, *first, options);
      if (f->backend() == transport::Backend::kUcx) {
        // GET* clients import the arena's extents through DESCRIBE.
        s.executor->ExposeArena([&extents](uint32_t extent) { return extents.Describe(extent); });
      }
      f->SetAcceptHandler([&s](std::shared_ptr<transport::Endpoint> ep) { IdOf(s, ep); });
      f->SetChannelHandler([this, &s](std::shared_ptr<transport::Channel> channel) {
        const ConnectionId id = s.next_id++;
        s.channels.emplace(id, channel);
        s.channels_of.emplace(channel->endpoint().get(), id);
        channel->SetMessageHandler([this, &s, id](std::span<const std::byte> message) {
          Dispatch(s, s.executor->Execute(id, message, Clock::now()));
        });
      });
      f->SetMessageHandler([this, &s](const std::shared_ptr<transport::Endpoint>& ep,
                                      std::span<const std::byte> message) {
        const ConnectionId id = IdOf(s, ep);
        Dispatch(s, s.executor->Execute(id, message, Clock::now()));
      });
      f->SetDisconnectHandler([this, &s](const std::shared_ptr<transport::Endpoint>& ep, Status) {
        auto it = s.ids.find(ep.get());
        if (it == s.ids.end()) return;
        const ConnectionId id = it->second;
        s.ids.erase(it);
        s.endpoints.erase(id);
        Dispatch(s, s.executor->ConnectionClosed(id, Clock::now()));
        auto [first, last] = s.channels_of.equal_range(ep.get());
        std::vector<ConnectionId> channel_ids;
        for (auto c = first; c != last; ++c) channel_ids.push_back(c->second);
        s.channels_of.erase(first, last);
        for (ConnectionId c : channel_ids) {
          s.channels.erase(c);
          Dispatch(s, s.executor->ConnectionClosed(c, Clock::now()));
        }
      });
      if (Status st = f->Listen(address.host, address.port); !st.ok()) {
        s.executor.reset();
        return ReportStart(st.WithContext("listening"));
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        fabric = f.get();
      }
      listening.store(true, std::memory_order_release);
      ReportStart(Status::Ok());
      Serve(*f, s);
      listening.store(false, std::memory_order_release);

      // Shutdown: close every connection, let the last sends finish.
      f->SetAcceptHandler([](std::shared_ptr<transport::Endpoint> ep) { ep->Close(); });
      f->SetMessageHandler([](const std::shared_ptr<transport::Endpoint>&,
                              std::span<const std::byte>) {});
      f->SetDisconnectHandler([](const std::shared_ptr<transport::Endpoint>&, Status) {});
      f->SetChannelHandler([](std::shared_ptr<transport::Channel>) {});
      for (auto& [id, channel] : s.channels) {
        channel->SetMessageHandler([](std::span<const std::byte>) {});
      }
      for (auto& [id, ep] : s.endpoints) ep->Close();
      const auto deadline = Clock::now() + kDrainTimeout;
      while (s.in_flight > 0 && Clock::now() < deadline) f->Wait(10ms);
      s.channels.clear();
      s.channels_of.clear();
      s.endpoints.clear();
      s.ids.clear();
      s.executor.reset();
    }  // the extents go before the fabric
    std::lock_guard<std::mutex> lock(mu);
    fabric = nullptr;
  }

  void Serve(transport::Fabric& f, State& s) {
    auto next_tick = Clock::now() + kTickEvery;
    while (!stop.load(std::memory_order_acquire)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick -
                                                                              Clock::now());
      f.Wait(std::clamp<std::chrono::milliseconds>(left, 0ms, kTickEvery));
      const auto now = Clock::now();
      if (now >= next_tick) {
        Dispatch(s, s.executor->Tick(now));
        next_tick = now + kTickEvery;
      }
    }
  }
};

Result<std::unique_ptr<KvNode>> KvNode::Start(const ClusterConfig& config, uint32_t node_id) {
  if (config.FindNode(node_id) == nullptr) {
    return NotFound("node ", node_id, " is not in the cluster configuration (",
                    config.origin.empty() ? "<unnamed>" : config.origin, ")");
  }
  RAMPART_ASSIGN_OR_RETURN(Placement placement,
                           Placement::Create(config.nodes, config.kv.partitions_per_node));
  RAMPART_ASSIGN_OR_RETURN(ExecutorOptions executor_options, ExecutorOptionsFromConfig(config));
  RAMPART_ASSIGN_OR_RETURN(transport::Backend backend,
                           transport::ParseBackend(config.transport.backend));

  std::unique_ptr<KvNode> node(new KvNode());
  node->node_id_ = node_id;
  auto budget = std::make_shared<MemoryBudget>(config.kv.maxmemory);
  node->backend_ = backend;
  for (uint32_t p : placement.PartitionsOfNode(node_id)) {
    node->partitions_.push_back(placement.Address(p));
  }
  // One thread at a time: fabric creation may touch the process environment
  // (UCX_* variables), which is not thread-safe.
  for (const PartitionAddress& address : node->partitions_) {
    auto t = std::make_unique<PartitionThread>();
    t->address = address;
    t->fabric_options = transport::FabricOptionsFromConfig(config.transport);
    t->executor_options = executor_options;
    t->arena_bytes = config.kv.arena_bytes;
    t->budget = budget;
    PartitionThread* raw = t.get();
    t->thread = std::thread([raw] { raw->Run(); });
    node->threads_.push_back(std::move(t));
    if (Status st = raw->AwaitStart(); !st.ok()) {
      node->Stop();
      return st.WithContext(StrCat("node ", node_id, ": ", raw->name()));
    }
  }
  return node;
}

KvNode::~KvNode() { Stop(); }

void KvNode::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  for (auto& t : threads_) t->RequestStop();
  for (auto& t : threads_) {
    if (t->thread.joinable()) t->thread.join();
  }
}

bool KvNode::ready() const {
  if (threads_.empty()) return false;
  return std::all_of(threads_.begin(), threads_.end(), [](const auto& t) {
    return t->listening.load(std::memory_order_acquire);
  });
}

}  // namespace rampart::kv
