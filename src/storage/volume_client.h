// VolumeClient: asynchronous block IO against one storage-node (docs/design.md §8),
// over N connections of one transport Fabric.
//
//   VolumeClientOptions o;  o.host = "127.0.0.1";  o.port = 7400;  o.connections = 2;
//   auto client = VolumeClient::Connect(o);                 // HELLO on every connection
//   Result<Buffer> buf = (*client)->pool().Get(4096);       // pre-registered pool
//   (*client)->Read(8192, 4096, buf->ref(), [](const Status& s, uint64_t bytes) { ... });
//   while ((*client)->in_flight() > 0) (*client)->Wait(std::chrono::milliseconds(100));
//
// Several nodes from one thread (a Volume): the caller owns one Fabric and one
// BufferPool and connects a client per node over them with
// Connect(options, fabric, pool). The caller then owns the fabric's disconnect
// handler and routes each disconnect to HandleDisconnect of every client (the
// one owning the endpoint takes it), progresses the fabric itself
// (Fabric::Progress/Wait) and runs each client's RunCompletions(); one Wait
// on the shared fabric serves all nodes.
//
// Data path (seed 004). The client registers one buffer pool at Connect and
// sends its descriptor in each connection's HELLO; afterwards a READ or WRITE
// names a pool range by offset: the node one-sided-writes read data into it,
// or one-sided-reads write data from it. No IO registers memory.
//
// Completions. Every Read/Write/Flush that returned OK has its callback called
// exactly once, with OK and the bytes transferred or with the error, from
// inside Poll() or Wait() on the owner thread — never from inside the call
// that started it. A call that returns an error does not call its callback.
// Callbacks may start new IO.
//
// Buffers. The caller owns the Buffer behind a BufferRef: it must stay alive,
// and its bytes must not be read or written, until the IO's callback ran.
// The BufferRef must come from pool() (its offset addresses that region).
//
// Queueing. Each connection carries at most `queue_depth` requests (and no
// more than the node's own queue depth); requests beyond that wait in the
// client, in order, and go out as replies free slots. Requests go to the
// connection with the fewest in flight.
//
// Failures. When a connection fails (the node died or closed it) every
// request in flight on it completes with kUnavailable at the next Poll/Wait;
// the others carry on. Once no connection is left, queued requests fail with
// kUnavailable too and new ones are refused with kUnavailable. The client does
// not reconnect: make a new one.
//
// Requires the ucx backend (the node transfers data one-sidedly).
//
// Thread-safety: none. A VolumeClient (with its Fabric and pool) belongs to
// the thread that called Connect (the thread owning the shared Fabric); use
// one client per thread, or several over one shared Fabric on its thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "storage/buffer_pool.h"
#include "storage/protocol.h"
#include "transport/transport.h"

namespace rampart::storage {

struct VolumeClientOptions {
  // The storage-node's address.
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  // Connections to the node, each with its own message channel. Default: 1.
  uint32_t connections = 1;
  // Requests in flight per connection (capped by the node's queue depth).
  // Default: 32.
  uint32_t queue_depth = 32;
  // Bytes of the registered buffer pool. Default: 64 MiB.
  size_t pool_bytes = 64u << 20;
  // Alignment of pooled buffers. Default: 4096 (what O_DIRECT needs).
  size_t pool_alignment = 4096;
  // Transport settings; the backend must be ucx.
  transport::FabricOptions fabric;
  transport::ChannelOptions channel;
  // How long Connect waits for each HELLO reply. Default: 5 s.
  std::chrono::milliseconds hello_timeout = std::chrono::seconds(5);
};

class VolumeClient {
 public:
  // `bytes` is what the node reports it transferred (0 on error).
  using Callback = std::function<void(const Status& status, uint64_t bytes)>;

  // Creates the Fabric and the pool, opens the connections and says HELLO on
  // each. Unavailable when the node cannot be reached. The client sets the
  // fabric's disconnect handler itself.
  static Result<std::unique_ptr<VolumeClient>> Connect(const VolumeClientOptions& options);
  // The same over a Fabric and a pool the caller owns (options.fabric,
  // pool_bytes and pool_alignment are then unused). Neither is touched beyond
  // connecting, sending and the pool's region: the caller keeps the fabric's
  // disconnect handler and must pass disconnects to HandleDisconnect.
  // REQUIRES: `fabric` (ucx) and `pool` (created over `fabric`) outlive the
  // client; called on the fabric's thread.
  static Result<std::unique_ptr<VolumeClient>> Connect(const VolumeClientOptions& options,
                                                       transport::Fabric& fabric,
                                                       BufferPool& pool);
  // Closes the connections. Callbacks not yet run are dropped, never called.
  ~VolumeClient();

