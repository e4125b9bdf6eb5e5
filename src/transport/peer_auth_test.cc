// Peer authentication by the cluster secret (peer_auth.cc), on both
// backends: a server fabric on its own thread with a secret, clients with the
// right one, a wrong one, none, another cluster's name; raw sockets that skip
// the handshake (tcp).
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include "transport/fabric_internal.h"
#include "transport/tcp/tcp_test_util.h"
#include "transport/transport.h"

namespace rampart::transport {
namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "correct horse battery staple";

FabricOptions Options(Backend backend, std::string secret, std::string cluster = "authtest") {
  FabricOptions o;
  o.backend = backend;
  o.spin = 0us;
  o.connect_timeout = 1500ms;
  o.cluster_secret = std::move(secret);
  o.cluster_name = std::move(cluster);
  return o;
}

// An echo server on its own thread: counts the connections handed to its
// accept handler and echoes every message.
class EchoServer {
 public:
  explicit EchoServer(FabricOptions options) {
    std::promise<Status> listening;
    auto ready = listening.get_future();
    thread_ = std::thread([this, options, &listening] {
      auto fabric = Fabric::Create(options);
      if (!fabric.ok()) return listening.set_value(fabric.status());
      Fabric& f = **fabric;
      std::vector<std::shared_ptr<Endpoint>> connections;  // a server keeps what it accepts
      f.SetAcceptHandler([this, &connections](std::shared_ptr<Endpoint> ep) {
        connections.push_back(std::move(ep));
        ++accepted_;
      });
      f.SetMessageHandler([this](const std::shared_ptr<Endpoint>& ep, std::span<const std::byte> m) {
        ++messages_;
        auto copy = std::make_shared<std::vector<std::byte>>(m.begin(), m.end());
        IoSlice slice{copy->data(), copy->size()};
        (void)ep->Send(std::span<const IoSlice>(&slice, 1), [copy](Status) {});
      });
      if (Status st = f.Listen("127.0.0.1", 0); !st.ok()) return listening.set_value(st);
      port_ = f.listen_port();
      listening.set_value(Status());
      while (!stop_) f.Wait(20ms);
    });
    status_ = ready.get();
  }
  ~EchoServer() {
    stop_ = true;
    thread_.join();
  }
  const Status& status() const { return status_; }
  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }
  int messages() const { return messages_; }

 private:
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> messages_{0};
  uint16_t port_ = 0;
  Status status_;
};

// Connects a client with `options` and sends one message; returns what came
// back, or the error of Connect, or why the connection was lost.
Result<std::string> EchoThrough(const FabricOptions& options, uint16_t port) {
  RAMPART_ASSIGN_OR_RETURN(auto fabric, Fabric::Create(options));
  std::string got;
  Status lost;
  fabric->SetMessageHandler([&](const std::shared_ptr<Endpoint>&, std::span<const std::byte> m) {
    got.assign(reinterpret_cast<const char*>(m.data()), m.size());
  });
  fabric->SetDisconnectHandler([&](const std::shared_ptr<Endpoint>&, Status why) { lost = why; });
  RAMPART_ASSIGN_OR_RETURN(auto ep, fabric->Connect("127.0.0.1", port));
  std::string text = "ping";
  IoSlice slice{text.data(), text.size()};
  RAMPART_RETURN_IF_ERROR(ep->Send(std::span<const IoSlice>(&slice, 1), [](Status) {}));
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (got.empty() && lost.ok() && std::chrono::steady_clock::now() < deadline) {
    fabric->Wait(20ms);
  }
  if (!lost.ok()) return lost;
  if (got.empty()) return TimedOut("no echo");
  return got;
}

class PeerAuthTest : public ::testing::TestWithParam<Backend> {};

TEST_P(PeerAuthTest, TheSameSecretIsServed) {
  EchoServer server(Options(GetParam(), kSecret));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto echo = EchoThrough(Options(GetParam(), kSecret), server.port());
  ASSERT_TRUE(echo.ok()) << echo.status().ToString();
  EXPECT_EQ(*echo, "ping");
  EXPECT_EQ(server.accepted(), 1);
}

