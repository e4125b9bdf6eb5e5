// The Communicator: one small interface over two backends.
//
//   ucx — UCX UCP. One-sided read/write/compare-and-swap on registered memory,
//         two-sided messages, message rings (Channel). Shared memory on one host
//         (one-sided reads then go through a direct pointer), TCP across hosts,
//         real RDMA where the hardware has it; the same code in all three cases.
//   tcp — plain non-blocking sockets with epoll: two-sided messages only, the
//         conventional baseline. One-sided calls fail with kNotSupported.
//
// Model. A Fabric is one thread's view of the network: it owns that thread's
// connections (Endpoints), its registered memory (MemoryRegions) and the
// message rings (Channels) it polls. Everything happens on the thread that
// created the Fabric; the only exception is Fabric::Notify().
//
// Completions. Every asynchronous operation takes a Completion that is called
// exactly once, with OK or the error that ended the operation, from inside
// Fabric::Progress() or Fabric::Wait() on the owner thread — never from inside
// the call that started the operation. When the call itself returns an error,
// the Completion is not called at all.
//
// Buffers. Memory passed to an operation (local scatter lists, message bodies)
// is owned by the caller and must stay valid and unmodified until the
// operation's Completion has been called. A MemoryRegion must outlive every
// operation that uses it.
//
// Failures. A peer that dies or closes is reported once through the Fabric's
// disconnect handler; afterwards every operation on its Endpoint fails with
// kUnavailable, pending ones complete with kUnavailable, and no direct pointer
// into the peer's memory is used again.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace rampart::transport {

enum class Backend { kUcx, kTcp };
std::string_view BackendName(Backend backend);
Result<Backend> ParseBackend(std::string_view name);  // "ucx" | "tcp"

using Completion = std::function<void(Status)>;
class Endpoint;

// One piece of a local scatter/gather list.
struct IoSlice {
  void* data;
  size_t size;
};

// ---------------------------------------------------------------------------
// Memory

// A range of this process's memory that peers may read and write one-sidedly.
// Free a region only once no peer can still write to it (its endpoints are
// closed, or the application told its peers): where UCX emulates one-sided
// operations (UCX over tcp), a late write into freed memory is not caught.
// Either one contiguous allocation (Fabric::Allocate) or a list of discrete
// user buffers registered as one handle (Fabric::RegisterVector, seed 004's
// kpmMLockV). Offsets address the concatenation of the segments.
// Move-only; must not outlive its Fabric.
class MemoryRegion {
 public:
  struct Segment {
    std::byte* data;
    size_t size;
  };
  class Impl;  // backend-specific registration state

  MemoryRegion();
  explicit MemoryRegion(std::unique_ptr<Impl> impl);
  MemoryRegion(MemoryRegion&&) noexcept;
  MemoryRegion& operator=(MemoryRegion&&) noexcept;
  ~MemoryRegion();  // deregisters (or returns the buffers to the cache)

  bool valid() const { return impl_ != nullptr; }
  size_t size() const;
  std::span<const Segment> segments() const;
  // The first segment's start. For an Allocate()d region, the whole region.
  std::byte* data() const { return segments().front().data; }

  // What a peer passes to Endpoint::Import to reach this region: addresses,
  // sizes and remote keys, in the format of docs/transport.md. Fails on the tcp
  // backend, whose peers cannot access memory.
  Result<std::vector<std::byte>> Descriptor() const;
  // The same for the peer at the other end of `peer` (an endpoint of this
  // region's fabric): with RDMA between hosts, the keys of the context that
  // endpoint uses (docs/transport.md, "Peers on other hosts").
  Result<std::vector<std::byte>> DescriptorFor(const Endpoint& peer) const;

  // The local scatter list covering [offset, offset + length).
  // REQUIRES: offset + length <= size().
  std::vector<IoSlice> Slices(size_t offset, size_t length) const;

  Impl* impl() const { return impl_.get(); }

 private:
  std::unique_ptr<Impl> impl_;
};

// A peer's MemoryRegion as imported through one Endpoint. Move-only; becomes
// unusable (operations fail with kUnavailable) when the Endpoint fails.
class RemoteRegion {
 public:
  class Impl;

