// The worker's event loop: sockets, parsing, writing (the turn itself is in
// worker_turn.cc).
#include "proxy/worker.h"
#include "proxy/worker_job.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace rampart::proxy {

namespace {

constexpr size_t kReadChunk = 64 << 10;
// A session with this many parsed commands waiting, or this many reply bytes
// unwritten, is not read from until it drains (backpressure).
constexpr size_t kMaxQueuedCommands = 4096;
constexpr size_t kMaxPendingOutput = 64u << 20;

}  // namespace

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

Worker::Worker(SharedState& shared, uint32_t index, txn::ClientOptions client)
    : shared_(shared), index_(index), client_options_(std::move(client)) {
  down_until_ms_.assign(shared_.ring.partition_count(), 0);
}

Worker::~Worker() {
  for (auto& [fd, s] : sessions_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status Worker::Listen() {
  const ProxyAddressConfig& pc = shared_.listen;
  const std::string where = pc.address();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(pc.port);
  if (inet_pton(AF_INET, pc.host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgument("the proxy's host \"", pc.host, "\" is not an IPv4 address");
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return ErrnoStatus("proxy: socket", errno);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoStatus(StrCat("proxy: bind ", where), errno);
  }
  if (::listen(listen_fd_, 1024) != 0) return ErrnoStatus(StrCat("proxy: listen on ", where), errno);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || stop_fd_ < 0 || wake_fd_ < 0) return ErrnoStatus("proxy: epoll/eventfd", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.fd = stop_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev);
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  return Status::Ok();
}

void Worker::Stop() {
  uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof(one));
}

bool Worker::Runnable(const Session& s) const {
  return !s.queue.empty() && !s.parked && s.out.size() - s.out_pos < kMaxPendingOutput;
}

void Worker::Run(std::promise<Status> ready) {
  client_options_.request_timeout = std::chrono::milliseconds(shared_.config.proxy.timeout_ms);
  auto client = txn::Client::Connect(client_options_);
  if (!client.ok()) {
    ready.set_value(client.status().WithContext(StrCat("proxy worker ", index_)));
    return;
  }
  client_ = std::move(*client);
  if (index_ == 0) {
    // The workers share one timestamp source: issue nothing below what the
    // kv-nodes hold (this proxy may have restarted with a clock behind them).
    // Best effort: a node that is down now is not waited for.
    if (auto stats = client_->QueryStoreStats(); stats.ok()) {
      client_->ObserveTimestamp(stats->max_ts);
    } else {
      spdlog::warn("proxy: could not ask every kv-node for its newest timestamp: {}",
                   stats.status().ToString());
    }
    sweeper_ = std::make_unique<Session>();
    sweeper_->internal = sweeper_->authenticated = true;
  }
  ready.set_value(Status::Ok());
  Loop();
  client_.reset();
}

int Worker::LoopTimeout() {
  bool runnable = false;
  for (const auto& [fd, s] : sessions_) runnable = runnable || Runnable(*s);
  // Work waiting: look at the sockets without blocking. Only lock waits:
  // come back in a millisecond. Nothing: block (never spin on sockets).
  int timeout_ms = runnable ? (blocked_on_locks_ ? 1 : 0) : -1;
  auto at_most = [&](int ms) {
    if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = ms;
  };
  if (sweeper_ != nullptr && !sweeper_->queue.empty()) {
    timeout_ms = blocked_on_locks_ ? 1 : 0;
  } else if (sweeper_ != nullptr) {
    const uint64_t now = NowMs();
    at_most(static_cast<int>(next_sweep_ms_ > now ? next_sweep_ms_ - now : 0));
  }
  if (parked_here_ > 0) {
    const int deadline_ms = CheckParked();
    if (deadline_ms >= 0) at_most(deadline_ms);
    if (timeout_ms != 0) {
      for (const auto& [fd, s] : sessions_) runnable = runnable || Runnable(*s);
      if (runnable) timeout_ms = 0;
    }
  }
  // Partitions that do not answer are probed by the client's Tick().
  if (client_->unreachable_partitions() > 0) {
    at_most(static_cast<int>(txn::Client::kProbeInterval.count()));
  }
  return timeout_ms;
}

bool Worker::HandleEvents(std::span<const epoll_event> events) {
  bool stopping = false;
  for (const epoll_event& event : events) {
    const int fd = event.data.fd;
    if (fd == stop_fd_) {
      stopping = true;
    } else if (fd == wake_fd_) {
      uint64_t pokes = 0;
      (void)!::read(wake_fd_, &pokes, sizeof(pokes));
    } else if (fd == listen_fd_) {
      Accept();
    } else {
      auto it = sessions_.find(fd);
      if (it == sessions_.end()) continue;
      Session& s = *it->second;
      if (event.events & EPOLLOUT) WriteTo(s);
      if (event.events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) ReadFrom(s);
    }
  }
  return stopping;
}

void Worker::Loop() {
  std::vector<epoll_event> events(256);
  const uint32_t wait_us = shared_.config.proxy.batch_wait_us;
  bool stopping = false;
  while (!stopping) {
    int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), LoopTimeout());
    for (int round = 0; round < 2; ++round) {
      stopping = HandleEvents(std::span<const epoll_event>(events.data(), std::max(n, 0))) || stopping;
      // The size/time bound of a batch: wait up to batch_wait_us for more
      // commands when the first look found fewer than batch_max_commands.
      if (round == 1 || wait_us == 0 || stopping) break;
      size_t queued = 0;
      for (const auto& [fd, s] : sessions_) queued += s->queue.size();
      if (queued == 0 || queued >= shared_.config.proxy.batch_max_commands) break;
      timespec ts{static_cast<time_t>(wait_us / 1000000), static_cast<long>(wait_us % 1000000) * 1000};
      n = ::epoll_pwait2(epoll_fd_, events.data(), static_cast<int>(events.size()), &ts, nullptr);
    }
    ApplyKills();
    DeliverMessages();
    // Sessions whose peer went away (or a CLIENT KILL named) are dropped before the turn.
    std::vector<int> gone;
    for (const auto& [fd, s] : sessions_) {
      if (s->input_closed) gone.push_back(fd);
    }
    for (int fd : gone) Close(fd);
    if (stopping) break;
    if (client_->unreachable_partitions() > 0) client_->Tick();
    ApplyUnblocks();  // before the deadlines: an UNBLOCK's answer, not a timeout's
    if (parked_here_ > 0) CheckParked();
    if (sweeper_ != nullptr) Sweep(NowMs());
    Turn();
    if (sweeper_ != nullptr) sweeper_->out.clear();  // its replies are not wanted
    std::vector<int> done;
    for (auto& [fd, s] : sessions_) {
      if (s->HasOutput()) WriteTo(*s);
      if (s->closing && !s->HasOutput()) done.push_back(fd);
      // Parse what backpressure left in the buffer.
      if (s->queue.size() < kMaxQueuedCommands && s->in_pos < s->in.size() && !s->closing) Parse(*s);
    }
    for (int fd : done) Close(fd);
  }
}

