// Helpers shared by the tcp backend's tests: fabrics in one thread, an echo
// server (in-process or in a child process), message patterns, raw sockets.
// Every wait is bounded in time.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "transport/tcp/tcp_fabric.h"
#include "transport/test_util.h"

namespace rampart::transport::tcp_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;

inline FabricOptions TcpOptions(size_t max_message_size = 64u << 20) {
  FabricOptions o;
  o.backend = Backend::kTcp;
  o.max_message_size = max_message_size;
  o.connect_timeout = 3s;
  return o;
}

inline IoSlice Slice(const Bytes& b) { return IoSlice{const_cast<std::byte*>(b.data()), b.size()}; }

// Deterministic bytes that depend on `seed` and the position.
inline Bytes Pattern(size_t n, uint64_t seed) {
  Bytes v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    v[i] = std::byte(static_cast<uint8_t>(x >> (8 * (i % 8))));
  }
  return v;
}

// A message that names itself: [u64 seq][Pattern(size - 8, seq)].
// REQUIRES: size >= 8.
inline Bytes SeqMessage(uint64_t seq, size_t size) {
  Bytes v = Pattern(size, seq);
  memcpy(v.data(), &seq, sizeof seq);
  return v;
}
// The seq of a SeqMessage, or ~0 when the bytes are not one.
inline uint64_t CheckSeqMessage(std::span<const std::byte> body) {
  if (body.size() < 8) return ~uint64_t{0};
  uint64_t seq;
  memcpy(&seq, body.data(), sizeof seq);
  Bytes want = SeqMessage(seq, body.size());
  return memcmp(want.data(), body.data(), body.size()) == 0 ? seq : ~uint64_t{0};
}

// Progresses every fabric until `done()` or `timeout`; returns done().
inline bool PumpUntil(std::initializer_list<Fabric*> fabrics, const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = 10s) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    int n = 0;
    for (Fabric* f : fabrics) n += f->Progress();
    if (n == 0) {
      for (Fabric* f : fabrics) f->Wait(1ms);
    }
  }
  return true;
}

// Progresses for `duration` regardless.
inline void PumpFor(std::initializer_list<Fabric*> fabrics, std::chrono::milliseconds duration) {
  (void)PumpUntil(fabrics, [] { return false; }, duration);
}

// Echoes every message back to its sender (contract-abiding: the copy lives
// until the completion runs). Records accepts and disconnects.
class EchoServer {
 public:
  explicit EchoServer(FabricOptions options = TcpOptions()) {
    auto f = Fabric::Create(options);
    if (!f.ok()) {
      status = f.status();
      return;
    }
    fabric = std::move(*f);
    fabric->SetAcceptHandler([this](std::shared_ptr<Endpoint> ep) { accepted.push_back(ep); });
    fabric->SetMessageHandler(
        [this](const std::shared_ptr<Endpoint>& ep, std::span<const std::byte> body) {
          ++messages;
          auto copy = std::make_shared<Bytes>(body.begin(), body.end());
          IoSlice s = Slice(*copy);
          if (!ep->Send({&s, 1}, [copy](Status) {}).ok()) ++send_errors;
        });
    fabric->SetDisconnectHandler([this](const std::shared_ptr<Endpoint>& ep, Status why) {
      disconnected.push_back(ep);
      why_disconnected.push_back(why);
    });
    status = fabric->Listen("127.0.0.1", 0);
  }
  uint16_t port() const { return fabric->listen_port(); }

  Status status;
  std::unique_ptr<Fabric> fabric;
  std::vector<std::shared_ptr<Endpoint>> accepted;
  std::vector<std::shared_ptr<Endpoint>> disconnected;
  std::vector<Status> why_disconnected;
  uint64_t messages = 0;
  uint64_t send_errors = 0;
};