  RemoteRegion() = default;
  explicit RemoteRegion(std::shared_ptr<Impl> impl);
  RemoteRegion(RemoteRegion&&) noexcept;
  RemoteRegion& operator=(RemoteRegion&&) noexcept;
  ~RemoteRegion();

  bool valid() const { return impl_ != nullptr; }
  size_t size() const;
  // Where [offset, offset + length) of the peer's memory is mapped into this
  // process (same host, shared memory), or nullptr when it is not or the
  // endpoint has failed. Loads and stores through it are one-sided accesses;
  // callers must re-check after every Progress() since a failure clears it.
  std::byte* DirectPointer(size_t offset, size_t length) const;

  Impl* impl() const { return impl_.get(); }

 private:
  std::shared_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// Connections

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // "127.0.0.1:7000" of the peer (as connected or as accepted).
  virtual const std::string& peer_name() const = 0;
  // False once the peer died, closed, or Close() was called.
  virtual bool connected() const = 0;

  // Two-sided message: the concatenation of `message` arrives whole at the
  // peer's message handler. `message` must stay valid until `done` runs.
  // Fails with kInvalidArgument above FabricOptions::max_message_size.
  virtual Status Send(std::span<const IoSlice> message, Completion done) = 0;

  // Brings a peer's region descriptor (MemoryRegion::Descriptor) into this
  // endpoint's address space.
  virtual Result<RemoteRegion> Import(std::span<const std::byte> descriptor) = 0;

  // One-sided read of remote[offset, offset + total) into the local scatter
  // list, where total is the sum of the slice sizes. One completion.
  virtual Status Read(const RemoteRegion& remote, uint64_t remote_offset,
                      std::span<const IoSlice> local, Completion done) = 0;
  // One-sided write of the local scatter list to remote[offset, ...).
  virtual Status Write(std::span<const IoSlice> local, const RemoteRegion& remote,
                       uint64_t remote_offset, Completion done) = 0;

  // The same with the local side given as a registered region and an offset
  // into it (seed 004's kpmReadWithOffset/kpmWriteWithOffset): the transfer
  // uses the region's registration, spans its segments, completes once.
  virtual Status ReadToRegion(const RemoteRegion& remote, uint64_t remote_offset,
                              const MemoryRegion& local, size_t local_offset, size_t length,
                              Completion done) = 0;
  virtual Status WriteFromRegion(const MemoryRegion& local, size_t local_offset, size_t length,
                                 const RemoteRegion& remote, uint64_t remote_offset,
                                 Completion done) = 0;

  // Atomic 64-bit compare-and-swap on remote[offset] (8-byte aligned). `done`
  // gets the value found there: the swap happened iff it equals `expected`.
  // Only words changed exclusively through CompareSwap are atomic with respect
  // to each other (RDMA atomics are not coherent with CPU stores); a process
  // that needs to CAS its own memory connects an Endpoint to itself.
  using CasCompletion = std::function<void(Result<uint64_t> previous)>;
  virtual Status CompareSwap(const RemoteRegion& remote, uint64_t remote_offset,
                             uint64_t expected, uint64_t desired, CasCompletion done) = 0;

  // Orders one-sided writes: those issued before Fence() become visible at the
  // peer before those issued after it. Cheap; does not wait.
  virtual Status Fence() = 0;
  // `done` runs once every operation issued before Flush() is complete at the
  // peer.
  virtual Status Flush(Completion done) = 0;

  // Closes the connection; pending operations complete with kAborted. The
  // disconnect handler is not called for a Close() made by this side.
  virtual void Close() = 0;
};

// ---------------------------------------------------------------------------
// Message rings (GET+/PUT+ of seed 000)

// One direction of a Channel is a ring in the receiver's registered memory;
// the sender one-sided-writes `[length|seq] body [seq]` records into it and the
// receiver polls. See docs/transport.md for the record format, flow control
// and wake-ups. Messages may be far larger than the ring: they are split into
// fragments and reassembled at the receiver.
class Channel {
 public:
  virtual ~Channel() = default;

