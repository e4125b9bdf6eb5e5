// Pub/sub across the proxies of a cluster (docs/proxy.md, "Pub/sub"): a
// PUBLISH on one proxy is delivered to its own subscribers and forwarded to
// every other proxy of the cluster file, which delivers it to its own (as a
// Redis Cluster node forwards over its bus). The forwarding is a
// `RAMPART.PUBLISH channel message` command on a Redis connection to each
// peer's listening address, pipelined, its replies read and dropped; a peer
// delivers such a message locally and forwards it no further.
//
// At most once, as pub/sub is: while a peer cannot be reached (connecting,
// refused, its AUTH failed, or more than kMaxBacklogBytes waiting for it) its
// messages are dropped and counted; a connection that does not come up, or
// takes nothing of what waits for it, for 10 s is given up; the connection is
// tried again every second. Messages from one proxy reach a peer in the order
// its own subscribers get them.
//
// Thread safety: Forward() and stats() from any thread; the link runs on a
// thread of its own, started by Start and joined by the destructor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace rampart::proxy {

class PeerPublisher {
 public:
  // A message waiting for one peer beyond this many bytes is dropped.
  static constexpr size_t kMaxBacklogBytes = size_t{64} << 20;

  // Links to `peers` (the other proxies), authenticating with `password`
  // when it is not empty. Connections are opened by the link's thread.
  static Result<std::unique_ptr<PeerPublisher>> Start(std::vector<ProxyAddressConfig> peers,
                                                       std::string password);
  ~PeerPublisher();
  PeerPublisher(const PeerPublisher&) = delete;
  PeerPublisher& operator=(const PeerPublisher&) = delete;

  // Queues the message (a SPUBLISH's when `shard`) for every peer; never
  // blocks on the network.
  void Forward(std::string_view channel, std::string_view message, bool shard = false);

  struct Stats {
    uint64_t forwarded = 0;  // messages queued for a peer that was linked
    // Messages not sent to a peer: it was not linked, its backlog was full,
    // or its link broke before they left (those already handed to a
    // connection that then broke are lost uncounted).
    uint64_t dropped = 0;
    uint32_t linked = 0;     // peers connected now
  };
  Stats stats() const;

  class Impl;

 private:
  explicit PeerPublisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rampart::proxy
