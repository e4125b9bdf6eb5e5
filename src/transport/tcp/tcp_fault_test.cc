// The tcp backend against other processes and hostile input: an echo server
// in a child process, raw sockets sending malformed frames, and a peer killed
// with SIGKILL in the middle of a transfer. Every wait is bounded.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

#include "transport/tcp/tcp_test_util.h"

namespace rampart::transport {
namespace {

using namespace tcp_test;

Bytes Concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes Text(const std::string& s) {
  Bytes b;
  for (char c : s) b.push_back(std::byte(static_cast<uint8_t>(c)));
  return b;
}

// ---- two processes ----

TEST(TcpTwoProcessTest, EchoesThousandsOfMessagesWithManyInFlight) {
  testing::Pipe pipe;
  testing::ChildProcess child([&] { return RunEchoServerChild(pipe, std::chrono::seconds(60)); });
  ASSERT_TRUE(child.started());
  auto port = pipe.ReadU64(10s);
  ASSERT_TRUE(port.has_value()) << "the child did not announce its port";

  Client client(static_cast<uint16_t>(*port));
  ASSERT_TRUE(client.status.ok()) << client.status.ToString();
  constexpr uint64_t kCount = 5000;
  constexpr uint64_t kWindow = 128;
  uint64_t sent = 0, received = 0, completed = 0;
  bool corrupt = false;
  client.on_message = [&](std::span<const std::byte> body) {
    if (CheckSeqMessage(body) != received) corrupt = true;
    ++received;
  };
  // Mostly small messages, every 97th one 256 KiB.
  auto size_of = [](uint64_t i) -> size_t { return i % 97 == 96 ? 256u << 10 : 8 + (i * 7919) % 16384; };
  const auto deadline = Clock::now() + 60s;
  while (received < kCount && !corrupt && Clock::now() < deadline && client.ep->connected()) {
    while (sent < kCount && sent - received < kWindow) {
      auto msg = std::make_shared<Bytes>(SeqMessage(sent, size_of(sent)));
      IoSlice s = Slice(*msg);
      ASSERT_TRUE(client.ep->Send({&s, 1}, [msg, &completed](Status st) {
        completed += st.ok();
      }).ok());
      ++sent;
    }
    client.fabric->Wait(10ms);
  }
  EXPECT_FALSE(corrupt) << "echo out of order or corrupt near #" << received;
  EXPECT_EQ(received, kCount);
  EXPECT_EQ(completed, kCount);
  EXPECT_TRUE(client.why_disconnected.empty());

  // Closing our side lets the child see its peer go and exit cleanly.
  client.ep->Close();
  EXPECT_EQ(child.WaitExit(10s), 0);
}

TEST(TcpPeerFailureTest, PeerKilledMidTransferIsReportedAndLaterSendsFail) {
  testing::Pipe pipe;
  testing::ChildProcess child([&] { return RunEchoServerChild(pipe, std::chrono::seconds(60)); });
  auto port = pipe.ReadU64(10s);
  ASSERT_TRUE(port.has_value());
  Client client(static_cast<uint16_t>(*port));
  ASSERT_TRUE(client.status.ok()) << client.status.ToString();
  auto* tcp_ep = dynamic_cast<TcpEndpoint*>(client.ep.get());
  ASSERT_NE(tcp_ep, nullptr);

  // Warm up: the connection works.
  ASSERT_TRUE(client.SendCopy(Pattern(1000, 1)).ok());
  ASSERT_TRUE(PumpUntil({client.fabric.get()}, [&] { return client.received.size() == 1; }));

  // Large sends: far more than the socket buffers, so most of it is queued.
  auto big = std::make_shared<Bytes>(Pattern(16u << 20, 2));
  for (int i = 0; i < 4; ++i) {
    IoSlice s = Slice(*big);
    ASSERT_TRUE(client.ep->Send({&s, 1}, [big](Status) {}).ok());
  }
  Status flush_status;
  bool flushed = false;
  ASSERT_TRUE(client.ep->Flush([&](Status st) {
    flush_status = st;
    flushed = true;
  }).ok());
  for (int i = 0; i < 5; ++i) client.fabric->Progress();  // the transfer is under way
  ASSERT_GT(tcp_ep->queued_output_bytes(), 0u) << "the send must still be in flight";

  child.Kill();  // SIGKILL and reap
  const auto killed_at = Clock::now();
  ASSERT_TRUE(PumpUntil({client.fabric.get()}, [&] { return !client.why_disconnected.empty(); }, 5s))
      << "the disconnect handler did not fire within 5 s";
  EXPECT_LT(Clock::now() - killed_at, 5s);
  const Status& why = client.why_disconnected[0];
  EXPECT_EQ(why.code(), StatusCode::kUnavailable) << why.ToString();
  EXPECT_NE(why.message().find("peer 127.0.0.1:" + std::to_string(*port)), std::string_view::npos)
      << why.ToString();
  EXPECT_FALSE(client.ep->connected());

  ASSERT_TRUE(PumpUntil({client.fabric.get()}, [&] { return flushed; }, 2s));
  EXPECT_EQ(flush_status.code(), StatusCode::kUnavailable) << flush_status.ToString();
  Status later = client.SendCopy(Pattern(10, 3));
  EXPECT_EQ(later.code(), StatusCode::kUnavailable) << later.ToString();
  EXPECT_EQ(client.ep->Flush([](Status) {}).code(), StatusCode::kUnavailable);

  PumpFor({client.fabric.get()}, 100ms);
  EXPECT_EQ(client.why_disconnected.size(), 1u) << "reported exactly once";
  EXPECT_EQ(dynamic_cast<TcpFabric&>(*client.fabric).connection_count(), 0u);
}

// ---- malformed input ----

TEST(TcpMalformedTest, GarbageClosesOnlyThatConnection) {
  constexpr uint32_t kMax = 1u << 20;
  EchoServer server(TcpOptions(kMax));
  ASSERT_TRUE(server.status.ok());
  Client good(server.port(), TcpOptions(kMax));
  ASSERT_TRUE(good.status.ok());
  uint64_t seq = 0;
  auto echo_works = [&]() -> bool {
    const size_t before = good.received.size();
    Bytes msg = SeqMessage(seq++, 3000);
    if (!good.SendCopy(msg).ok()) return false;
    if (!PumpUntil({server.fabric.get(), good.fabric.get()},
                   [&] { return good.received.size() == before + 1; }, 5s)) {
      return false;
    }
    return good.received.back() == msg;
  };
  ASSERT_TRUE(echo_works());

  struct Case {
    const char* name;
    Bytes bytes;
    const char* reason;
    Bytes echoed;  // what the server answers before it closes
  };
  const Case cases[] = {
      {"http request", Text("GET / HTTP/1.1\r\nHost: rampart\r\n\r\n"), "bad magic 0x4745", {}},
      {"length over max", Concat({RawHeader('R', 'P', 1, 0, kMax + 1), Pattern(100, 1)}),
       "exceeds max_message_size", {}},
      {"length 4 GiB", RawHeader('R', 'P', 1, 0, 0xffffffffu), "exceeds max_message_size", {}},
      {"bad version", Concat({RawHeader('R', 'P', 9, 0, 4), Text("abcd")}),
       "unsupported frame version 9", {}},
      {"bad kind", Concat({RawHeader('R', 'P', 1, 7, 4), Text("abcd")}), "unknown frame kind 7",
       {}},
      {"valid frame then garbage", Concat({RawFrame("hello"), Text("garbage!garbage!")}),
       "bad magic 0x6761", RawFrame("hello")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t reports = server.why_disconnected.size();
    int fd = RawConnect(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, c.bytes.data(), c.bytes.size()));
    Bytes got;
    bool open = true;
    bool closed = PumpUntil({server.fabric.get(), good.fabric.get()}, [&] {
      if (open) open = RawDrain(fd, got);
      return !open && server.why_disconnected.size() == reports + 1;
    }, 5s);
    close(fd);
    ASSERT_TRUE(closed) << "the server did not close the bad connection";
    const Status& why = server.why_disconnected.back();
    EXPECT_EQ(why.code(), StatusCode::kUnavailable);
    EXPECT_NE(why.message().find("malformed frame"), std::string_view::npos) << why.ToString();
    EXPECT_NE(why.message().find(c.reason), std::string_view::npos) << why.ToString();
    EXPECT_TRUE(StripHello(got)) << "the server's HELLO did not come first";
    EXPECT_TRUE(got == c.echoed) << got.size() << " bytes came back";
    // The well-behaved client on the same server is unaffected.
    EXPECT_TRUE(good.ep->connected());
    ASSERT_TRUE(echo_works());
  }
  EXPECT_TRUE(good.why_disconnected.empty());
  EXPECT_EQ(server.why_disconnected.size(), std::size(cases));
  EXPECT_EQ(dynamic_cast<TcpFabric&>(*server.fabric).connection_count(), 1u);
}

// Frames cut at every possible place (byte by byte, then odd chunk sizes) are
// reassembled, and the answers are byte-for-byte the frames of the wire format.
TEST(TcpMalformedTest, FramesSplitAnywhereAreReassembled) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  int fd = RawConnect(server.port());
  ASSERT_GE(fd, 0);
  const Bytes stream = Concat({RawFrame("first"), RawFrame(""), RawFrame(std::string(100000, 'x')),
                               RawFrame("last")});
  Bytes got;
  size_t off = 0, step = 1;
  const auto deadline = Clock::now() + 10s;
  while (off < stream.size() && Clock::now() < deadline) {
    const size_t n = std::min(step, stream.size() - off);
    ASSERT_TRUE(RawSend(fd, stream.data() + off, n));
    off += n;
    server.fabric->Progress();
    ASSERT_TRUE(RawDrain(fd, got));
    step = off < 40 ? 1 : (step * 7 + 3) % 5000 + 1;
  }
  ASSERT_EQ(off, stream.size());
  bool open = true;
  ASSERT_TRUE(PumpUntil({server.fabric.get()}, [&] {
    open = open && RawDrain(fd, got);
    return got.size() >= kHelloFrameBytes + stream.size() || !open;
  }));
  close(fd);
  EXPECT_EQ(server.messages, 4u);
  EXPECT_TRUE(StripHello(got)) << "the server's HELLO did not come first";
  EXPECT_TRUE(got == stream) << got.size() << " of " << stream.size() << " bytes came back";
  PumpUntil({server.fabric.get()}, [&] { return !server.why_disconnected.empty(); }, 2s);
  ASSERT_EQ(server.why_disconnected.size(), 1u);
  EXPECT_NE(server.why_disconnected[0].message().find("closed the connection"),
            std::string_view::npos)
      << server.why_disconnected[0].ToString();
}

// A peer that connects, says nothing and leaves, and one that half-sends a
// frame and leaves: both are reported once and cost nothing else.
TEST(TcpMalformedTest, TruncatedFrameThenCloseIsAnOrdinaryDisconnect) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  const Bytes frame = RawFrame("0123456789");
  const Bytes truncated(frame.begin(), frame.begin() + 12);  // header + 4 of 10 body bytes
  for (const Bytes& prefix : {Bytes{}, truncated}) {
    const size_t reports = server.why_disconnected.size();
    int fd = RawConnect(server.port());
    ASSERT_GE(fd, 0);
    if (!prefix.empty()) {
      ASSERT_TRUE(RawSend(fd, prefix.data(), prefix.size()));
    }
    PumpFor({server.fabric.get()}, 20ms);
    close(fd);
    ASSERT_TRUE(PumpUntil({server.fabric.get()},
                          [&] { return server.why_disconnected.size() == reports + 1; }, 5s));
    EXPECT_NE(server.why_disconnected.back().message().find("closed the connection"),
              std::string_view::npos);
  }
  EXPECT_EQ(server.messages, 0u);
  EXPECT_EQ(dynamic_cast<TcpFabric&>(*server.fabric).connection_count(), 0u);
}

}  // namespace
}  // namespace rampart::transport