TEST_P(PeerAuthTest, NoSecretOnEitherSideIsServed) {
  EchoServer server(Options(GetParam(), ""));
  ASSERT_TRUE(server.status().ok());
  auto echo = EchoThrough(Options(GetParam(), ""), server.port());
  ASSERT_TRUE(echo.ok()) << echo.status().ToString();
  EXPECT_EQ(server.accepted(), 1);
}

TEST_P(PeerAuthTest, AWrongSecretIsRefusedAndTheServerServesOthers) {
  EchoServer server(Options(GetParam(), kSecret));
  ASSERT_TRUE(server.status().ok());
  auto wrong = EchoThrough(Options(GetParam(), "correct horse battery stapler"), server.port());
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kPermissionDenied) << wrong.status().ToString();
  auto right = EchoThrough(Options(GetParam(), kSecret), server.port());
  ASSERT_TRUE(right.ok()) << right.status().ToString();
  EXPECT_EQ(server.accepted(), 1);  // the refused peer never reached the accept handler
  EXPECT_EQ(server.messages(), 1);
}

TEST_P(PeerAuthTest, AnotherClusterWithTheSameSecretIsRefused) {
  EchoServer server(Options(GetParam(), kSecret, "cluster-a"));
  ASSERT_TRUE(server.status().ok());
  auto other = EchoThrough(Options(GetParam(), kSecret, "cluster-b"), server.port());
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(server.accepted(), 0);
}

TEST_P(PeerAuthTest, ASecretOnOneSideOnlyIsRefusedAtOnce) {
  EchoServer with(Options(GetParam(), kSecret));
  EchoServer without(Options(GetParam(), ""));
  ASSERT_TRUE(with.status().ok() && without.status().ok());
  // Without a secret Connect does not wait for the HELLO; the HELLO then
  // closes the connection, saying why, and the ping is never served.
  auto missing = EchoThrough(Options(GetParam(), ""), with.port());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("requires the cluster secret, and this process has none"),
            std::string::npos)
      << missing.status().ToString();
  auto extra = EchoThrough(Options(GetParam(), kSecret), without.port());
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(extra.status().message().find("serves without a cluster secret"), std::string::npos)
      << extra.status().ToString();
  // Both were told by the HELLO (the texts above), not by a timeout. The
  // server with the secret served nothing; the one without hands every
  // connection out (it asks for no proof) but got no ping either.
  EXPECT_EQ(with.accepted(), 0);
  EXPECT_EQ(with.messages() + without.messages(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, PeerAuthTest, ::testing::Values(Backend::kUcx, Backend::kTcp),
                         [](const auto& info) { return std::string(BackendName(info.param)); });

// ---- raw sockets against the tcp backend: peers that skip the handshake ----

using tcp_test::Bytes;
using tcp_test::RawConnect;
using tcp_test::RawDrain;
using tcp_test::RawFrame;
using tcp_test::RawSend;

// Reads until the server closes the connection (true) or `timeout` passes.
bool ClosedByServer(int fd, std::chrono::milliseconds timeout, Bytes& received) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) == 1 && !RawDrain(fd, received)) return true;
  }
  return false;
}

// A control frame as the tcp backend carries it: the frame header (kind 1),
// then the control header and the payload.
Bytes RawControl(ControlType type, uint64_t a, uint64_t b, size_t payload_bytes) {
  ControlHeader h{static_cast<uint32_t>(type), 0, a, b};
  Bytes frame = tcp_test::RawHeader('R', 'P', 1, 1,
                                    static_cast<uint32_t>(sizeof h + payload_bytes));
  const auto* p = reinterpret_cast<const std::byte*>(&h);
  frame.insert(frame.end(), p, p + sizeof h);
  frame.resize(frame.size() + payload_bytes, std::byte{0x5a});
  return frame;
}

