// The tcp backend, datapath: frames, Send, the receive path, the output queue,
// failures and the progress loop. The set-up path is in tcp_fabric.cc.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "transport/tcp/tcp_fabric.h"

namespace rampart::transport {

namespace tcp {

// ---------------------------------------------------------------------------
// Frame header

void EncodeHeader(FrameKind kind, uint32_t length, std::byte* out) {
  out[0] = kMagic0;
  out[1] = kMagic1;
  out[2] = std::byte{kVersion};
  out[3] = std::byte{static_cast<uint8_t>(kind)};
  for (int i = 0; i < 4; ++i) out[4 + i] = std::byte{static_cast<uint8_t>(length >> (8 * i))};
}

Result<FrameHeader> DecodeHeader(const std::byte* p, size_t max_message_size) {
  if (p[0] != kMagic0 || p[1] != kMagic1) {
    unsigned magic = (std::to_integer<unsigned>(p[0]) << 8) | std::to_integer<unsigned>(p[1]);
    char hex[8];
    snprintf(hex, sizeof hex, "%04x", magic);
    return Corruption("bad magic 0x", hex, " (expected 0x5250 \"RP\")");
  }
  const unsigned version = std::to_integer<unsigned>(p[2]);
  if (version != kVersion) return Corruption("unsupported frame version ", version);
  const unsigned kind = std::to_integer<unsigned>(p[3]);
  if (kind > static_cast<unsigned>(FrameKind::kControl)) return Corruption("unknown frame kind ", kind);
  uint32_t length = 0;
  for (int i = 0; i < 4; ++i) length |= std::to_integer<uint32_t>(p[4 + i]) << (8 * i);
  if (length > max_message_size) {
    return Corruption("frame body of ", length, " bytes exceeds max_message_size ",
                      max_message_size);
  }
  return FrameHeader{static_cast<FrameKind>(kind), length};
}

// ---------------------------------------------------------------------------
// ByteQueue

bool ByteQueue::Reserve(size_t n) {
  if (writable() >= n) return true;
  const size_t live = size();
  // Compact in place when nothing pinned lives here, the consumed front is at
  // least as large as what is live (the bytes moved are paid for by bytes
  // consumed) and that makes room.
  if (!pinned() && begin_ >= live && cap_ - live >= n) {
    if (live > 0) memmove(buf_.get(), buf_.get() + begin_, live);
    begin_ = 0;
    end_ = live;
    return true;
  }
  // Double when growing; a buffer replaced only because it is pinned keeps
  // its size, so nested handlers cannot make the queue balloon.
  size_t want = pinned() ? std::max(cap_, live + n) : std::max(cap_ * 2, live + n);
  want = std::max<size_t>((want + 4095) & ~size_t{4095}, 4096);
  std::unique_ptr<std::byte[]> fresh(new (std::nothrow) std::byte[want]);
  if (!fresh) return false;
  if (live > 0) memcpy(fresh.get(), buf_.get() + begin_, live);
  if (pinned()) retired_.push_back({std::move(buf_), buf_pin_depth_});
  buf_ = std::move(fresh);
  buf_pin_depth_ = kUnpinned;
  cap_ = want;
  begin_ = 0;
  end_ = live;
  return true;
}

void ByteQueue::Consume(size_t n) {
  begin_ += n;
  // Restart at the front when empty, unless a pinned message lives here.
  if (begin_ == end_ && !pinned()) begin_ = end_ = 0;
}

void ByteQueue::Pin() {
  ++pins_;
  buf_pin_depth_ = std::min(buf_pin_depth_, pins_);
}

void ByteQueue::Unpin() {
  --pins_;
  // A buffer first pinned at depth d holds messages of depths >= d; they are
  // all finished once the depth is below d.
  std::erase_if(retired_, [this](const Retired& r) { return r.depth > pins_; });
  if (buf_pin_depth_ > pins_) buf_pin_depth_ = kUnpinned;
  if (begin_ == end_ && !pinned()) begin_ = end_ = 0;
}

void ByteQueue::Clear() {
  begin_ = end_;
  if (pinned()) return;
  buf_.reset();
  cap_ = begin_ = end_ = 0;
}

void ByteQueue::ShrinkIfIdle(size_t keep) {
  if (empty() && !pinned() && cap_ > keep) Clear();
}

}  // namespace tcp

using tcp::FrameKind;
using tcp::kHeaderBytes;

// ---------------------------------------------------------------------------
// TcpEndpoint: state

TcpEndpoint::TcpEndpoint(TcpFabric* fabric, int fd, uint64_t id, std::string peer_name)
    : fabric_(fabric), fd_(fd), id_(id), peer_name_(std::move(peer_name)) {}

TcpEndpoint::~TcpEndpoint() {
  if (fd_ >= 0) close(fd_);  // only if never registered; normally Shutdown closed it
}

Status TcpEndpoint::ErrnoFailure(int err) const {
  const std::string text = ErrnoText(err);
  if (err == ECONNRESET || err == EPIPE) {
    return Unavailable("peer ", peer_name_, " closed the connection (", text, ")");
  }
  return Unavailable("connection to peer ", peer_name_, " failed: ", text);
}

void TcpEndpoint::Shutdown() {
  if (fd_ >= 0) {
    if (fabric_ != nullptr) fabric_->Unwatch(fd_);
    close(fd_);
    fd_ = -1;
  }
  out_.Clear();
  bytes_written_ = bytes_queued_;
  want_write_ = false;
  in_.Clear();  // keeps a buffer that a running handler's message lives in
  if (fabric_ != nullptr) {
    TcpFabric* fabric = fabric_;
    fabric_ = nullptr;
    fabric->RemoveConnection(id_);  // may drop the fabric's reference to *this
  }
}

void TcpEndpoint::CompleteFlushes(const Status& status, bool only_drained) {
  while (!flushes_.empty()) {
    PendingFlush& f = flushes_.front();
    if (only_drained && f.target > bytes_written_) break;
    if (fabric_ != nullptr) fabric_->internal().Defer(std::move(f.done), status);
    flushes_.pop_front();
  }
}

void TcpEndpoint::Fail(Status why, Report report) {
  if (state_ != State::kConnected) return;
  auto self = shared_from_this();  // Shutdown may drop the fabric's reference
  TcpFabric* fabric = fabric_;
  state_ = State::kFailed;
  failure_ = why;
  CompleteFlushes(why, /*only_drained=*/false);
  Shutdown();
  if (fabric == nullptr) return;
  Fabric::Internal* internal = &fabric->internal();
  if (report == Report::kNow) {
    internal->DeliverDisconnect(self, std::move(why));
  } else {
    internal->Defer([internal, self, why = std::move(why)] { internal->DeliverDisconnect(self, why); });
  }
}

void TcpEndpoint::Close() {
  if (state_ != State::kConnected) return;
  auto self = shared_from_this();
  state_ = State::kClosed;
  failure_ = Unavailable("endpoint to ", peer_name_, " was closed by this side");
  CompleteFlushes(Aborted("endpoint to ", peer_name_, " was closed before the flush finished"),
                  /*only_drained=*/false);
  Shutdown();
}

void TcpEndpoint::Detach() {
  if (state_ == State::kConnected) {
    state_ = State::kClosed;
    failure_ = Unavailable("the fabric of the endpoint to ", peer_name_, " was destroyed");
  }
  flushes_.clear();  // nothing can run them once the fabric is gone
  fabric_ = nullptr;  // the epoll set is closed with the fabric; no Unwatch
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  out_.Clear();
  in_.Clear();
}

void TcpEndpoint::SetWantWrite(bool want) {
  if (want == want_write_ || fabric_ == nullptr) return;
  Status st = fabric_->Watch(EPOLL_CTL_MOD, fd_, id_, want);
  if (!st.ok()) {
    // Cannot happen for a registered socket; without EPOLLOUT the queue would
    // never drain, so give the connection up rather than hang.
    Fail(Unavailable("connection to peer ", peer_name_, " failed: ", st.message()),
         Report::kDeferred);
    return;
  }
  want_write_ = want;
}

// ---------------------------------------------------------------------------
// TcpEndpoint: sending

Status TcpEndpoint::Send(std::span<const IoSlice> message, Completion done) {
  return SendFrame(FrameKind::kMessage, message, std::move(done));
}

Status TcpEndpoint::SendControl(std::span<const IoSlice> message, Completion done) {
  return SendFrame(FrameKind::kControl, message, std::move(done));
}

Status TcpEndpoint::Fence() {
  if (state_ != State::kConnected) return failure_;
  return Status();
}

Status TcpEndpoint::Flush(Completion done) {
  if (state_ != State::kConnected) return failure_;
  if (bytes_written_ >= bytes_queued_) {
    if (done) fabric_->internal().Defer(std::move(done), Status());
  } else {
    flushes_.push_back({bytes_queued_, done ? std::move(done) : [](Status) {}});
  }
  return Status();
}

bool TcpEndpoint::QueueFrameTail(const std::byte* header, std::span<const IoSlice> message,
                                 size_t frame, size_t skip) {
  if (!out_.Reserve(frame - skip)) return false;
  auto append = [&](const std::byte* data, size_t size) {
    if (skip >= size) {
      skip -= size;
      return;
    }
    memcpy(out_.tail(), data + skip, size - skip);
    out_.Commit(size - skip);
    skip = 0;
  };
  append(header, kHeaderBytes);
  for (const IoSlice& s : message) append(static_cast<const std::byte*>(s.data), s.size);
  return true;
}

Status TcpEndpoint::SendFrame(FrameKind kind, std::span<const IoSlice> message, Completion done) {
  if (state_ != State::kConnected) return failure_;
  const size_t max = fabric_->options().max_message_size;
  size_t body = 0;
  for (const IoSlice& s : message) {
    if (s.data == nullptr && s.size != 0) return InvalidArgument("Send: a slice has null data");
    body = s.size > SIZE_MAX - body ? SIZE_MAX : body + s.size;  // saturate
  }
  if (body > max) {
    return InvalidArgument("Send to ", peer_name_, ": message of ", body,
                           " bytes exceeds max_message_size ", max);
  }
  std::byte header[kHeaderBytes];
  tcp::EncodeHeader(kind, static_cast<uint32_t>(body), header);
  const size_t frame = kHeaderBytes + body;

  size_t written = 0;
  // Write straight from the caller's slices into the kernel when nothing is
  // queued, for the first frame of a progress turn (a lone request leaves at
  // once) and for large frames (no copy). Small frames that follow in the same
  // turn are queued and leave together in one send() (many in flight).
  const bool first_in_turn = direct_write_turn_ != fabric_->turn_;
  if (out_.empty() && (first_in_turn || frame >= tcp::kCoalesceBelowBytes)) {
    direct_write_turn_ = fabric_->turn_;
    // Fast path: straight from the caller's slices into the kernel.
    iovec iov[tcp::kMaxIov];
    size_t n = 0;
    iov[n++] = {header, kHeaderBytes};
    for (const IoSlice& s : message) {
      if (n == tcp::kMaxIov) break;
      if (s.size != 0) iov[n++] = {s.data, s.size};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t r;
    do {
      r = sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      int err = errno;
      if (err != EAGAIN && err != EWOULDBLOCK) {
        // The peer is gone. Report it from the next Progress(), not from inside
        // the caller's Send().
        Fail(ErrnoFailure(err), Report::kDeferred);
        return failure_;
      }
    } else {
      written = static_cast<size_t>(r);
    }
  }
  if (written < frame) {
    if (!QueueFrameTail(header, message, frame, written)) {
      Status oom = ResourceExhausted("Send to ", peer_name_, ": cannot queue ", frame - written,
                                     " bytes");
      // Part of the frame is in the kernel already: the stream cannot go on.
      if (written > 0) Fail(Unavailable(oom.message()), Report::kDeferred);
      return oom;
    }
    SetWantWrite(true);
    if (state_ != State::kConnected) return failure_;
  }
  bytes_queued_ += frame;
  bytes_written_ += written;
  if (done) fabric_->internal().Defer(std::move(done), Status());
  return Status();
}

int TcpEndpoint::DrainOutput() {
  int events = 0;
  bool wrote = false;
  while (!out_.empty() && state_ == State::kConnected) {
    const size_t n = out_.size();
    ssize_t r = send(fd_, out_.front(), n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
      int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      Fail(ErrnoFailure(err), Report::kNow);
      return events + 1;
    }
    wrote = true;
    out_.Consume(static_cast<size_t>(r));
    bytes_written_ += static_cast<uint64_t>(r);
    if (static_cast<size_t>(r) < n) break;  // the socket buffer is full
  }
  if (state_ != State::kConnected) return events;
  if (wrote) ++events;
  CompleteFlushes(Status(), /*only_drained=*/true);
  if (out_.empty()) {
    SetWantWrite(false);
    out_.ShrinkIfIdle(tcp::kKeepBufferBytes);
  }
  return events;
}

// ---------------------------------------------------------------------------
// TcpEndpoint: receiving

int TcpEndpoint::HandleEvents(uint32_t events) {
  auto self = shared_from_this();  // handlers may close us and drop other references
  int handled = 0;
  // Read first: data the peer sent before it closed is delivered before the
  // failure a write would run into.
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) handled += ReadInput();
  if ((events & EPOLLOUT) && state_ == State::kConnected) handled += DrainOutput();
  return handled;
}

int TcpEndpoint::ReadInput() {
  int handled = 0;
  for (int i = 0; i < tcp::kMaxReadsPerEvent && state_ == State::kConnected; ++i) {
    // Room for a large chunk; for a large frame, room that doubles with what
    // has arrived (memory follows received bytes, not announced lengths).
    size_t want = tcp::kReadChunk;
    if (in_.size() >= kHeaderBytes) {
      auto h = tcp::DecodeHeader(in_.front(), fabric_->options().max_message_size);
      if (h.ok() && (proven() || h->length <= kMaxUnprovenMessageBytes) &&
          kHeaderBytes + h->length > in_.size()) {
        size_t missing = kHeaderBytes + h->length - in_.size();
        want = std::max(want, std::min(missing, in_.size()));
      }
    }
    if (!in_.Reserve(want)) {
      spdlog::warn("tcp: closing connection from {}: {}", peer_name_,
                   "out of memory for the receive buffer");
      Fail(Unavailable("connection to peer ", peer_name_,
                       " closed: out of memory for the receive buffer"),
           Report::kNow);
      return handled + 1;
    }
    const size_t room = in_.writable();
    ssize_t r = recv(fd_, in_.tail(), room, MSG_DONTWAIT);
    if (r > 0) {
      in_.Commit(static_cast<size_t>(r));
      handled += ParseFrames();
      if (static_cast<size_t>(r) < room) break;  // drained the socket for now
      continue;
    }
    if (r == 0) {
      Fail(Unavailable("peer ", peer_name_, " closed the connection"), Report::kNow);
      return handled + 1;
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) break;
    Fail(ErrnoFailure(err), Report::kNow);
    return handled + 1;
  }
  if (state_ == State::kConnected) in_.ShrinkIfIdle(tcp::kKeepBufferBytes);
  return handled;
}

int TcpEndpoint::ParseFrames() {
  int delivered = 0;
  auto self = shared_from_this();
  while (state_ == State::kConnected && in_.size() >= kHeaderBytes) {
    auto h = tcp::DecodeHeader(in_.front(), fabric_->options().max_message_size);
    if (h.ok() && !proven() && h->length > kMaxUnprovenMessageBytes) {
      h = Corruption("a frame of ", h->length, " bytes before the handshake finished (at most ",
                     kMaxUnprovenMessageBytes, ")");
    }
    if (!h.ok()) {
      spdlog::warn("tcp: closing connection from {}: {}", peer_name_, h.status().message());
      Fail(Unavailable("peer ", peer_name_, " sent a malformed frame: ", h.status().message()),
           Report::kNow);
      ++delivered;
      break;
    }
    const size_t frame = kHeaderBytes + h->length;
    if (in_.size() < frame) break;
    std::span<const std::byte> body(in_.front() + kHeaderBytes, h->length);
    // Consume before delivering, so a handler that re-enters Progress() does
    // not see this frame again; the pin keeps `body` where it is meanwhile.
    in_.Pin();
    in_.Consume(frame);
    Fabric::Internal& internal = fabric_->internal();
    if (h->kind == FrameKind::kMessage) {
      internal.DeliverMessage(self, body);
    } else {
      internal.DeliverControl(self, body);
    }
    in_.Unpin();
    ++delivered;
  }
  if (state_ != State::kConnected) in_.Clear();
  return delivered;
}

// ---------------------------------------------------------------------------
// TcpFabric: progress

int TcpFabric::ProgressBackend() {
  ++turn_;
  epoll_event events[tcp::kMaxEventsPerProgress];
  int n = epoll_wait(epoll_fd_, events, tcp::kMaxEventsPerProgress, 0);
  if (n <= 0) return 0;  // EINTR or nothing ready
  int handled = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t id = events[i].data.u64;
    if (id == kListenerId) {
      handled += AcceptConnections();
      continue;
    }
    // Look the connection up again for every event: a handler run for an
    // earlier event may have closed this one (ids are never reused).
    auto it = connections_.find(id);
    if (it == connections_.end()) continue;
    std::shared_ptr<TcpEndpoint> ep = it->second;
    handled += ep->HandleEvents(events[i].events);
  }
  return handled;
}

bool TcpFabric::ArmBackend() {
  // Level-triggered: a socket with unread data, a listener with pending
  // connections or a writable socket with queued output keeps the epoll fd
  // readable, and ParseFrames delivers every whole frame it has buffered, so
  // nothing waits in user space that the epoll fd would not announce.
  return true;
}

}  // namespace rampart::transport
