// The tcp backend, set-up path: factory, Listen, Connect, accept, memory
// regions and the one-sided stubs. The datapath is in tcp_datapath.cc.
#include "transport/tcp/tcp_fabric.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace rampart::transport {

namespace {

// "127.0.0.1:7000", "[::1]:7000".
std::string FormatAddress(const sockaddr* addr) {
  char ip[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (addr->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    port = ntohs(in->sin_port);
    return StrCat(ip, ":", port);
  }
  if (addr->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    port = ntohs(in6->sin6_port);
    return StrCat("[", ip, "]:", port);
  }
  return "unknown-address";
}

std::string HostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return StrCat("[", host, "]:", port);
  return StrCat(host.empty() ? std::string("0.0.0.0") : host, ":", port);
}

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// Resolves host:port for a stream socket. `what` prefixes the error message.
Result<AddrInfoList> Resolve(const std::string& host, uint16_t port, bool passive,
                             const std::string& what) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = host.empty() ? AF_INET : AF_UNSPEC;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  std::string service = std::to_string(port);
  addrinfo* list = nullptr;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    std::string text = rc == EAI_SYSTEM ? ErrnoText(errno) : gai_strerror(rc);
    return Unavailable(what, ": cannot resolve \"", host, "\": ", text);
  }
  if (list == nullptr) return Unavailable(what, ": no address for \"", host, "\"");
  return AddrInfoList(list);
}

void SetNoDelay(int fd) {
  int one = 1;
  // Best effort: fails only on sockets that are not TCP.
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Waits for a non-blocking connect() to finish. Returns 0 or the errno of the
// failure; ETIMEDOUT when `deadline` passes first.
int FinishConnect(int fd, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ETIMEDOUT;
    pollfd p{fd, POLLOUT, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) continue;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
  }
}

Status OneSided(std::string_view op) {
  return NotSupported("one-sided ", op,
                      " is not available on the tcp backend; set transport.backend = \"ucx\"");
}

// A region on the tcp backend: plain memory, no registration.
class TcpRegion final : public MemoryRegion::Impl {
 public:
  // Owns [mapping, mapping + mapped) when mapping is non-null (Allocate).
  TcpRegion(void* mapping, size_t mapped) : mapping_(mapping), mapped_(mapped) {}
  ~TcpRegion() override {
    if (mapping_ != nullptr) munmap(mapping_, mapped_);
  }
  Result<std::vector<std::byte>> Descriptor(const Endpoint*) const override {
    return NotSupported(
        "memory region descriptors are not available on the tcp backend (peers cannot access "
        "memory); set transport.backend = \"ucx\"");
  }

 private:
  void* mapping_;
  size_t mapped_;
};

}  // namespace

// REQUIRES: options validated by Fabric::Create (max_message_size 1..2 GiB,
// so a frame length fits the u32 of the frame header).
Result<std::unique_ptr<Fabric>> CreateTcpFabric(const FabricOptions& options) {
  auto fabric = std::make_unique<TcpFabric>(options);
  RAMPART_RETURN_IF_ERROR(fabric->Init());
  return std::unique_ptr<Fabric>(std::move(fabric));
}

// ---------------------------------------------------------------------------
// TcpFabric

TcpFabric::TcpFabric(const FabricOptions& options) : Fabric(options) {}

Status TcpFabric::Init() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return ErrnoStatus("tcp: epoll_create1", errno);
  return Status();
}

TcpFabric::~TcpFabric() {
  internal().Shutdown();  // drops channels and pending completions first
  for (auto& [id, ep] : connections_) ep->Detach();
  connections_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

Status TcpFabric::Watch(int op, int fd, uint64_t id, bool want_write) {
  epoll_event ev{};
  ev.events = EPOLLIN | (want_write ? EPOLLOUT : 0u);
  ev.data.u64 = id;
  if (epoll_ctl(epoll_fd_, op, fd, &ev) != 0) return ErrnoStatus("tcp: epoll_ctl", errno);
  return Status();
}

void TcpFabric::Unwatch(int fd) {
  epoll_event ev{};
  (void)epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, &ev);
}

Status TcpFabric::Listen(const std::string& host, uint16_t port) {
  const std::string what = StrCat("listen ", HostPort(host, port));
  if (listen_fd_ >= 0) {
    return FailedPrecondition(what, ": this fabric already listens on port ", listen_port_);
  }
  RAMPART_ASSIGN_OR_RETURN(AddrInfoList addrs, Resolve(host, port, /*passive=*/true, what));
  Status last;
  for (const addrinfo* ai = addrs.get(); ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = ErrnoStatus(what, errno);
      continue;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      last = ErrnoStatus(what, errno);
      close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      last = ErrnoStatus(what, errno);
      close(fd);
      continue;
    }
    Status watched = Watch(EPOLL_CTL_ADD, fd, kListenerId, false);
    if (!watched.ok()) {
      close(fd);
      return watched.WithContext(what);
    }
    listen_fd_ = fd;
    listen_port_ = bound.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    return Status();
  }
  return last;
}

