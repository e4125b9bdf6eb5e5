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

}  // namespace
}  // namespace rampart
