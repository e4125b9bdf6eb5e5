// NbdServer: start-up, the epoll loop, the handshake, the transmission phase
// and shutdown. The wire format lives in nbd_protocol.{h,cc}.
#include "storage/nbd_server.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "common/size.h"
#include "storage/nbd_protocol.h"

namespace rampart::storage {
namespace {

constexpr uint32_t kMaxOptionBytes = 64u << 10;   // longer options close the connection
constexpr size_t kMaxRequestLimit = size_t{1} << 30;
constexpr size_t kReceiveChunk = 256u << 10;      // bytes asked of recv() at least
constexpr int kReceivesPerWakeup = 4;             // then other connections get a turn
constexpr size_t kKeepBufferBytes = 4u << 20;     // larger idle buffers are given back
constexpr size_t kZeroChunk = 1u << 20;           // WRITE_ZEROES writes this much at a time
constexpr size_t kMaxBatchedReads = 64;           // READs one ReadMany answers at most
constexpr uint64_t kListenerId = 0;               // epoll ids; connections count from 2
constexpr uint64_t kWakeId = 1;
constexpr int kMaxEvents = 64;

// What the transmission phase accepts of each command: one table, checked
// before the device is called (docs/nbd.md, "Requests").
struct CommandRule {
  uint16_t type;
  uint16_t allowed_flags;
  bool writes;              // refused with EPERM on a read-only export
  bool length_limited;      // length <= max_request_bytes, else EINVAL
  uint32_t past_end_error;  // error when [offset, offset+length) leaves the export; 0: no range
};
constexpr CommandRule kCommandRules[] = {
    {nbd::cmd::kRead, nbd::cmd_flag::kFua, false, true, nbd::err::kInval},
    {nbd::cmd::kWrite, nbd::cmd_flag::kFua, true, true, nbd::err::kNoSpc},
    {nbd::cmd::kDisc, 0xffff, false, false, 0},
    {nbd::cmd::kFlush, nbd::cmd_flag::kFua, false, false, 0},
    {nbd::cmd::kTrim, nbd::cmd_flag::kFua, true, false, nbd::err::kInval},
    {nbd::cmd::kWriteZeroes, nbd::cmd_flag::kFua | nbd::cmd_flag::kNoHole, true, true,
     nbd::err::kNoSpc},
};
constexpr uint16_t kTransmissionFlags = nbd::tx::kHasFlags | nbd::tx::kSendFlush |
                                        nbd::tx::kSendFua | nbd::tx::kSendTrim |
                                        nbd::tx::kSendWriteZeroes | nbd::tx::kCanMultiConn;

const CommandRule* FindCommandRule(uint16_t type) {
  for (const CommandRule& rule : kCommandRules) {
    if (rule.type == type) return &rule;
  }
  return nullptr;
}

// "127.0.0.1:50123", "[::1]:50123".
std::string FormatAddress(const sockaddr* addr, socklen_t len) {
  char host[NI_MAXHOST] = "?";
  char port[NI_MAXSERV] = "?";
  getnameinfo(addr, len, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  const bool v6 = std::strchr(host, ':') != nullptr;
  return StrCat(v6 ? "[" : "", host, v6 ? "]:" : ":", port);
}

// Bytes received and not yet consumed, with room to receive more after them.
class InputBuffer {
 public:
  std::span<const std::byte> data() const { return {buf_.data() + head_, tail_ - head_}; }
  size_t size() const { return tail_ - head_; }
  void Consume(size_t n) {
    head_ += n;
    if (head_ == tail_) head_ = tail_ = 0;
  }
  // At least `min` writable bytes after the data; Produced(n) once n are filled.
  std::span<std::byte> Space(size_t min) {
    if (buf_.size() - tail_ < min && head_ > 0) {
      std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
      tail_ -= head_;
      head_ = 0;
    }
    if (buf_.size() - tail_ < min) buf_.resize(tail_ + min);
    return {buf_.data() + tail_, buf_.size() - tail_};
  }
  void Produced(size_t n) { tail_ += n; }
  // Gives a large buffer back once it is empty (after a big WRITE).
  void ReleaseIfIdle() {
    if (head_ == tail_ && buf_.size() > kKeepBufferBytes) std::vector<std::byte>().swap(buf_);
  }

 private:
  std::vector<std::byte> buf_;
  size_t head_ = 0;
  size_t tail_ = 0;
};

enum class Phase { kClientFlags, kOptions, kTransmission };

struct Connection {
  uint64_t id = 0;
  int fd = -1;
  std::string peer;  // "127.0.0.1:50123"
  Phase phase = Phase::kClientFlags;
  bool no_zeroes = false;
  bool broken = false;     // close now: unusable socket or untrusted input
  bool finishing = false;  // read nothing more; close once `out` is sent (ABORT, DISC)
  bool peer_done = false;  // the client shut its side down
  InputBuffer in;
  size_t need = nbd::kClientFlagsBytes;  // bytes the next message needs in `in`
  uint64_t discard = 0;                  // payload bytes of a refused WRITE still to skip
  nbd::Buffer out;                       // replies; out[0, sent) went out already
  size_t sent = 0;
  uint32_t events = 0;                   // the registered epoll interest

  size_t pending() const { return out.size() - sent; }
};

}  // namespace

struct NbdServer::Loop {
  Loop(const NbdServerOptions& o, BlockDevice& d) : options(o), device(d) {}
  ~Loop() {
    for (auto& [id, c] : conns) close(c->fd);
    for (int fd : {listen_fd, epoll_fd, wake_fd}) {
      if (fd >= 0) close(fd);
    }
  }

