// Transport-private plumbing shared by the backends and the channel code.
// Not part of the public interface; include only from src/transport/.
//
// Thread-safety: everything here runs on the Fabric's owner thread, except
// Notify() (any thread).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "transport/transport.h"

namespace rampart::transport {

class ChannelImpl;

// The bytes of a scatter list.
inline size_t TotalBytes(std::span<const IoSlice> slices) {
  size_t n = 0;
  for (const IoSlice& s : slices) n += s.size;
  return n;
}

// Kinds of transport-internal two-sided messages (never seen by users).
enum class ControlType : uint32_t {
  kChannelOpen = 1,    // opener -> acceptor: ring descriptor
  kChannelAccept = 2,  // acceptor -> opener: ring descriptor
  kChannelReject = 3,  // acceptor -> opener: reason
  kDoorbell = 4,       // "I wrote into your ring/credits while you slept"
  kAuthHello = 5,      // acceptor -> connector: version, secret required?, nonce (peer_auth.cc)
  kAuthProof = 6,      // connector -> acceptor: nonce, proof of the secret
  kAuthAccept = 7,     // acceptor -> connector: proof of the secret
  kAuthRefuse = 8,     // either way, before closing: why the handshake failed
};

// Every control message starts with this header (little-endian).
struct ControlHeader {
  uint32_t type;      // ControlType
  uint32_t flags;     // CHANNEL_ACCEPT: kAcceptWritesAreMessages; else 0
  uint64_t a;  // OPEN: opener id; ACCEPT/REJECT: opener id; DOORBELL: target id; HELLO: version
  uint64_t b;  // OPEN: ring bytes; ACCEPT: acceptor id; HELLO: flags
};

// CHANNEL_ACCEPT flag: the acceptor's writes into the opener's ring are
// messages (software one-sided requests); the opener's must be too.
inline constexpr uint32_t kAcceptWritesAreMessages = 1;

class EndpointBase;
// Sends a control message (the header, then `payload`); the bytes are copied.
Status SendControl(EndpointBase& ep, ControlType type, uint64_t a, uint64_t b,
                   std::span<const std::byte> payload, uint32_t flags = 0);

// Backend-specific state behind a MemoryRegion handle.
class MemoryRegion::Impl {
 public:
  virtual ~Impl() = default;
  // `peer`: the endpoint the descriptor goes to, or null (any peer of the
  // fabric's same-host context).
  virtual Result<std::vector<std::byte>> Descriptor(const Endpoint* peer) const = 0;

  std::vector<Segment> segments;
  size_t size = 0;  // sum of segment sizes
};

// Backend-specific state behind a RemoteRegion handle.
class RemoteRegion::Impl {
 public:
  virtual ~Impl() = default;
  virtual size_t size() const = 0;
  virtual std::byte* DirectPointer(size_t offset, size_t length) const = 0;
  // True when every access to the region is a message the peer's own thread
  // carries out (software one-sided requests: UCX without RDMA between
  // hosts), so a write wakes the peer like any message does.
  virtual bool AccessedByMessages() const { return false; }
};

// Every backend's Endpoint derives from this.
class EndpointBase : public Endpoint, public std::enable_shared_from_this<EndpointBase> {
 public:
  // A transport-internal message; arrives at the peer's
  // Fabric::Internal::DeliverControl, never at the user's handler.
  virtual Status SendControl(std::span<const IoSlice> message, Completion done) = 0;

  // The connection's handshake (peer_auth.cc). A new endpoint awaits the
  // acceptor's HELLO; Internal::DeliverAccept makes it the acceptor's side.
  // Nothing but the handshake is served before kProven. A connector without
  // a secret is proven at once (Connect does not wait for the acceptor);
  // hello_pending until the HELLO arrives, which may still refuse it.
  enum class Auth : uint8_t {
    kAwaitingHello,   // connector: Connect() waits for the acceptor
    kAwaitingProof,   // acceptor: HELLO sent, the connector's proof not yet in
    kAwaitingAccept,  // connector: proof sent, the acceptor's not yet in
    kProven,
    kRefused,         // closed by the handshake; auth_error says why
  };
  Auth auth = Auth::kAwaitingHello;
  bool proven() const { return auth == Auth::kProven; }
  bool hello_pending = false;  // connector without a secret: the HELLO is still to come
  bool hello_sent = false;     // acceptor: our HELLO (and its nonce) is out
  // The user has this endpoint (accept handler called, or Connect returned
  // it): only then does its disconnect reach the user's handler.
  bool handed_out = false;
  Status auth_error;
  std::array<std::byte, 32> nonce_acceptor{};
  std::array<std::byte, 32> nonce_connector{};
};

// The largest message a peer may send before it proved the cluster secret:
// the handshake's own are under 100 bytes. A larger one is refused unread.
inline constexpr size_t kMaxUnprovenMessageBytes = 4096;

class Fabric::Internal {
 public:
  explicit Internal(Fabric& fabric);
  ~Internal();

  // ---- called by backends ----

