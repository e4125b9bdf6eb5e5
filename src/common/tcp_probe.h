// AcceptsTcp: whether something listens at host:port — the readiness and
// liveness probe of the commands that start or inspect processes (`rampart up`
// waits for its nodes with it; `rampart volume info` tells a node that is down
// from one recorded failed). TcpConnectProbe: the same without blocking, for
// event loops (the transaction client probes a partition it cannot reach).
//
// Thread-safety: AcceptsTcp any thread; it blocks the caller for at most
// about `timeout_ms` per address the host resolves to. A TcpConnectProbe
// belongs to one thread.
#pragma once

#include <cstdint>
#include <string>

namespace rampart {

// True when a TCP connection to host:port completes within `timeout_ms`
// (tried for each address getaddrinfo returns, until one accepts). The
// connection is closed at once; nothing is sent. False when the host does not
// resolve.
bool AcceptsTcp(const std::string& host, uint16_t port, int timeout_ms);

// One non-blocking connection attempt to host:port (IPv4): started by the
// constructor, looked at by Check() without blocking. The connection is
// closed as soon as it is known to be up; nothing is ever sent. Move-only.
class TcpConnectProbe {
 public:
  enum class State { kPending, kAccepted, kFailed };

  TcpConnectProbe(const std::string& host, uint16_t port);
  TcpConnectProbe(TcpConnectProbe&& other) noexcept;
  TcpConnectProbe& operator=(TcpConnectProbe&& other) noexcept;
  ~TcpConnectProbe();

  // kAccepted once the connection came up, kFailed when it was refused,
  // could not start or the host does not resolve; kPending meanwhile (an
  // unreachable host stays pending: the caller gives up when it likes).
  State Check();

 private:
  void Close();
  int fd_ = -1;
  State state_ = State::kFailed;
};

}  // namespace rampart