  VolumeClient(const VolumeClient&) = delete;
  VolumeClient& operator=(const VolumeClient&) = delete;

  // The node's device as its HELLO reply described it.
  const wire::DeviceInfo& device() const { return device_; }
  BufferPool& pool() { return *pool_; }
  transport::Fabric& fabric() { return *fabric_; }
  const VolumeClientOptions& options() const { return options_; }

  // Reads device[offset, offset + length) into `buffer` (length <= buffer.length).
  // The node checks bounds and alignment and answers errors per request.
  Status Read(uint64_t offset, uint32_t length, const BufferRef& buffer, Callback done);
  // Writes buffer[0, length) to device[offset, ...); done when the node's
  // device write completed (durable after a Flush).
  Status Write(uint64_t offset, uint32_t length, const BufferRef& buffer, Callback done);
  // Makes every write whose callback has run durable (fdatasync on the node).
  Status Flush(Callback done);

  // Makes progress and runs ready callbacks without blocking; returns how
  // many callbacks ran.
  int Poll();
  // Runs the callbacks of replies the fabric already delivered (and fails
  // requests of connections found closed) without progressing the fabric:
  // for an owner that progresses a shared fabric itself. Returns how many
  // callbacks ran.
  int RunCompletions();
  // Fails the connection over `endpoint` if it is one of this client's (its
  // requests complete with kUnavailable at the next RunCompletions/Poll);
  // returns whether it was. For owners of a shared fabric's disconnect handler.
  bool HandleDisconnect(const transport::Endpoint& endpoint, const Status& why);
  // Like Poll, but waits up to `timeout` for at least one callback.
  int Wait(std::chrono::milliseconds timeout);

  // Requests started whose callbacks have not run yet (queued ones included).
  size_t in_flight() const { return outstanding_; }
  // Connections still up.
  uint32_t live_connections() const;

 private:
  struct Request {
    wire::MsgType type;
    uint64_t offset = 0;
    uint32_t length = 0;
    uint64_t buffer_offset = 0;
    Callback done;
  };
  struct Connection {
    std::shared_ptr<transport::Endpoint> endpoint;
    std::shared_ptr<transport::Channel> channel;
    bool live = false;
    uint32_t in_flight = 0;
    // request_id -> request, for requests sent on this connection.
    std::unordered_map<uint64_t, Request> sent;
  };
  struct Ready {
    Callback done;
    Status status;
    uint64_t bytes = 0;
  };

  explicit VolumeClient(const VolumeClientOptions& options);
  // Opens the connections over fabric_ and says HELLO with pool_'s region.
  Status OpenConnections();
  Status Start(Request request);
  // Sends `request` on connection `c`; false (and the connection failed) when
  // the channel refused it.
  bool SendOn(size_t c, uint64_t id, Request& request);
  void Dispatch();
  void OnMessage(size_t c, std::span<const std::byte> message);
  void FailConnection(size_t c, const Status& why);
  int RunReady();

  VolumeClientOptions options_;
  // Owned by the client (Connect(options)) or by the caller (shared).
  std::unique_ptr<transport::Fabric> owned_fabric_;
  std::unique_ptr<BufferPool> owned_pool_;
  transport::Fabric* fabric_ = nullptr;
  BufferPool* pool_ = nullptr;
  std::vector<Connection> connections_;
  wire::DeviceInfo device_;
  uint32_t depth_ = 1;  // per connection: min(options, node)
  uint64_t next_id_ = 1;
  std::deque<std::pair<uint64_t, Request>> queued_;
  std::deque<Ready> ready_;
  size_t outstanding_ = 0;
  std::vector<std::byte> scratch_;
  // HELLO replies during Connect: connection -> reply seen.
  std::vector<std::optional<Result<wire::DeviceInfo>>> hello_;
};

}  // namespace rampart::storage