void Worker::Accept() {
  while (true) {
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        spdlog::warn("proxy worker {}: accept: {}", index_, std::strerror(errno));
      }
      return;
    }
    ++shared_.connections_received;
    if (shared_.connected.fetch_add(1) >= shared_.config.proxy.max_clients) {
      --shared_.connected;
      ++shared_.rejected_connections;
      static constexpr char kFull[] = "-ERR max number of clients reached\r\n";
      (void)!::write(fd, kFull, sizeof(kFull) - 1);
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto s = std::make_unique<Session>();
    s->fd = fd;
    s->id = shared_.next_session_id++;
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip));
    s->peer = StrCat(ip, ":", ntohs(peer.sin_port));
    s->connected_ms = NowMs();
    s->authenticated = shared_.config.proxy.requirepass.empty();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    order_.push_back(fd);
    PublishClient(*s);
    sessions_.emplace(fd, std::move(s));
  }
}

void Worker::ReadFrom(Session& s) {
  if (s.closing) return;
  size_t budget = 4 * kReadChunk;  // per event, so one client cannot starve the others
  while (budget > 0 && s.queue.size() < kMaxQueuedCommands) {
    if (s.in_pos > 0 && s.in_pos == s.in.size()) {
      s.in.clear();
      s.in_pos = 0;
    }
    // Into the worker's scratch buffer, then appended: growing `in` by a
    // chunk first would zero 64 KiB per read.
    ssize_t got = ::read(s.fd, read_buffer_.data(), read_buffer_.size());
    if (got > 0) {
      s.in.append(read_buffer_.data(), static_cast<size_t>(got));
      budget -= std::min(budget, static_cast<size_t>(got));
      Parse(s);
      if (static_cast<size_t>(got) < read_buffer_.size()) break;
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (got < 0 && errno == EINTR) continue;
    s.input_closed = true;  // EOF or error: the client is gone
    break;
  }
}

void Worker::Parse(Session& s) {
  while (!s.closing && s.queue.size() < kMaxQueuedCommands && s.in_pos < s.in.size()) {
    const std::string_view input(s.in.data() + s.in_pos, s.in.size() - s.in_pos);
    resp::ParsedCommand parsed = resp::ParseCommand(input, shared_.limits);
    if (parsed.status == resp::ParseStatus::kIncomplete) break;
    Command c;
    c.arrival = next_arrival_++;
    if (parsed.status == resp::ParseStatus::kError) {
      // Answered in order after the commands before it; then the connection closes.
      c.protocol_error = std::move(parsed.error);
      s.queue.push_back(std::move(c));
      s.in.clear();
      s.in_pos = 0;
      s.closing = true;
      return;
    }
    s.in_pos += parsed.consumed;
    if (parsed.args.empty()) continue;  // an empty inline line: no reply
    c.args.assign(parsed.args.begin(), parsed.args.end());
    c.spec = FindCommand(c.args[0]);
    c.stats = CommandStatsIndex(c.spec, c.args.size(), c.args.size() >= 2 ? c.args[1] : std::string_view());
    s.queue.push_back(std::move(c));
    ++shared_.commands;
  }
  // Keep the unparsed tail at the front so the buffer does not grow forever.
  if (s.in_pos > 0 && (s.in_pos == s.in.size() || s.in_pos > (1u << 20))) {
    s.in.erase(0, s.in_pos);
    s.in_pos = 0;
  }
}

void Worker::WriteTo(Session& s) {
  while (s.HasOutput()) {
    ssize_t put = ::write(s.fd, s.out.data() + s.out_pos, s.out.size() - s.out_pos);
    if (put > 0) {
      s.out_pos += static_cast<size_t>(put);
      continue;
    }
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    s.input_closed = true;  // the peer is gone; dropped after this turn
    s.out.clear();
    s.out_pos = 0;
    return;
  }
  if (!s.HasOutput()) {
    s.out.clear();
    s.out_pos = 0;
  } else if (s.out_pos > (1u << 20)) {
    s.out.erase(0, s.out_pos);
    s.out_pos = 0;
  }
  const bool want = s.HasOutput();
  if (want != s.want_write) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (want ? uint32_t{EPOLLOUT} : 0u);
    ev.data.fd = s.fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, s.fd, &ev);
    s.want_write = want;
  }
}

void Worker::Close(int fd) {
  auto it = sessions_.find(fd);
  if (it == sessions_.end()) return;
  if (it->second->parked) Unpark(*it->second);
  DequeueWaiter(*it->second);
  ForgetClient(*it->second);
  DropSubscriptions(*it->second);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  sessions_.erase(it);
  std::erase(order_, fd);
  --shared_.connected;
}

}  // namespace rampart::proxy
