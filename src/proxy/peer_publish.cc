#include "proxy/peer_publish.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/tcp_probe.h"

namespace rampart::proxy {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRetryInterval = std::chrono::seconds(1);
// A connection that does not come up, or takes nothing of what waits for it,
// for this long is given up (a host gone without a reset).
constexpr auto kStallTimeout = std::chrono::seconds(10);

// RESP: an array of bulk strings.
void AppendCommand(std::string& out, std::initializer_list<std::string_view> args) {
  out += StrCat("*", args.size(), "\r\n");
  for (std::string_view a : args) {
    out += StrCat("$", a.size(), "\r\n");
    out += a;
    out += "\r\n";
  }
}

}  // namespace

class PeerPublisher::Impl {
 public:
  struct Peer {
    ProxyAddressConfig address;
    // Guarded by mu: what Forward() queued since the link thread last took it.
    bool linked = false;
    std::string queued;
    uint64_t queued_messages = 0;
    size_t unsent = 0;  // of `sending`, when the link thread last took `queued`: Forward's bound counts it
    // The link thread's.
    int fd = -1;
    bool connecting = false;
    Clock::time_point retry_at{};
    Clock::time_point progress_at{};  // connect started, or bytes last left (or none waited)
    std::string sending;  // AUTH, then messages taken from `queued`
    size_t sent = 0;
    uint64_t sending_messages = 0;
    std::string replies;  // read, not yet a whole line
    bool warned = false;  // its failure streak was logged
  };

  Impl(std::vector<ProxyAddressConfig> peers, std::string password) : password_(std::move(password)) {
    for (ProxyAddressConfig& a : peers) peers_.push_back(Peer{.address = std::move(a)});
  }

  ~Impl() {
    stop_.store(true);
    Poke();
    if (thread_.joinable()) thread_.join();
    for (Peer& p : peers_) Close(p);
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  Status Run() {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) return IoError("eventfd: ", std::strerror(errno));
    thread_ = std::thread([this] { Loop(); });
    return Status::Ok();
  }

  void Forward(std::string_view channel, std::string_view message, bool shard) {
    bool wake = false;
    {
      std::lock_guard lock(mu_);
      for (Peer& p : peers_) {
        const size_t bytes = channel.size() + message.size() + 64;
        if (!p.linked || p.queued.size() + p.unsent + bytes > kMaxBacklogBytes) {
          ++stats_.dropped;
          continue;
        }
        wake = wake || p.queued.empty();
        AppendCommand(p.queued, {shard ? "rampart.spublish" : "rampart.publish", channel, message});
        ++p.queued_messages;
        ++stats_.forwarded;
      }
    }
    if (wake) Poke();
  }

  Stats stats() {
    std::lock_guard lock(mu_);
    Stats s = stats_;
    for (const Peer& p : peers_) s.linked += p.linked ? 1 : 0;
    return s;
  }

 private:
  void Poke() {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }

  void Loop() {
    std::vector<pollfd> fds;
    while (!stop_.load()) {
      const Clock::time_point now = Clock::now();
      for (Peer& p : peers_) {
        if (p.fd < 0 && now >= p.retry_at) Connect(p);
        const bool waiting = p.connecting || p.sent < p.sending.size();
        if (p.fd >= 0 && !waiting) p.progress_at = now;
        if (p.fd >= 0 && waiting && now - p.progress_at > kStallTimeout) {
          Failed(p, p.connecting ? "connection not up after 10 s" : "it took nothing for 10 s");
        }
      }
      TakeQueued();
      fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
      for (Peer& p : peers_) {
        short events = 0;
        if (p.fd >= 0) events = p.connecting ? POLLOUT : (POLLIN | (p.sent < p.sending.size() ? POLLOUT : 0));
        fds.push_back(pollfd{p.fd, events, 0});  // fd -1: ignored by poll
      }
      if (::poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) {
        spdlog::error("pub/sub links: poll: {}; messages are no longer forwarded", std::strerror(errno));
        return;
      }
      uint64_t drained;
      while (::read(wake_fd_, &drained, sizeof drained) > 0) {
      }
      for (size_t i = 0; i < peers_.size(); ++i) {
        if (peers_[i].fd >= 0 && fds[i + 1].revents != 0) Serve(peers_[i], fds[i + 1].revents);
      }
    }
  }

