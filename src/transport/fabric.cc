// Backend-independent parts of the Fabric: the progress and wait loops,
// deferred completions, region handles, dispatch of accepts, messages and
// failures.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>

#include "transport/channel_impl.h"
#include "transport/fabric_internal.h"

namespace rampart::transport {

std::string_view BackendName(Backend backend) {
  return backend == Backend::kUcx ? "ucx" : "tcp";
}

Result<Backend> ParseBackend(std::string_view name) {
  if (name == "ucx") return Backend::kUcx;
  if (name == "tcp") return Backend::kTcp;
  return InvalidArgument("transport backend must be \"ucx\" or \"tcp\", got \"", name, "\"");
}

// ---------------------------------------------------------------------------
// Region handles

MemoryRegion::MemoryRegion() = default;
MemoryRegion::MemoryRegion(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MemoryRegion::MemoryRegion(MemoryRegion&&) noexcept = default;
MemoryRegion& MemoryRegion::operator=(MemoryRegion&&) noexcept = default;
MemoryRegion::~MemoryRegion() = default;

size_t MemoryRegion::size() const { return impl_ ? impl_->size : 0; }

std::span<const MemoryRegion::Segment> MemoryRegion::segments() const {
  if (!impl_) return {};
  return impl_->segments;
}

Result<std::vector<std::byte>> MemoryRegion::Descriptor() const {
  if (!impl_) return FailedPrecondition("descriptor of an empty MemoryRegion");
  return impl_->Descriptor(nullptr);
}

Result<std::vector<std::byte>> MemoryRegion::DescriptorFor(const Endpoint& peer) const {
  if (!impl_) return FailedPrecondition("descriptor of an empty MemoryRegion");
  return impl_->Descriptor(&peer);
}

std::vector<IoSlice> MemoryRegion::Slices(size_t offset, size_t length) const {
  std::vector<IoSlice> out;
  for (const Segment& seg : segments()) {
    if (length == 0) break;
    if (offset >= seg.size) {
      offset -= seg.size;
      continue;
    }
    size_t n = std::min(seg.size - offset, length);
    out.push_back(IoSlice{seg.data + offset, n});
    length -= n;
    offset = 0;
  }
  return out;
}

RemoteRegion::RemoteRegion(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
RemoteRegion::RemoteRegion(RemoteRegion&&) noexcept = default;
RemoteRegion& RemoteRegion::operator=(RemoteRegion&&) noexcept = default;
RemoteRegion::~RemoteRegion() = default;

size_t RemoteRegion::size() const { return impl_ ? impl_->size() : 0; }

std::byte* RemoteRegion::DirectPointer(size_t offset, size_t length) const {
  return impl_ ? impl_->DirectPointer(offset, length) : nullptr;
}

// ---------------------------------------------------------------------------
// Fabric

Result<std::unique_ptr<Fabric>> Fabric::Create(const FabricOptions& options) {
  if (options.max_message_size == 0 || options.max_message_size > (1ull << 31)) {
    return InvalidArgument("max_message_size must be between 1 byte and 2 GiB, got ",
                           options.max_message_size);
  }
  Result<std::unique_ptr<Fabric>> fabric =
      options.backend == Backend::kUcx ? CreateUcxFabric(options) : CreateTcpFabric(options);
  if (!fabric.ok()) return fabric;
  Internal& internal = (*fabric)->internal();
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = (*fabric)->backend_event_fd();
  if (epoll_ctl(internal.epoll_fd(), EPOLL_CTL_ADD, ev.data.fd, &ev) != 0) {
    return ErrnoStatus("epoll_ctl(backend event fd)", errno);
  }
  return fabric;
}

Fabric::Fabric(const FabricOptions& options)
    : options_(options), internal_(std::make_unique<Internal>(*this)) {}

Fabric::~Fabric() = default;

Result<std::shared_ptr<Endpoint>> Fabric::Connect(const std::string& host, uint16_t port) {
  return Connect(host, port, options_.connect_timeout);
}

Result<std::shared_ptr<Endpoint>> Fabric::Connect(const std::string& host, uint16_t port,
                                                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  RAMPART_ASSIGN_OR_RETURN(std::shared_ptr<Endpoint> connected,
                           ConnectBackend(host, port, timeout));
  auto ep = std::static_pointer_cast<EndpointBase>(connected);
  if (Status st = internal_->AwaitHandshake(*ep, deadline); !st.ok()) {
    // A refused handshake closes by itself once its REFUSE left.
    if (ep->auth != EndpointBase::Auth::kRefused) ep->Close();
    return st.WithContext(StrCat("connecting to ", host, ":", port));
  }
  ep->handed_out = true;
  return connected;
}

Result<std::shared_ptr<Channel>> Fabric::OpenChannel(const std::shared_ptr<Endpoint>& endpoint,
                                                     const ChannelOptions& options) {
  return internal_->OpenChannel(endpoint, options);
}

int Fabric::Progress() {
  // Local work first: deferred completions (one-sided operations through a
  // direct pointer complete here) and channel rings cost no system call.
  int events = internal_->RunDeferred();
  events += internal_->PollChannels();
  // The backend's progress may cost a system call (UCX's tcp transport polls
  // its sockets on every call), so while local work keeps coming it runs on
  // every kBackendEvery-th call only; when there is none, always.
  if (events == 0 || ++calls_without_backend_ >= kBackendEvery) {
    calls_without_backend_ = 0;
    events += ProgressBackend();
  }
  for (const Source& source : sources_) events += source.poll();
  // Completions run by channel polling (or handlers that started operations
  // completing at once) are not left waiting for the next call.
  events += internal_->RunDeferred();
  if (internal_->handshakes_pending()) internal_->ExpireHandshakes();
  return events;
}

int Fabric::Wait(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  const auto spin_until = start + options_.spin;
  while (true) {
    if (int n = Progress(); n > 0) return n;
    if (internal_->TakeNotified()) return 1;  // the notifier's event is the caller's
    auto now = Clock::now();
    if (now >= deadline) return 0;
    if (now < spin_until) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    // Block: tell channel peers we sleep, arm the backend, then wait on the
    // combined epoll set (backend event fd, Notify's eventfd, the sources'
    // fds; a readable source fd needs nothing more: Progress polls it).
    // A false here may leave some channels announced while we stay awake;
    // ChannelImpl::OnDoorbell withdraws an announcement the peer consumed.
    if (!internal_->PrepareToSleep()) continue;
    if (!ArmBackend()) {
      internal_->Awake();
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    int wait_ms = static_cast<int>(std::max<int64_t>(1, left.count()));
    epoll_event evs[4];
    int r = epoll_wait(internal_->epoll_fd(), evs, 4, wait_ms);
    internal_->Awake();
    bool notified = false;
    for (int i = 0; i < r; ++i) {
      if (evs[i].data.fd == internal_->notify_fd()) {
        internal_->DrainNotify();
        internal_->TakeNotified();
        notified = true;
      }
    }
    int n = Progress();
    if (n > 0) return n;
    if (notified) return 1;  // the notifier's event is the caller's to handle
  }
}

Result<int> Fabric::AddSource(int fd, std::function<int()> poll) {
  if (fd >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(internal_->epoll_fd(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return ErrnoStatus(StrCat("epoll_ctl(ADD ", fd, ")"), errno);
    }
  }
  const int id = next_source_id_++;
  sources_.push_back({id, fd, std::move(poll)});
  return id;
}

void Fabric::RemoveSource(int id) {
  auto it = std::find_if(sources_.begin(), sources_.end(), [id](const Source& s) { return s.id == id; });
  if (it == sources_.end()) return;
  if (it->fd >= 0) epoll_ctl(internal_->epoll_fd(), EPOLL_CTL_DEL, it->fd, nullptr);
  sources_.erase(it);
}

void Fabric::Notify() {
  internal_->RaiseNotified();
  uint64_t one = 1;
  (void)!write(internal_->notify_fd(), &one, sizeof one);
}

// ---------------------------------------------------------------------------
// Internal

Fabric::Internal::Internal(Fabric& fabric) : fabric_(fabric) {
  notify_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (notify_fd_ < 0 || epoll_fd_ < 0) {
    spdlog::critical("transport: cannot create eventfd/epoll: {}", strerror(errno));
    std::abort();
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = notify_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, notify_fd_, &ev);
}

Fabric::Internal::~Internal() {
  close(notify_fd_);
  close(epoll_fd_);
}

void Fabric::Internal::Defer(Completion done, Status status) {
  completions_.emplace_back(std::move(done), std::move(status));
}

int Fabric::Internal::RunDeferred() {
  int n = 0;
  // Callbacks may defer more work, and may even progress the fabric (set-up
  // calls such as Connect): each round takes the queues into locals first.
  // A callback that re-arms itself every time cannot hold the loop forever.
  for (int round = 0; round < 4 && (!deferred_.empty() || !completions_.empty()); ++round) {
    std::vector<std::pair<Completion, Status>> completions;
    completions.swap(completions_);
    for (auto& [done, status] : completions) done(status);
    std::vector<std::function<void()>> deferred;
    deferred.swap(deferred_);
    for (auto& fn : deferred) fn();
    n += static_cast<int>(completions.size() + deferred.size());
    // Hand the capacity back so the next Defer does not allocate again.
    completions.clear();
    if (completions_.empty()) completions_.swap(completions);
    deferred.clear();
    if (deferred_.empty()) deferred_.swap(deferred);
  }
  return n;
}

void Fabric::Internal::DrainNotify() {
  uint64_t v;
  (void)!read(notify_fd_, &v, sizeof v);
}

void Fabric::Internal::DeliverMessage(const std::shared_ptr<EndpointBase>& ep,
                                      std::span<const std::byte> bytes) {
  if (!ep->proven()) {
    Refuse(ep, "sent a message before proving the cluster secret");
    return;
  }
  if (fabric_.on_message_) {
    std::shared_ptr<Endpoint> as_endpoint = ep;
    fabric_.on_message_(as_endpoint, bytes);
  }
}

void Fabric::Internal::DeliverDisconnect(const std::shared_ptr<EndpointBase>& ep, Status why) {
  if (!ep->handed_out) return;  // the user never had it (a handshake that failed)
  for (auto& [id, channel] : channels_) {
    if (channel->endpoint().get() == ep.get()) channel->Fail(why);
  }
  if (fabric_.on_disconnect_) {
    std::shared_ptr<Endpoint> as_endpoint = ep;
    fabric_.on_disconnect_(as_endpoint, why);
  }
}

Status WaitUntil(Fabric& fabric, const std::function<bool()>& done,
                 std::chrono::milliseconds timeout, std::string_view what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return TimedOut(what, " did not finish within ", timeout.count(), " ms");
    fabric.Wait(std::min(left, std::chrono::milliseconds(100)));
  }
  return Status();
}

}  // namespace rampart::transport