  const NbdServerOptions options;
  BlockDevice& device;  // called from the loop thread only
  nbd::ExportInfo export_info;
  nbd::BlockSizes block_sizes;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;  // eventfd: Stop() wakes the loop
  std::atomic<bool> stop{false};

  // Loop thread only from here on.
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns;
  uint64_t next_id = 2;
  bool listening = true;  // false while accept() is out of descriptors
  std::vector<std::byte> zeros;  // WRITE_ZEROES source, allocated on first use

  size_t OutputHighWater() const { return options.max_request_bytes; }
  bool IsOurExport(std::string_view name) const {
    return name.empty() || name == options.export_name;
  }

  // ---- the loop ----

  void Run() {
    epoll_event events[kMaxEvents];
    while (!stop.load(std::memory_order_acquire)) {
      const int n = epoll_wait(epoll_fd, events, kMaxEvents, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        spdlog::error("nbd: epoll_wait: {}; the server stops", ErrnoText(errno));
        break;
      }
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kWakeId) {
          uint64_t count;
          [[maybe_unused]] ssize_t r = read(wake_fd, &count, sizeof count);
        } else if (id == kListenerId) {
          Accept();
        } else if (auto it = conns.find(id); it != conns.end()) {
          if (!OnEvents(*it->second, events[i].events)) CloseConnection(it);
        }
      }
    }
    while (!conns.empty()) CloseConnection(conns.begin());
  }

