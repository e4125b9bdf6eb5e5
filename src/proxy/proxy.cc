#include "proxy/proxy.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "proxy/worker.h"

namespace rampart::proxy {

class Proxy::Impl {
 public:
  std::unique_ptr<SharedState> shared;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  bool waited = false;
};

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Proxy::~Proxy() {
  Stop();
  Wait();
}

Result<std::unique_ptr<Proxy>> Proxy::Start(const ClusterConfig& config,
                                            const ProxyAddressConfig& where,
                                            const txn::ClientOptions& client) {
  const ProxyConfig& pc = config.proxy;
  if (pc.isolation != "ramp" && pc.isolation != "none") {
    return InvalidArgument("proxy.isolation must be ramp or none, not \"", pc.isolation, "\"");
  }
  RAMPART_ASSIGN_OR_RETURN(
      HashRing ring,
      HashRing::Create(config.nodes, config.kv.partitions_per_node,
                       RingOptions{.vnodes = pc.vnodes, .replicas = pc.replicas}));
  auto impl = std::make_unique<Impl>();
  impl->shared = std::make_unique<SharedState>(config, std::move(ring));
  SharedState& shared = *impl->shared;
  shared.listen = where;
  shared.limits.max_bulk_bytes = pc.max_bulk_bytes;
  shared.limits.max_array_elements = pc.max_array_elements;
  shared.limits.max_inline_bytes = pc.max_inline_bytes;
  shared.started_ms = NowMs();
  const uint32_t n = EffectiveProxyWorkers(config, UsableCores());
  shared.worker_count = n;
  shared.waiting_for_locks = std::make_unique<std::atomic<bool>[]>(n);
  shared.unblock_pending = std::make_unique<std::atomic<bool>[]>(n);
  shared.kill_pending = std::make_unique<std::atomic<bool>[]>(n);
  shared.inboxes.resize(n);
  shared.delivery_pending = std::make_unique<std::atomic<bool>[]>(n);
  shared.read_paths = std::make_unique<SharedState::ReadPath[]>(n);
  shared.command_stats = std::make_unique<SharedState::CommandStats[]>(n * CommandStatsSlots());
  if (shared.several_proxies()) {
    std::vector<ProxyAddressConfig> others;
    for (const ProxyAddressConfig& p : config.proxies) {
      if (p.id != where.id) others.push_back(p);
    }
    RAMPART_ASSIGN_OR_RETURN(shared.peers, PeerPublisher::Start(std::move(others), pc.requirepass));
  }

  txn::ClientOptions options = client;
  options.fabric.spin = std::chrono::microseconds(EffectiveProxySpinMicros(config, UsableCores()));
  options.isolation = pc.isolation == "ramp" ? txn::Isolation::kRamp : txn::Isolation::kNone;
  // One timestamp source for all workers: a write that follows another in
  // real time (the lock table orders writes of a key) gets a later timestamp,
  // whichever worker runs it.
  RAMPART_ASSIGN_OR_RETURN(options.timestamps, TimestampSource::Create(client.client_id));
  for (uint32_t i = 0; i < n; ++i) {
    impl->workers.push_back(std::make_unique<Worker>(shared, i, options));
    RAMPART_RETURN_IF_ERROR(impl->workers.back()->Listen());
    shared.wake_fds.push_back(impl->workers.back()->wake_fd());
  }
  auto proxy = std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
  for (auto& w : proxy->impl_->workers) {
    std::promise<Status> ready;
    std::future<Status> started = ready.get_future();
    proxy->impl_->threads.emplace_back([&w, ready = std::move(ready)]() mutable { w->Run(std::move(ready)); });
    Status s = started.get();
    if (!s.ok()) return s;  // ~Proxy stops the workers already running
  }
  spdlog::info("proxy {}: {} worker{} on {}, aggregation {}, isolation {}, {} replicas, {} µs spin "
               "awaiting replies",
               where.id, n, n == 1 ? "" : "s", where.address(), pc.aggregate ? "on" : "off",
               pc.isolation, pc.replicas, options.fabric.spin.count());
  return proxy;
}

void Proxy::Stop() {
  for (auto& w : impl_->workers) w->Stop();
}

void Proxy::Wait() {
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

uint32_t Proxy::workers() const { return impl_->shared->worker_count; }

}  // namespace rampart::proxy