  // Called for every whole message that arrives, from Progress()/Wait().
  // The bytes are valid only during the call.
  using MessageHandler = std::function<void(std::span<const std::byte> message)>;
  virtual void SetMessageHandler(MessageHandler handler) = 0;

  // Queues the concatenation of `message` for the ring. The bytes are copied
  // (into the peer's ring, or into a local backlog while the ring is out of
  // credit), so `message` may be reused as soon as Send returns. Messages
  // arrive whole and in order. Fails with kUnavailable once the peer failed.
  virtual Status Send(std::span<const IoSlice> message) = 0;

  // Bytes queued locally for lack of credit (not yet written to the peer).
  virtual size_t backlog_bytes() const = 0;
  virtual const std::shared_ptr<Endpoint>& endpoint() const = 0;
  virtual bool connected() const = 0;
};

struct ChannelOptions {
  // Size of each ring (the receiver allocates it). Default: 1 MiB.
  // Must be a power of two between 4 KiB and 1 GiB.
  size_t ring_bytes = 1 << 20;
};

// ---------------------------------------------------------------------------
// The Fabric

struct FabricOptions {
  Backend backend = Backend::kUcx;

  // Largest two-sided message (Endpoint::Send) and channel message accepted.
  // A tcp frame announcing more is malformed and closes that connection.
  // Default: 64 MiB.
  size_t max_message_size = 64u << 20;

  // How long Wait() spins on progress before it blocks on the event fd.
  // Default: 50 µs. 0 blocks at once.
  std::chrono::microseconds spin = std::chrono::microseconds(50);

  // How long Connect and OpenChannel wait for the peer. Default: 5 s.
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(5);

  // ucx only: UCX_NET_DEVICES for sockaddr connections, unless the environment
  // sets it. "lo" keeps 127.0.0.1 traffic on loopback. Empty: UCX's choice.
  std::string ucx_net_devices = "lo";

  // The cluster secret (docs/transport.md, "Peer authentication"). Non-empty:
  // an accepted peer is handed to the accept handler, and anything it sends is
  // served, only once it proved it holds the secret; Connect proves it and
  // checks the listener's proof in turn, within connect_timeout. A peer that
  // fails is disconnected with a warning naming it. Empty: no authentication.
  std::string cluster_secret;
  // Mixed into the proofs: a peer of another cluster with the same secret is
  // refused too.
  std::string cluster_name;
  // ucx only: UCX_TLS unless the environment sets it. Empty: UCX's default.
  std::string ucx_transports;
  // ucx only: bytes of user buffers the registration cache keeps registered
  // after their regions are destroyed. Default: 256 MiB.
  size_t registration_cache_bytes = 256u << 20;
};

class Fabric {
 public:
  static Result<std::unique_ptr<Fabric>> Create(const FabricOptions& options);
  virtual ~Fabric();

  virtual Backend backend() const = 0;
  const FabricOptions& options() const { return options_; }

  // ---- set-up path (may block up to options().connect_timeout) ----

  // Accepts connections on host:port (port 0 picks one; see listen_port()).
  virtual Status Listen(const std::string& host, uint16_t port) = 0;
  virtual uint16_t listen_port() const = 0;
  // Connects to a listening peer and passes the handshake (with a cluster
  // secret: each side proves it holds it; FabricOptions::cluster_secret).
  // kPermissionDenied when the secrets differ, or the peer has none. A
  // connector without a secret does not wait for the handshake: an acceptor
  // that demands one closes the connection when it comes, and the disconnect
  // handler hears "refused: ...". Takes at most options().connect_timeout, or
  // `timeout`.
  Result<std::shared_ptr<Endpoint>> Connect(const std::string& host, uint16_t port);
  Result<std::shared_ptr<Endpoint>> Connect(const std::string& host, uint16_t port,
                                            std::chrono::milliseconds timeout);

  // Opens a message channel over a connected endpoint: allocates this side's
  // receive ring, exchanges descriptors with the peer (whose fabric must be
  // progressing; its channel handler gets the other end).
  Result<std::shared_ptr<Channel>> OpenChannel(const std::shared_ptr<Endpoint>& endpoint,
                                               const ChannelOptions& options = {});