  void Accept() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          // Out of descriptors (EMFILE) or the like: stop watching the
          // listener until a connection closes, or the loop would spin.
          spdlog::warn("nbd: accept: {}; accepting again when a connection closes",
                       ErrnoText(errno));
          WatchListener(false);
        }
        return;
      }
      const std::string peer = FormatAddress(reinterpret_cast<sockaddr*>(&addr), len);
      if (conns.size() >= options.max_connections) {
        spdlog::warn("nbd: refusing {}: already {} connections (max_connections)", peer,
                     conns.size());
        close(fd);
        continue;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Connection>();
      c->id = next_id++;
      c->fd = fd;
      c->peer = peer;
      nbd::AppendGreeting(c->out, nbd::kFlagFixedNewstyle | nbd::kFlagNoZeroes);
      epoll_event ev{};
      ev.events = c->events = EPOLLIN;
      ev.data.u64 = c->id;
      if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        spdlog::warn("nbd: cannot watch {}: {}", peer, ErrnoText(errno));
        close(fd);
        continue;
      }
      spdlog::debug("nbd: {} connected", peer);
      Connection& added = *conns.emplace(c->id, std::move(c)).first->second;
      Send(added);
      UpdateInterest(added);
    }
  }

  void CloseConnection(std::unordered_map<uint64_t, std::unique_ptr<Connection>>::iterator it) {
    Connection& c = *it->second;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    spdlog::debug("nbd: {} disconnected", c.peer);
    conns.erase(it);
    if (!listening) WatchListener(true);
  }

  void WatchListener(bool on) {
    epoll_event ev{};
    ev.events = on ? EPOLLIN : 0;
    ev.data.u64 = kListenerId;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev) == 0) listening = on;
  }

  // Receives, serves and sends; false when the connection is to be closed.
  bool OnEvents(Connection& c, uint32_t events) {
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && WantsInput(c)) Receive(c);
    // Serve and send until neither gets anywhere: a send that drains the
    // replies below the high water mark lets buffered requests run, which
    // no socket event would announce.
    for (;;) {
      const bool served = Serve(c);
      const size_t before = c.pending();
      Send(c);
      if (c.broken || c.pending() >= OutputHighWater()) break;
      if (!served && c.pending() == before) break;
    }
    if (c.broken) return false;
    // Nothing more will arrive (or be read), and everything was answered.
    if ((c.finishing || c.peer_done) && c.pending() == 0) return false;
    UpdateInterest(c);
    return true;
  }

  bool WantsInput(const Connection& c) const {
    return !c.finishing && !c.peer_done && c.pending() < OutputHighWater();
  }

  void UpdateInterest(Connection& c) {
    const uint32_t want = (WantsInput(c) ? EPOLLIN : 0u) | (c.pending() > 0 ? EPOLLOUT : 0u);
    if (want == c.events) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = c.id;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev) != 0) {
      spdlog::warn("nbd: cannot watch {}: {}", c.peer, ErrnoText(errno));
      c.broken = true;
      return;
    }
    c.events = want;
  }

  void Receive(Connection& c) {
    for (int i = 0; i < kReceivesPerWakeup; ++i) {
      const size_t missing = c.need > c.in.size() ? c.need - c.in.size() : 0;
      std::span<std::byte> space = c.in.Space(std::max(kReceiveChunk, missing));
      const ssize_t n = recv(c.fd, space.data(), space.size(), 0);
      if (n > 0) {
        c.in.Produced(static_cast<size_t>(n));
        if (static_cast<size_t>(n) < space.size()) return;  // drained the socket
        continue;
      }
      if (n == 0) {
        c.peer_done = true;
        return;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        spdlog::debug("nbd: {}: recv: {}", c.peer, ErrnoText(errno));
        c.broken = true;
      }
      return;
    }
  }

  void Send(Connection& c) {
    while (c.pending() > 0) {
      const ssize_t n = send(c.fd, c.out.data() + c.sent, c.pending(), MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        spdlog::debug("nbd: {}: send: {}", c.peer, ErrnoText(errno));
        c.broken = true;
      }
      break;
    }
    if (c.sent == c.out.size()) {
      c.out.clear();
      c.sent = 0;
      if (c.out.capacity() > kKeepBufferBytes) nbd::Buffer().swap(c.out);
    } else if (c.sent > c.out.size() / 2) {
      c.out.erase(c.out.begin(), c.out.begin() + static_cast<ptrdiff_t>(c.sent));
      c.sent = 0;
    }
  }

  // Closes the connection at once, with a warning: its input cannot be trusted.
  void Drop(Connection& c, std::string_view why) {
    spdlog::warn("nbd: closing the connection from {}: {}", c.peer, why);
    c.broken = true;
  }

  // Handles every complete message in `in` while replies fit under the high
  // water mark; true when something was consumed.
  bool Serve(Connection& c) {
    bool progressed = false;
    while (!c.broken && !c.finishing && c.pending() < OutputHighWater()) {
      if (c.discard > 0) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(c.discard, c.in.size()));
        if (n == 0) break;
        c.in.Consume(n);
        c.discard -= n;
        progressed = true;
        continue;
      }
      const bool step = c.phase == Phase::kTransmission ? StepRequest(c) : StepHandshake(c);
      if (!step) break;
      progressed = true;
    }
    c.in.ReleaseIfIdle();
    return progressed;
  }

  // ---- handshake ----

  // One client-flags field or option; false when more bytes are needed.
  bool StepHandshake(Connection& c) {
    if (c.in.size() < c.need) return false;
    if (c.phase == Phase::kClientFlags) {
      const uint32_t flags = *nbd::DecodeClientFlags(c.in.data());
      c.in.Consume(nbd::kClientFlagsBytes);
      constexpr uint32_t kKnown = nbd::kClientFlagFixedNewstyle | nbd::kClientFlagNoZeroes;
      if ((flags & ~kKnown) != 0) {
        Drop(c, fmt::format("unknown client flags {:#x} (garbage, or not an NBD client)", flags));
      } else if ((flags & nbd::kClientFlagFixedNewstyle) == 0) {
        Drop(c, "the client does not speak the fixed newstyle handshake, the only one served");
      } else {
        c.no_zeroes = (flags & nbd::kClientFlagNoZeroes) != 0;
        c.phase = Phase::kOptions;
        c.need = nbd::kOptionHeaderBytes;
      }
      return true;
    }
    auto header = nbd::DecodeOptionHeader(c.in.data());
    if (!header.ok()) {
      Drop(c, header.status().message());
      return true;
    }
    if (header->length > kMaxOptionBytes) {
      Drop(c, StrCat("option ", header->option, " (", nbd::OptionName(header->option), ") of ",
                     header->length, " bytes is longer than the ", kMaxOptionBytes,
                     " bytes an option may have"));
      return true;
    }
    c.need = nbd::kOptionHeaderBytes + header->length;
    if (c.in.size() < c.need) return false;
    HandleOption(c, header->option, c.in.data().subspan(nbd::kOptionHeaderBytes, header->length));
    c.in.Consume(nbd::kOptionHeaderBytes + header->length);
    c.need = c.phase == Phase::kTransmission ? nbd::kRequestBytes : nbd::kOptionHeaderBytes;
    return true;
  }

  // `data` is valid during the call only.
  void HandleOption(Connection& c, uint32_t option, std::span<const std::byte> data) {
    switch (option) {
      case nbd::opt::kExportName: {
        const std::string_view name(reinterpret_cast<const char*>(data.data()), data.size());
        if (!IsOurExport(name)) {
          // This option cannot carry an error: the spec says to hang up.
          Drop(c, StrCat("NBD_OPT_EXPORT_NAME asks for unknown export '",
                         name.substr(0, 256), "'"));
          return;
        }
        nbd::AppendExportNameReply(c.out, export_info, c.no_zeroes);
        EnterTransmission(c);
        return;
      }
      case nbd::opt::kAbort:
        nbd::AppendOptionReply(c.out, option, nbd::rep::kAck);
        c.finishing = true;
        return;
      case nbd::opt::kList:
        if (!data.empty()) {
          OptionError(c, option, nbd::rep::kErrInvalid, "NBD_OPT_LIST takes no data");
          return;
        }
        nbd::AppendServer(c.out, option, options.export_name);
        nbd::AppendOptionReply(c.out, option, nbd::rep::kAck);
        return;
      case nbd::opt::kInfo:
      case nbd::opt::kGo: {
        auto request = nbd::DecodeInfoRequest(data);
        if (!request.ok()) {
          OptionError(c, option, nbd::rep::kErrInvalid, request.status().message());
          return;
        }
        if (!IsOurExport(request->export_name)) {
          OptionError(c, option, nbd::rep::kErrUnknown,
                      StrCat("no export named '", request->export_name.substr(0, 256),
                             "'; this server exports '", options.export_name, "'"));
          return;
        }
        nbd::AppendInfoExport(c.out, option, export_info);
        // Sent whether asked for or not, as the spec permits: min 1 means
        // "any alignment", so a client that ignores it loses nothing.
        nbd::AppendInfoBlockSize(c.out, option, block_sizes);
        const auto& asked = request->info_types;
        if (std::find(asked.begin(), asked.end(), nbd::info::kName) != asked.end()) {
          nbd::AppendInfoName(c.out, option, options.export_name);
        }
        nbd::AppendOptionReply(c.out, option, nbd::rep::kAck);
        if (option == nbd::opt::kGo) EnterTransmission(c);
        return;
      }
      default: {
        const std::string_view name = nbd::OptionName(option);
        OptionError(c, option, nbd::rep::kErrUnsup,
                    StrCat(name == "unknown" ? StrCat("option ", option) : std::string(name),
                           " is not supported by this server"));
        return;
      }
    }
  }

  void OptionError(Connection& c, uint32_t option, uint32_t type, std::string_view message) {
    spdlog::debug("nbd: {}: {} answered {}: {}", c.peer, nbd::OptionName(option),
                  nbd::ReplyTypeName(type), message);
    message = message.substr(0, nbd::kMaxStringBytes);
    nbd::AppendOptionReply(c.out, option, type, nbd::AsBytes(message));
  }

  void EnterTransmission(Connection& c) {
    c.phase = Phase::kTransmission;
    spdlog::debug("nbd: {} opened export '{}'", c.peer, options.export_name);
  }

  // ---- transmission ----

  // One request (with its payload); false when more bytes are needed.
  bool StepRequest(Connection& c) {
    c.need = nbd::kRequestBytes;
    if (c.in.size() < c.need) return false;
    auto request = nbd::DecodeRequest(c.in.data());
    if (!request.ok()) {
      Drop(c, request.status().message());
      return true;
    }
    const nbd::Request& r = *request;
    if (r.type == nbd::cmd::kRead) {
      if (std::vector<nbd::Request> run = ReadRun(c); run.size() > 1) {
        ExecuteReads(c, run);
        return true;
      }
    }
    if (r.type == nbd::cmd::kWrite && r.length > options.max_request_bytes) {
      c.in.Consume(nbd::kRequestBytes);
      Reply(c, r, nbd::err::kInval,
            StrCat("length ", r.length, " exceeds max_request_bytes ", options.max_request_bytes));
      if (r.length <= nbd::kDosPayloadBytes) {
        c.discard = r.length;  // skip the payload, keep the connection
      } else {
        spdlog::warn("nbd: closing the connection from {}: a WRITE of {} bytes", c.peer,
                     r.length);
        c.finishing = true;
      }
      return true;
    }
    const size_t payload = r.type == nbd::cmd::kWrite ? r.length : 0;
    c.need = nbd::kRequestBytes + payload;
    if (c.in.size() < c.need) return false;
    Execute(c, r, c.in.data().subspan(nbd::kRequestBytes, payload));
    c.in.Consume(nbd::kRequestBytes + payload);
    c.need = nbd::kRequestBytes;
    return true;
  }

  // The READs at the front of `c.in` that run as one device call: complete,
  // consecutive, each valid, at most kMaxBatchedReads and max_request_bytes
  // of data together. A client with several READs in flight (fio's iodepth,
  // the kernel's readahead) gets them overlapped by a device that can.
  std::vector<nbd::Request> ReadRun(const Connection& c) const {
    std::vector<nbd::Request> run;
    uint64_t bytes = 0;
    std::string why;
    while (run.size() < kMaxBatchedReads &&
           c.in.size() >= (run.size() + 1) * nbd::kRequestBytes) {
      auto r = nbd::DecodeRequest(c.in.data().subspan(run.size() * nbd::kRequestBytes));
      if (!r.ok() || r->type != nbd::cmd::kRead || Validate(*r, &why) != nbd::err::kOk) break;
      if (!run.empty() && bytes + r->length > options.max_request_bytes) break;
      bytes += r->length;
      run.push_back(*r);
    }
    return run;
  }

  // Answers `reads`, the requests at the front of `c.in` (a ReadRun), with one
  // ReadMany, in order. If it fails, they run one by one, so that each gets
  // its own answer (EIO for those that fail again).
  void ExecuteReads(Connection& c, std::span<const nbd::Request> reads) {
    size_t bytes = 0;
    for (const nbd::Request& r : reads) bytes += nbd::kSimpleReplyBytes + r.length;
    const size_t at = c.out.size();
    c.out.reserve(at + bytes);  // no reallocation below: the ranges stay valid
    std::vector<BlockDevice::ReadRange> ranges;
    for (const nbd::Request& r : reads) {
      nbd::AppendSimpleReply(c.out, r.cookie, nbd::err::kOk);
      const size_t data = c.out.size();
      c.out.resize(data + r.length);
      ranges.push_back({r.offset, {c.out.data() + data, r.length}});
    }
    if (!device.ReadMany(ranges).ok()) {
      c.out.resize(at);
      for (const nbd::Request& r : reads) Execute(c, r, {});
    }
    c.in.Consume(reads.size() * nbd::kRequestBytes);
    c.need = nbd::kRequestBytes;
  }

  // The error a request gets before the device is called (0: none), and why.
  uint32_t Validate(const nbd::Request& r, std::string* why) const {
    const CommandRule* rule = FindCommandRule(r.type);
    if (rule == nullptr) {
      *why = "unknown command";
      return nbd::err::kInval;
    }
    if ((r.flags & ~rule->allowed_flags) != 0) {
      *why = fmt::format("flags {:#x} are not valid for this command", r.flags);
      return nbd::err::kInval;
    }
    if (rule->writes && options.read_only) {
      *why = "the export is read-only";
      return nbd::err::kPerm;
    }
    if (rule->length_limited && r.length > options.max_request_bytes) {
      *why = StrCat("length ", r.length, " exceeds max_request_bytes ", options.max_request_bytes);
      return nbd::err::kInval;
    }
    if (rule->past_end_error != 0 &&
        (r.offset > export_info.size || r.length > export_info.size - r.offset)) {
      *why = StrCat("[", r.offset, ", +", r.length, ") is outside the export of ",
                    export_info.size, " bytes");
      return rule->past_end_error;
    }
    return nbd::err::kOk;
  }

  // `payload` (a WRITE's data) is valid during the call only.
  void Execute(Connection& c, const nbd::Request& r, std::span<const std::byte> payload) {
    std::string why;
    if (const uint32_t error = Validate(r, &why); error != nbd::err::kOk) {
      Reply(c, r, error, why);
      return;
    }
    switch (r.type) {
      case nbd::cmd::kDisc:  // no reply; everything before it was answered
        c.finishing = true;
        return;
      case nbd::cmd::kRead: {
        const size_t at = c.out.size();
        nbd::AppendSimpleReply(c.out, r.cookie, nbd::err::kOk);
        c.out.resize(at + nbd::kSimpleReplyBytes + r.length);
        const Status st =
            device.Read(r.offset, {c.out.data() + at + nbd::kSimpleReplyBytes, r.length});
        if (!st.ok()) {
          c.out.resize(at);  // a failed simple READ carries no data
          ReplyDeviceResult(c, r, st);
        }
        return;
      }
      case nbd::cmd::kWrite:
        return ReplyDeviceResult(c, r, device.Write(r.offset, payload));
      case nbd::cmd::kFlush:
        return ReplyDeviceResult(c, r, device.Flush());
      case nbd::cmd::kTrim:
        return ReplyDeviceResult(c, r,
                                 r.length == 0 ? Status::Ok() : device.Trim(r.offset, r.length));
      case nbd::cmd::kWriteZeroes:
        return ReplyDeviceResult(c, r, WriteZeroes(r.offset, r.length));
    }
  }

  Status WriteZeroes(uint64_t offset, uint64_t length) {
    if (zeros.empty()) zeros.resize(std::min(kZeroChunk, options.max_request_bytes));
    while (length > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(length, zeros.size()));
      RAMPART_RETURN_IF_ERROR(device.Write(offset, {zeros.data(), n}));
      offset += n;
      length -= n;
    }
    return Status::Ok();
  }

  // Replies to a request the device executed: FUA flushes after a change;
  // device errors become EIO.
  void ReplyDeviceResult(Connection& c, const nbd::Request& r, Status st) {
    const bool changed = r.type == nbd::cmd::kWrite || r.type == nbd::cmd::kTrim ||
                         r.type == nbd::cmd::kWriteZeroes;
    if (st.ok() && changed && (r.flags & nbd::cmd_flag::kFua) != 0) st = device.Flush();
    if (st.ok()) {
      if (r.type != nbd::cmd::kRead) nbd::AppendSimpleReply(c.out, r.cookie, nbd::err::kOk);
      return;
    }
    spdlog::warn("nbd: {} [{}, +{}) for {}: device error: {}", nbd::CommandName(r.type),
                 r.offset, r.length, c.peer, st.ToString());
    nbd::AppendSimpleReply(c.out, r.cookie, nbd::err::kIo);
  }

  void Reply(Connection& c, const nbd::Request& r, uint32_t error, std::string_view why) {
    spdlog::debug("nbd: {}: {} (type {}) [{}, +{}) answered {}: {}", c.peer,
                  nbd::CommandName(r.type), r.type, r.offset, r.length, nbd::ErrorName(error),
                  why);
    nbd::AppendSimpleReply(c.out, r.cookie, error);
  }
};

