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

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace rampart {

// True when a TCP connection to host:port completes within `timeout_ms`
// (tried for each address getaddrinfo returns, until one accepts). The
// connection is closed at once; nothing is sent. False when the host does not
// resolve.
bool AcceptsTcp(const std::string& host, uint16_t port, int timeout_ms);

// A resolved TCP address (IPv4 or IPv6).
struct TcpAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
};
// Every address `host` resolves to, with `port`; kNotFound when none.
Result<std::vector<TcpAddress>> ResolveTcp(const std::string& host, uint16_t port);

// One non-blocking connection attempt to an address: started by the
// constructor, looked at by Check() without blocking (or Await() with). The
// connection is closed as soon as it is known to be up; nothing is ever sent.
// Move-only.
class TcpConnectProbe {
 public:
  enum class State { kPending, kAccepted, kFailed };

  explicit TcpConnectProbe(const TcpAddress& address);
  TcpConnectProbe(TcpConnectProbe&& other) noexcept;
  TcpConnectProbe& operator=(TcpConnectProbe&& other) noexcept;
  ~TcpConnectProbe();

  // kAccepted once the connection came up, kFailed when it was refused or
  // could not start; kPending meanwhile (an unreachable host stays pending:
  // the caller gives up when it likes).
  State Check();
  // Check(), waiting up to `timeout_ms` while pending.
  State Await(int timeout_ms);

 private:
  State Poll(int timeout_ms);
  void Close();
  int fd_ = -1;
  State state_ = State::kFailed;
};

}  // namespace rampart
