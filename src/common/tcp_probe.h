// AcceptsTcp: whether something listens at host:port — the readiness and
// liveness probe of the commands that start or inspect processes (`rampart up`
// waits for its nodes with it; `rampart volume info` tells a node that is down
// from one recorded failed).
//
// Thread-safety: any thread; blocks the caller for at most about `timeout_ms`
// per address the host resolves to.
#pragma once

#include <cstdint>
#include <string>

namespace rampart {

// True when a TCP connection to host:port completes within `timeout_ms`
// (tried for each address getaddrinfo returns, until one accepts). The
// connection is closed at once; nothing is sent. False when the host does not
// resolve.
bool AcceptsTcp(const std::string& host, uint16_t port, int timeout_ms);

}  // namespace rampart