// ---- NbdServer ----

namespace {

Status CheckOptions(const NbdServerOptions& o, const BlockDevice& device) {
  if (o.export_name.size() > nbd::kMaxStringBytes) {
    return InvalidArgument("nbd: export_name of ", o.export_name.size(),
                           " bytes is longer than the ", nbd::kMaxStringBytes, " NBD allows");
  }
  if (o.max_request_bytes < device.preferred_block_size() ||
      o.max_request_bytes > kMaxRequestLimit) {
    return InvalidArgument("nbd: max_request_bytes ", o.max_request_bytes,
                           " must be in [the device's preferred block size ",
                           device.preferred_block_size(), ", 1GiB]");
  }
  if (o.max_connections == 0) return InvalidArgument("nbd: max_connections must not be 0");
  if (device.size() == 0) return InvalidArgument("nbd: the device is empty");
  return Status::Ok();
}

// A listening non-blocking socket on host:port, or Unavailable.
Result<int> Listen(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Unavailable("nbd: cannot resolve ", host, ": ", gai_strerror(rc));
  }
  Status last = Unavailable("nbd: ", host, " has no address");
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Unavailable("nbd: socket: ", ErrnoText(errno));
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    last = Unavailable("nbd: cannot listen on ", FormatAddress(a->ai_addr, a->ai_addrlen), ": ",
                       ErrnoText(errno));
    close(fd);
  }
  freeaddrinfo(found);
  return last;
}

}  // namespace

