#include "common/tcp_probe.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rampart {
namespace {

// A listening socket on a free loopback port; closed by the destructor.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    socklen_t len = sizeof addr;
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

TEST(AcceptsTcpTest, TrueWhileListeningFalseAfterClose) {
  Listener l;
  EXPECT_TRUE(AcceptsTcp("127.0.0.1", l.port(), 500));
  EXPECT_TRUE(AcceptsTcp("localhost", l.port(), 500));
  l.Close();
  EXPECT_FALSE(AcceptsTcp("127.0.0.1", l.port(), 500));
}

// Polls a probe until it settles (bounded: loopback answers at once).
TcpConnectProbe::State Settle(TcpConnectProbe& probe) {
  for (int i = 0; i < 1000 && probe.Check() == TcpConnectProbe::State::kPending; ++i) {
    usleep(1000);
  }
  return probe.Check();
}

TEST(TcpConnectProbeTest, AcceptedWhileListeningFailedAfterClose) {
  Listener l;
  auto address = ResolveTcp("127.0.0.1", l.port());
  ASSERT_TRUE(address.ok());
  TcpConnectProbe up(address->front());
  EXPECT_EQ(Settle(up), TcpConnectProbe::State::kAccepted);
  EXPECT_EQ(up.Check(), TcpConnectProbe::State::kAccepted);  // settled states stay
  l.Close();
  TcpConnectProbe down(address->front());
  EXPECT_EQ(down.Await(5000), TcpConnectProbe::State::kFailed);
  TcpConnectProbe moved = std::move(down);
  EXPECT_EQ(moved.Check(), TcpConnectProbe::State::kFailed);
  EXPECT_EQ(ResolveTcp("no-such-host.invalid", 1).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace rampart