  // Runs `fn` from the next Progress(), after the backend's own progress.
  void Defer(std::function<void()> fn) { deferred_.push_back(std::move(fn)); }
  void Defer(Completion done, Status status);
  // Backends call this when they make an endpoint for an accepted
  // connection, before anything it receives can be delivered: it is the
  // acceptor's side of the handshake from the start.
  void MarkAccepted(EndpointBase& ep);
  // An accepted connection: starts the handshake (HELLO); the user's accept
  // handler gets it once the peer proved the secret (or at once without one).
  void DeliverAccept(std::shared_ptr<EndpointBase> ep);
  void DeliverMessage(const std::shared_ptr<EndpointBase>& ep, std::span<const std::byte> bytes);
  void DeliverControl(const std::shared_ptr<EndpointBase>& ep, std::span<const std::byte> bytes);
  // Reports a peer failure once: fails the endpoint's channels, then calls the
  // user's disconnect handler.
  void DeliverDisconnect(const std::shared_ptr<EndpointBase>& ep, Status why);

  // ---- peer authentication (peer_auth.cc) ----

  // Connect's second half: without a secret, marks `ep` proven (the HELLO
  // follows); with one, waits until it passed the handshake, or fails
  // (kPermissionDenied: a secret mismatch; kTimedOut; kUnavailable).
  Status AwaitHandshake(EndpointBase& ep, std::chrono::steady_clock::time_point deadline);
  void HandleAuth(const std::shared_ptr<EndpointBase>& ep, const ControlHeader& h,
                  std::span<const std::byte> payload);
  // Logs "transport: refused PEER: why" once, tells the peer why (REFUSE)
  // and closes the connection once that left.
  void Refuse(const std::shared_ptr<EndpointBase>& ep, std::string_view why);
  // Ends a connection the handshake failed: kRefused, closed (after a REFUSE
  // with `why` has left, when tell_peer), the user told if they had it.
  void EndConnection(const std::shared_ptr<EndpointBase>& ep, std::string_view why,
                     bool tell_peer);
  // True while `ep` waits for its REFUSE to leave before it closes.
  bool Closing(const EndpointBase& ep) const;
  // Closes acceptor-side connections whose proof is overdue. Cheap when none.
  void ExpireHandshakes();
  bool handshakes_pending() const { return !handshakes_.empty() || !closing_.empty(); }

  // ---- used by Fabric ----

  int RunDeferred();
  int PollChannels();
  // Before blocking: tells every channel's peer that we sleep. Returns false if
  // a ring already holds data (do not block).
  bool PrepareToSleep();
  void Awake();
  int notify_fd() const { return notify_fd_; }
  void DrainNotify();
  // Notify() raises this flag before it writes the eventfd, so a Wait that
  // is still spinning sees the notification without a system call (and
  // without finishing its spin first). Any thread may raise it.
  void RaiseNotified() { notified_.store(true, std::memory_order_release); }
  // True (and lowers the flag) when Notify() ran since the last call.
  bool TakeNotified() {
    return notified_.load(std::memory_order_relaxed) &&
           notified_.exchange(false, std::memory_order_acq_rel);
  }
  int epoll_fd() const { return epoll_fd_; }

  // ---- channels ----
  Result<std::shared_ptr<Channel>> OpenChannel(const std::shared_ptr<Endpoint>& endpoint,
                                               const ChannelOptions& options);
  Fabric& fabric() { return fabric_; }

  // Drops channels and pending completions (without running them). Backends
  // call this first in their destructor, while their resources still exist.
  void Shutdown();

 private:
  void HandleChannelOpen(const std::shared_ptr<EndpointBase>& ep, std::span<const std::byte> bytes);
  void OnHello(const std::shared_ptr<EndpointBase>& ep, const ControlHeader& h,
               std::span<const std::byte> payload);
  void OnProof(const std::shared_ptr<EndpointBase>& ep, std::span<const std::byte> payload);
  void OnAccept(const std::shared_ptr<EndpointBase>& ep, std::span<const std::byte> payload);

  // Acceptor-side handshakes in progress, with their deadlines. They own
  // their endpoints: nobody else has them yet (a backend may hold only a
  // weak reference).
  struct Handshake {
    std::shared_ptr<EndpointBase> ep;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Handshake> handshakes_;
  // Refused connections waiting for their REFUSE to leave before closing.
  std::vector<Handshake> closing_;

  Fabric& fabric_;
  std::vector<std::function<void()>> deferred_;
  // (Completion, Status) pairs kept apart from deferred_ so the hot path does
  // not wrap every completion in another std::function.
  std::vector<std::pair<Completion, Status>> completions_;
  uint64_t next_channel_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<ChannelImpl>> channels_;
  int notify_fd_ = -1;
  int epoll_fd_ = -1;
  std::atomic<bool> notified_{false};
};

// Backend factories (ucx/ucx_fabric.cc, tcp/tcp_fabric.cc).
Result<std::unique_ptr<Fabric>> CreateUcxFabric(const FabricOptions& options);
Result<std::unique_ptr<Fabric>> CreateTcpFabric(const FabricOptions& options);

// "Progress until `done()` or the deadline": the set-up path's blocking wait.
Status WaitUntil(Fabric& fabric, const std::function<bool()>& done,
                 std::chrono::milliseconds timeout, std::string_view what);

}  // namespace rampart::transport
