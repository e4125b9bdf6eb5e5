// The Redis-protocol proxy (seed 003): Redis clients (redis-cli, redis-py,
// Jedis, redis-benchmark ...) talk RESP2/RESP3 to it; it runs their commands
// as RAMP transactions on the kv-nodes, placing keys on a consistent-hash ring
// with replicas, aggregating the requests of all its clients per backend
// partition and event-loop turn, and serializing writes of a key with its own
// lock table. docs/proxy.md describes the design.
//
//   auto proxy = Proxy::Start(config, client_options);   // binds, starts workers
//   if (!proxy.ok()) return proxy.status();               // "proxy: bind 127.0.0.1:6380: ..."
//   (*proxy)->Wait();                                     // until Stop()
//
// Thread-safety: Stop() may be called from any thread (not from a signal
// handler); everything else from the thread that called Start.
#pragma once

#include <cstdint>
#include <memory>

#include "common/config.h"
#include "common/status.h"
#include "txn/client.h"

namespace rampart::proxy {

class Proxy {
 public:
  // Binds `where` (one SO_REUSEPORT socket per worker; one of
  // config.ProxyProcesses()) and starts config.proxy.workers worker threads
  // (0: one per core), each with a txn::Client made from `client`, all taking
  // timestamps from one source with client.client_id. Fails when the port
  // cannot be bound or the options are bad.
  static Result<std::unique_ptr<Proxy>> Start(const ClusterConfig& config,
                                              const ProxyAddressConfig& where,
                                              const txn::ClientOptions& client);
  ~Proxy();  // Stop() and Wait()

  void Stop();
  void Wait();

  uint32_t workers() const;

  class Impl;

 private:
  explicit Proxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rampart::proxy