  void Connect(Peer& p) {
    p.retry_at = Clock::now() + kRetryInterval;
    p.progress_at = Clock::now();
    Result<std::vector<TcpAddress>> to = ResolveTcp(p.address.host, p.address.port);
    if (!to.ok()) return Failed(p, to.status().ToString());
    const TcpAddress& a = to->front();
    p.fd = ::socket(a.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (p.fd < 0) return Failed(p, StrCat("socket: ", std::strerror(errno)));
    if (::connect(p.fd, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0) return Linked(p);
    if (errno != EINPROGRESS) return Failed(p, StrCat("connect: ", std::strerror(errno)));
    p.connecting = true;
  }

  void Linked(Peer& p) {
    p.connecting = false;
    p.sending.clear();
    p.sent = 0;
    p.sending_messages = 0;
    p.replies.clear();
    if (!password_.empty()) AppendCommand(p.sending, {"AUTH", password_});
    if (p.warned) spdlog::info("pub/sub link to proxy {} at {} is up", p.address.id, p.address.address());
    p.warned = false;
    std::lock_guard lock(mu_);
    p.linked = true;
  }

  // Moves what Forward queued behind what is still unsent (the copy outside
  // the lock), dropping what has left.
  void TakeQueued() {
    for (Peer& p : peers_) {
      std::string taken;
      uint64_t messages = 0;
      {
        std::lock_guard lock(mu_);
        p.unsent = p.sending.size() - p.sent + p.queued.size();
        if (!p.linked || p.queued.empty()) continue;
        taken.swap(p.queued);
        std::swap(messages, p.queued_messages);
      }
      p.sending.erase(0, p.sent);
      p.sent = 0;
      p.sending += taken;
      p.sending_messages += messages;
    }
  }

  void Serve(Peer& p, short revents) {
    if (p.connecting) {
      int error = 0;
      socklen_t len = sizeof error;
      ::getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &error, &len);
      if (error != 0) return Failed(p, StrCat("connect: ", std::strerror(error)));
      return Linked(p);
    }
    if ((revents & POLLIN) != 0 && !ReadReplies(p)) return;
    if ((revents & (POLLERR | POLLHUP)) != 0 && (revents & POLLIN) == 0) return Failed(p, "connection lost");
    while (p.sent < p.sending.size()) {
      const ssize_t put = ::send(p.fd, p.sending.data() + p.sent, p.sending.size() - p.sent, MSG_NOSIGNAL);
      if (put > 0) {
        p.sent += static_cast<size_t>(put);
        p.progress_at = Clock::now();
      } else if (put < 0 && errno == EINTR) {
        continue;
      } else if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      } else {
        return Failed(p, StrCat("send: ", std::strerror(errno)));
      }
    }
    p.sending_messages = 0;  // all handed to the kernel
  }

  // Reads and drops the peer's replies (integers, and +OK for AUTH); an
  // error reply (a refused AUTH) ends the link. False when it failed.
  bool ReadReplies(Peer& p) {
    char buf[4096];
    while (true) {
      const ssize_t got = ::read(p.fd, buf, sizeof buf);
      if (got > 0) {
        p.replies.append(buf, static_cast<size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      Failed(p, got == 0 ? std::string("closed by the peer") : StrCat("read: ", std::strerror(errno)));
      return false;
    }
    size_t line = 0;
    for (size_t end; (end = p.replies.find("\r\n", line)) != std::string::npos; line = end + 2) {
      if (p.replies[line] == '-') {
        Failed(p, StrCat("it answered ", p.replies.substr(line, std::min<size_t>(end - line, 200))));
        return false;
      }
    }
    p.replies.erase(0, line);
    return true;
  }

  void Failed(Peer& p, const std::string& why) {
    if (!p.warned) {
      spdlog::warn("pub/sub link to proxy {} at {}: {}; its messages are dropped until it is back "
                   "(tried every second)",
                   p.address.id, p.address.address(), why);
      p.warned = true;
    }
    Close(p);
    p.retry_at = Clock::now() + kRetryInterval;
    std::lock_guard lock(mu_);
    p.linked = false;
    stats_.dropped += p.queued_messages + p.sending_messages;
    p.queued.clear();
    p.queued_messages = 0;
    p.unsent = 0;
  }

  static void Close(Peer& p) {
    if (p.fd >= 0) ::close(p.fd);
    p.fd = -1;
    p.connecting = false;
    p.sending.clear();
    p.sent = 0;
    p.sending_messages = 0;
    p.replies.clear();
  }

  const std::string password_;
  std::vector<Peer> peers_;  // fixed after construction
  std::mutex mu_;
  Stats stats_;  // guarded by mu_ (linked: computed)
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

Result<std::unique_ptr<PeerPublisher>> PeerPublisher::Start(std::vector<ProxyAddressConfig> peers,
                                                            std::string password) {
  auto impl = std::make_unique<Impl>(std::move(peers), std::move(password));
  RAMPART_RETURN_IF_ERROR(impl->Run());
  return std::unique_ptr<PeerPublisher>(new PeerPublisher(std::move(impl)));
}

PeerPublisher::PeerPublisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PeerPublisher::~PeerPublisher() = default;

void PeerPublisher::Forward(std::string_view channel, std::string_view message, bool shard) {
  impl_->Forward(channel, message, shard);
}

PeerPublisher::Stats PeerPublisher::stats() const { return impl_->stats(); }

}  // namespace rampart::proxy
