// Transport-private plumbing shared by the backends and the channel code.
// Not part of the public interface; include only from src/transport/.
//
// Thread-safety: everything here runs on the Fabric's owner thread, except
// Notify() (any thread).
#pragma once

#include <atomic>
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
};

// Backend-specific state behind a MemoryRegion handle.
class MemoryRegion::Impl {
 public:
  virtual ~Impl() = default;
  virtual Result<std::vector<std::byte>> Descriptor() const = 0;

  std::vector<Segment> segments;
  size_t size = 0;  // sum of segment sizes
};

// Backend-specific state behind a RemoteRegion handle.
class RemoteRegion::Impl {
 public:
  virtual ~Impl() = default;
  virtual size_t size() const = 0;
  virtual std::byte* DirectPointer(size_t offset, size_t length) const = 0;
};

// Every backend's Endpoint derives from this.
class EndpointBase : public Endpoint, public std::enable_shared_from_this<EndpointBase> {
 public:
  // A transport-internal message; arrives at the peer's
  // Fabric::Internal::DeliverControl, never at the user's handler.
  virtual Status SendControl(std::span<const IoSlice> message, Completion done) = 0;
};

class Fabric::Internal {
 public:
  explicit Internal(Fabric& fabric);
  ~Internal();

  // ---- called by backends ----

  // Runs `fn` from the next Progress(), after the backend's own progress.
  void Defer(std::function<void()> fn) { deferred_.push_back(std::move(fn)); }
  void Defer(Completion done, Status status);
  void DeliverAccept(std::shared_ptr<EndpointBase> ep);
  void DeliverMessage(const std::shared_ptr<EndpointBase>& ep, std::span<const std::byte> bytes);
  void DeliverControl(const std::shared_ptr<EndpointBase>& ep, std::span<const std::byte> bytes);
  // Reports a peer failure once: fails the endpoint's channels, then calls the
  // user's disconnect handler.
  void DeliverDisconnect(const std::shared_ptr<EndpointBase>& ep, Status why);

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