Result<std::unique_ptr<NbdServer>> NbdServer::Start(const NbdServerOptions& options,
                                                    BlockDevice& device) {
  RAMPART_RETURN_IF_ERROR(CheckOptions(options, device));
  auto loop = std::make_unique<Loop>(options, device);
  loop->export_info = {.size = device.size(),
                       .transmission_flags = static_cast<uint16_t>(
                           kTransmissionFlags | (options.read_only ? nbd::tx::kReadOnly : 0))};
  loop->block_sizes = {.minimum = 1,
                       .preferred = device.preferred_block_size(),
                       .maximum = static_cast<uint32_t>(options.max_request_bytes)};
  RAMPART_RETURN_IF_ERROR(nbd::CheckBlockSizes(loop->block_sizes, device.size()));

  RAMPART_ASSIGN_OR_RETURN(loop->listen_fd, Listen(options.host, options.port));
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(loop->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoStatus("nbd: getsockname", errno);
  }
  const std::string address = FormatAddress(reinterpret_cast<sockaddr*>(&addr), len);

  loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (loop->epoll_fd < 0) return ErrnoStatus("nbd: epoll_create1", errno);
  loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (loop->wake_fd < 0) return ErrnoStatus("nbd: eventfd", errno);
  const std::pair<int, uint64_t> watched[] = {{loop->listen_fd, kListenerId},
                                              {loop->wake_fd, kWakeId}};
  for (const auto& [fd, id] : watched) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return ErrnoStatus("nbd: epoll_ctl", errno);
    }
  }

  std::unique_ptr<NbdServer> server(new NbdServer());
  server->port_ = static_cast<uint16_t>(
      addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                 : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port));
  server->uri_ = StrCat("nbd://", address, "/", options.export_name);
  server->loop_ = std::move(loop);
  server->thread_ = std::thread([l = server->loop_.get()] { l->Run(); });
  spdlog::info("nbd: serving export '{}' ({} bytes = {}, {}, preferred block {}, max request {}) "
               "on {}",
               options.export_name, device.size(), FormatSize(device.size()),
               options.read_only ? "read-only" : "read-write",
               FormatSize(device.preferred_block_size()), FormatSize(options.max_request_bytes),
               server->uri_);
  return server;
}

NbdServer::~NbdServer() { Stop(); }

void NbdServer::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (!thread_.joinable()) return;
  loop_->stop.store(true, std::memory_order_release);
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t r = write(loop_->wake_fd, &one, sizeof one);
  thread_.join();
  loop_.reset();  // closes the listener and the connections
}

}  // namespace rampart::storage