Result<std::shared_ptr<Endpoint>> TcpFabric::ConnectBackend(const std::string& host, uint16_t port,
                                                            std::chrono::milliseconds timeout) {
  const std::string what = StrCat("connect ", HostPort(host, port));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  RAMPART_ASSIGN_OR_RETURN(AddrInfoList addrs, Resolve(host, port, /*passive=*/false, what));
  Status last = Unavailable(what, ": no usable address");
  for (const addrinfo* ai = addrs.get(); ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Unavailable(what, ": ", ErrnoText(errno));
      continue;
    }
    int err = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) err = FinishConnect(fd, deadline);
    }
    if (err != 0) {
      close(fd);
      if (err == ETIMEDOUT) {
        last = TimedOut(what, ": no answer within ", timeout.count(), " ms");
      } else {
        last = Unavailable(what, ": ", ErrnoText(err));
      }
      continue;
    }
    SetNoDelay(fd);
    auto ep = AddConnection(fd, FormatAddress(ai->ai_addr));
    if (!ep.ok()) return ep.status().WithContext(what);
    return std::shared_ptr<Endpoint>(std::move(*ep));
  }
  return last;
}

Result<std::shared_ptr<TcpEndpoint>> TcpFabric::AddConnection(int fd, std::string peer_name) {
  const uint64_t id = next_id_++;
  Status watched = Watch(EPOLL_CTL_ADD, fd, id, false);
  if (!watched.ok()) {
    close(fd);
    return watched;
  }
  auto ep = std::make_shared<TcpEndpoint>(this, fd, id, std::move(peer_name));
  connections_.emplace(id, ep);
  return ep;
}

int TcpFabric::AcceptConnections() {
  int accepted = 0;
  for (int i = 0; i < tcp::kMaxAcceptsPerEvent && listen_fd_ >= 0; ++i) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      // EMFILE, ENFILE, ENOBUFS, ENOMEM: the listener stays readable and we
      // retry on every progress; warn once per burst, not once per retry.
      if (!accept_warned_) {
        spdlog::warn("tcp: cannot accept on port {}: {}", listen_port_, ErrnoText(err));
        accept_warned_ = true;
      }
      break;
    }
    accept_warned_ = false;
    SetNoDelay(fd);
    auto ep = AddConnection(fd, FormatAddress(reinterpret_cast<sockaddr*>(&addr)));
    if (!ep.ok()) {
      spdlog::warn("tcp: dropping accepted connection: {}", ep.status().ToString());
      continue;
    }
    ++accepted;
    internal().MarkAccepted(**ep);
    internal().DeliverAccept(std::move(*ep));
  }
  return accepted;
}

// ---------------------------------------------------------------------------
// Memory

Result<MemoryRegion> TcpFabric::Allocate(size_t bytes) {
  if (bytes == 0) return InvalidArgument("Allocate: size must be positive");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - page) return InvalidArgument("Allocate: ", bytes, " bytes is too large");
  const size_t mapped = (bytes + page - 1) / page * page;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return ResourceExhausted("Allocate ", bytes, " bytes: ", ErrnoText(errno));
  }
  auto impl = std::make_unique<TcpRegion>(p, mapped);
  impl->segments.push_back({static_cast<std::byte*>(p), bytes});
  impl->size = bytes;
  return MemoryRegion(std::move(impl));
}

Result<MemoryRegion> TcpFabric::RegisterVector(std::span<const IoSlice> buffers) {
  if (buffers.empty()) return InvalidArgument("RegisterVector: no buffers");
  auto impl = std::make_unique<TcpRegion>(nullptr, 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const IoSlice& b = buffers[i];
    if (b.data == nullptr || b.size == 0) {
      return InvalidArgument("RegisterVector: buffer ", i, " is ",
                             b.data == nullptr ? "null" : "empty");
    }
    if (impl->size > SIZE_MAX - b.size) return InvalidArgument("RegisterVector: size overflows");
    impl->segments.push_back({static_cast<std::byte*>(b.data), b.size});
    impl->size += b.size;
  }
  return MemoryRegion(std::move(impl));
}

// ---------------------------------------------------------------------------
// TcpEndpoint: the one-sided family, which this backend does not have.

Result<RemoteRegion> TcpEndpoint::Import(std::span<const std::byte>) { return OneSided("import"); }

Status TcpEndpoint::Read(const RemoteRegion&, uint64_t, std::span<const IoSlice>, Completion) {
  return OneSided("read");
}

Status TcpEndpoint::Write(std::span<const IoSlice>, const RemoteRegion&, uint64_t, Completion) {
  return OneSided("write");
}

Status TcpEndpoint::ReadToRegion(const RemoteRegion&, uint64_t, const MemoryRegion&, size_t,
                                 size_t, Completion) {
  return OneSided("read-to-region");
}

Status TcpEndpoint::WriteFromRegion(const MemoryRegion&, size_t, size_t, const RemoteRegion&,
                                    uint64_t, Completion) {
  return OneSided("write-from-region");
}

Status TcpEndpoint::CompareSwap(const RemoteRegion&, uint64_t, uint64_t, uint64_t,
                                CasCompletion) {
  return OneSided("compare-and-swap");
}

}  // namespace rampart::transport
