#include "common/tcp_probe.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rampart {

bool AcceptsTcp(const std::string& host, uint16_t port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result) != 0) return false;
  bool ok = false;
  for (addrinfo* a = result; a != nullptr && !ok; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof error;
      ok = poll(&p, 1, timeout_ms) == 1 &&
           getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
    }
    close(fd);
  }
  freeaddrinfo(result);
  return ok;
}

TcpConnectProbe::TcpConnectProbe(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result) != 0) return;
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ >= 0) {
    if (connect(fd_, result->ai_addr, result->ai_addrlen) == 0) {
      state_ = State::kAccepted;
      Close();
    } else if (errno == EINPROGRESS) {
      state_ = State::kPending;
    } else {
      Close();
    }
  }
  freeaddrinfo(result);
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

TcpConnectProbe::State TcpConnectProbe::Check() {
  if (state_ != State::kPending) return state_;
  pollfd p{fd_, POLLOUT, 0};
  if (poll(&p, 1, 0) != 1) return state_;
  int error = 0;
  socklen_t len = sizeof error;
  const bool up = getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
  state_ = up ? State::kAccepted : State::kFailed;
  Close();
  return state_;
}

}  // namespace rampart