bool Contains(const Bytes& bytes, std::string_view text) {
  return std::search(bytes.begin(), bytes.end(), text.begin(), text.end(),
                     [](std::byte b, char c) { return b == std::byte(c); }) != bytes.end();
}

TEST(PeerAuthRawTest, AMessageBeforeTheProofClosesTheConnectionUnserved) {
  EchoServer server(Options(Backend::kTcp, kSecret));
  ASSERT_TRUE(server.status().ok());
  const int fd = RawConnect(server.port());
  ASSERT_GE(fd, 0);
  const Bytes frame = RawFrame("ping");
  ASSERT_TRUE(RawSend(fd, frame.data(), frame.size()));
  Bytes received;
  EXPECT_TRUE(ClosedByServer(fd, 3s, received));
  close(fd);
  // What came back is the HELLO and the REFUSE (control frames), never the echo.
  EXPECT_TRUE(tcp_test::StripHello(received));
  EXPECT_TRUE(Contains(received, "sent a message before proving the cluster secret"));
  EXPECT_FALSE(Contains(received, "ping"));
  EXPECT_EQ(server.messages(), 0);
  EXPECT_EQ(server.accepted(), 0);
}

TEST(PeerAuthRawTest, APeerThatNeverProvesIsClosedAfterTheConnectTimeout) {
  EchoServer server(Options(Backend::kTcp, kSecret));
  ASSERT_TRUE(server.status().ok());
  const int fd = RawConnect(server.port());
  ASSERT_GE(fd, 0);
  Bytes received;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(ClosedByServer(fd, 10s, received));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1000ms);  // connect_timeout is 1.5 s
  close(fd);
  EXPECT_EQ(server.accepted(), 0);
}

// Anything but the handshake from a peer that has not proven the secret
// ends its connection, unserved, with a REFUSE that says why.
TEST(PeerAuthRawTest, EverythingButTheHandshakeBeforeTheProofIsRefused) {
  EchoServer server(Options(Backend::kTcp, kSecret));
  ASSERT_TRUE(server.status().ok());
  const struct {
    const char* name;
    Bytes frame;
    const char* reason;
  } cases[] = {
      {"a channel open", RawControl(ControlType::kChannelOpen, 1, 4096, 64),
       "sent a control message before proving the cluster secret"},
      {"a HELLO to the acceptor", RawControl(ControlType::kAuthHello, 1, 1, 32),
       "sent an unexpected HELLO"},
      {"a PROOF of the wrong size", RawControl(ControlType::kAuthProof, 0, 0, 10),
       "sent an unexpected PROOF"},
      {"a big message", tcp_test::RawHeader('R', 'P', 1, 0, 1 << 20), ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const int fd = RawConnect(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, c.frame.data(), c.frame.size()));
    Bytes received;
    EXPECT_TRUE(ClosedByServer(fd, 3s, received));
    close(fd);
    EXPECT_TRUE(tcp_test::StripHello(received));
    if (*c.reason != '\0') EXPECT_TRUE(Contains(received, c.reason));
  }
  EXPECT_EQ(server.accepted(), 0);
  EXPECT_EQ(server.messages(), 0);
}

// A peer that answers the HELLO with a REFUSE of its own (it has no secret,
// or another one) is closed at once, not kept until the handshake times out.
TEST(PeerAuthRawTest, AREFUSEFromThePeerClosesTheConnection) {
  FabricOptions options = Options(Backend::kTcp, kSecret);
  options.connect_timeout = 20s;  // a close by the timeout would come far too late
  EchoServer server(options);
  ASSERT_TRUE(server.status().ok());
  const int fd = RawConnect(server.port());
  ASSERT_GE(fd, 0);
  const Bytes refuse = RawControl(ControlType::kAuthRefuse, 0, 0, 8);
  ASSERT_TRUE(RawSend(fd, refuse.data(), refuse.size()));
  Bytes received;
  EXPECT_TRUE(ClosedByServer(fd, 10s, received));
  close(fd);
  EXPECT_EQ(server.accepted(), 0);
}

}  // namespace
}  // namespace rampart::transport