// A connected client that records what arrives.
class Client {
 public:
  Client(uint16_t port, FabricOptions options = TcpOptions()) {
    auto f = Fabric::Create(options);
    if (!f.ok()) {
      status = f.status();
      return;
    }
    fabric = std::move(*f);
    fabric->SetMessageHandler([this](const std::shared_ptr<Endpoint>&,
                                     std::span<const std::byte> body) {
      if (on_message) {
        on_message(body);
      } else {
        received.emplace_back(body.begin(), body.end());
      }
    });
    fabric->SetDisconnectHandler([this](const std::shared_ptr<Endpoint>&, Status why) {
      why_disconnected.push_back(why);
    });
    auto ep_or = fabric->Connect("127.0.0.1", port);
    if (!ep_or.ok()) {
      status = ep_or.status();
      return;
    }
    ep = std::move(*ep_or);
  }
  // Sends a copy of `bytes` that lives until the completion.
  Status SendCopy(const Bytes& bytes) {
    auto copy = std::make_shared<Bytes>(bytes);
    IoSlice s = Slice(*copy);
    return ep->Send({&s, 1}, [copy](Status) {});
  }

  Status status;
  std::unique_ptr<Fabric> fabric;
  std::shared_ptr<Endpoint> ep;
  std::vector<Bytes> received;
  std::function<void(std::span<const std::byte>)> on_message;  // replaces `received`
  std::vector<Status> why_disconnected;
};

// The body of a child process: an echo server on an ephemeral port, announced
// through `pipe`. Exits 0 once a peer has disconnected, 12 after `limit`.
inline int RunEchoServerChild(testing::Pipe& pipe, std::chrono::seconds limit) {
  EchoServer server;
  if (!server.status.ok()) return 11;
  pipe.WriteU64(server.port());
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline && server.disconnected.empty()) server.fabric->Wait(50ms);
  return server.disconnected.empty() ? 12 : 0;
}

// ---- raw sockets (a peer that is not a fabric) ----

// A blocking TCP connection to 127.0.0.1:port, or -1.
inline int RawConnect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline bool RawSend(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Reads whatever is there without blocking into `into`. Returns false once
// the peer closed (EOF or reset).
inline bool RawDrain(int fd, Bytes& into) {
  std::byte buf[65536];
  while (true) {
    ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r > 0) {
      into.insert(into.end(), buf, buf + r);
      continue;
    }
    if (r == 0) return false;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  }
}

// An 8-byte frame header written field by field (independent of EncodeHeader).
inline Bytes RawHeader(uint8_t m0, uint8_t m1, uint8_t version, uint8_t kind, uint32_t length) {
  Bytes h = {std::byte{m0},
             std::byte{m1},
             std::byte{version},
             std::byte{kind},
             std::byte(static_cast<uint8_t>(length)),
             std::byte(static_cast<uint8_t>(length >> 8)),
             std::byte(static_cast<uint8_t>(length >> 16)),
             std::byte(static_cast<uint8_t>(length >> 24))};
  return h;
}

inline Bytes RawFrame(const std::string& body, uint8_t kind = 0) {
  Bytes f = RawHeader('R', 'P', 1, kind, static_cast<uint32_t>(body.size()));
  for (char c : body) f.push_back(std::byte(static_cast<uint8_t>(c)));
  return f;
}

// Removes the HELLO control frame an acceptor sends first on every
// connection (transport/peer_auth.cc) from the front of `got`; false when
// `got` does not start with one.
inline constexpr size_t kHelloBody = 24 + 32;  // control header, nonce
inline constexpr size_t kHelloFrameBytes = tcp::kHeaderBytes + kHelloBody;
inline bool StripHello(Bytes& got) {
  if (got.size() < kHelloFrameBytes) return false;
  Bytes expected_header = RawHeader('R', 'P', 1, 1, kHelloBody);
  if (!std::equal(expected_header.begin(), expected_header.end(), got.begin())) return false;
  uint32_t type = 0;
  std::memcpy(&type, got.data() + tcp::kHeaderBytes, sizeof type);
  if (type != 5) return false;  // ControlType::kAuthHello
  got.erase(got.begin(), got.begin() + kHelloFrameBytes);
  return true;
}

inline std::string AsString(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace rampart::transport::tcp_test
