// Test helpers: free TCP ports on 127.0.0.1 for in-process kv-nodes
// (kv/node_test.cc, txn/one_sided_test.cc). Test-only; header-only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace rampart::kv {

// A TCP socket on 127.0.0.1:port (0: any free port), optionally listening.
class BoundSocket {
 public:
  explicit BoundSocket(uint16_t port, bool listen_too = false) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    if (listen_too && listen(fd_, 1) != 0) return;
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~BoundSocket() { close(fd_); }
  uint16_t port() const { return port_; }  // 0: bind failed

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// A port p with p and p + 1 free right now.
inline uint16_t FreePortPair() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    BoundSocket first(0);
    if (first.port() == 0 || first.port() == 65535) continue;
    BoundSocket second(static_cast<uint16_t>(first.port() + 1));
    if (second.port() != 0) return first.port();
  }
  return 0;
}

}  // namespace rampart::kv