  // Registered memory that peers can access: one contiguous, page-aligned,
  // zero-filled allocation (ucp_mem_map ALLOCATE on ucx).
  virtual Result<MemoryRegion> Allocate(size_t bytes) = 0;
  // Registers discrete user buffers as one region (seed 004's kpmMLockV).
  // Buffers already registered (through an earlier region, even a destroyed
  // one) are found in the registration cache at no cost; cache entries are
  // dropped when their memory is unmapped. The buffers must outlive the region.
  virtual Result<MemoryRegion> RegisterVector(std::span<const IoSlice> buffers) = 0;

  // ---- handlers (set before Listen; called from Progress/Wait) ----

  using AcceptHandler = std::function<void(std::shared_ptr<Endpoint>)>;
  using MessageHandler =
      std::function<void(const std::shared_ptr<Endpoint>&, std::span<const std::byte>)>;
  using DisconnectHandler = std::function<void(const std::shared_ptr<Endpoint>&, Status why)>;
  using ChannelHandler = std::function<void(std::shared_ptr<Channel>)>;
  void SetAcceptHandler(AcceptHandler h) { on_accept_ = std::move(h); }
  // Two-sided messages; the bytes are valid only during the call.
  void SetMessageHandler(MessageHandler h) { on_message_ = std::move(h); }
  void SetDisconnectHandler(DisconnectHandler h) { on_disconnect_ = std::move(h); }
  // Channels opened by peers.
  void SetChannelHandler(ChannelHandler h) { on_channel_ = std::move(h); }

  // ---- progress ----

  // Makes progress without blocking: network events, completions, channel
  // polling. Returns the number of events handled.
  int Progress();
  // Progresses until at least one event was handled or `timeout` passed:
  // spins for options().spin, then blocks on the event fd. Returns events.
  int Wait(std::chrono::milliseconds timeout);
  // Wakes a Wait() in progress on the owner thread. Safe from any thread.
  void Notify();

  // An outside source of events for the owner thread's loop, such as an IO
  // engine's completion queue: every Progress() calls `poll` (which must not
  // block and returns the events it handled), so a spinning Wait() sees its
  // work, and a Wait() that blocks also wakes when `fd` is readable (-1: no
  // fd; the source then wakes the loop with Notify()); `poll` must consume
  // what makes `fd` readable, or a blocked Wait() turns into a spin, and must
  // not add or remove sources. Owner thread only.
  // REQUIRES: `fd` stays open and `poll` callable until RemoveSource(id).
  Result<int> AddSource(int fd, std::function<int()> poll);
  void RemoveSource(int id);

  // Registration cache counters (ucx; zero on tcp), for tests and benchmarks.
  struct CacheStats {
    uint64_t hits = 0, misses = 0, evictions = 0, invalidations = 0;
  };
  virtual CacheStats registration_cache_stats() const { return {}; }

  class Internal;  // transport-private hooks (channels, deferred completions)
  Internal& internal() { return *internal_; }

 protected:
  explicit Fabric(const FabricOptions& options);

  // The backend's connection to host:port, before the handshake, within
  // `timeout`.
  virtual Result<std::shared_ptr<Endpoint>> ConnectBackend(const std::string& host, uint16_t port,
                                                           std::chrono::milliseconds timeout) = 0;
  // Backend progress without blocking; returns events handled.
  virtual int ProgressBackend() = 0;
  // Prepares the backend to block (e.g. ucp_worker_arm). Returns false when
  // events are pending and the caller must progress again instead of blocking.
  virtual bool ArmBackend() = 0;
  // The fd that becomes readable when the backend has events.
  virtual int backend_event_fd() const = 0;

  FabricOptions options_;
  static constexpr int kBackendEvery = 8;
  int calls_without_backend_ = 0;
  struct Source {
    int id;
    int fd;
    std::function<int()> poll;
  };
  std::vector<Source> sources_;
  int next_source_id_ = 1;
  AcceptHandler on_accept_;
  MessageHandler on_message_;
  DisconnectHandler on_disconnect_;
  ChannelHandler on_channel_;
  std::unique_ptr<Internal> internal_;
  friend class Internal;
};

}  // namespace rampart::transport
