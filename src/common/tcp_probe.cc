#include "common/tcp_probe.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace rampart {

Result<std::vector<TcpAddress>> ResolveTcp(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result);
  if (rc != 0) return NotFound("cannot resolve ", host, ": ", gai_strerror(rc));
  std::vector<TcpAddress> out;
  for (addrinfo* a = result; a != nullptr; a = a->ai_next) {
    TcpAddress t;
    std::memcpy(&t.addr, a->ai_addr, a->ai_addrlen);
    t.len = a->ai_addrlen;
    out.push_back(t);
  }
  freeaddrinfo(result);
  if (out.empty()) return NotFound("cannot resolve ", host);
  return out;
}

bool AcceptsTcp(const std::string& host, uint16_t port, int timeout_ms) {
  const Result<std::vector<TcpAddress>> addresses = ResolveTcp(host, port);
  if (!addresses.ok()) return false;
  for (const TcpAddress& a : *addresses) {
    if (TcpConnectProbe(a).Await(timeout_ms) == TcpConnectProbe::State::kAccepted) return true;
  }
  return false;
}

TcpConnectProbe::TcpConnectProbe(const TcpAddress& address) {
  fd_ = socket(address.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) return;
  if (connect(fd_, reinterpret_cast<const sockaddr*>(&address.addr), address.len) == 0) {
    state_ = State::kAccepted;
    Close();
  } else if (errno == EINPROGRESS) {
    state_ = State::kPending;
  } else {
    Close();
  }
}

TcpConnectProbe::TcpConnectProbe(TcpConnectProbe&& other) noexcept
    : fd_(other.fd_), state_(other.state_) {
  other.fd_ = -1;
}

TcpConnectProbe& TcpConnectProbe::operator=(TcpConnectProbe&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    state_ = other.state_;
    other.fd_ = -1;
  }
  return *this;
}

TcpConnectProbe::~TcpConnectProbe() { Close(); }

void TcpConnectProbe::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

TcpConnectProbe::State TcpConnectProbe::Check() { return Poll(0); }

TcpConnectProbe::State TcpConnectProbe::Await(int timeout_ms) { return Poll(timeout_ms); }

TcpConnectProbe::State TcpConnectProbe::Poll(int timeout_ms) {
  if (state_ != State::kPending) return state_;
  pollfd p{fd_, POLLOUT, 0};
  if (poll(&p, 1, timeout_ms) != 1) return state_;
  int error = 0;
  socklen_t len = sizeof error;
  const bool up = getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
  state_ = up ? State::kAccepted : State::kFailed;
  Close();
  return state_;
}

}  // namespace rampart
