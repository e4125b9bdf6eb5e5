// The tcp backend in one process: two fabrics progressed alternately from the
// test thread. Faults, malformed input and two-process tests are in
// tcp_fault_test.cc.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

#include "transport/tcp/tcp_test_util.h"

namespace rampart::transport {
namespace {

using namespace tcp_test;

// ---- wire format and buffers ----

TEST(TcpFrameTest, HeaderLayoutIsRpVersionKindLittleEndianLength) {
  std::byte h[tcp::kHeaderBytes];
  tcp::EncodeHeader(tcp::FrameKind::kControl, 0x01020304u, h);
  EXPECT_EQ(Bytes(h, h + 8), RawHeader('R', 'P', 1, 1, 0x01020304u));

  auto ok = tcp::DecodeHeader(h, 1u << 30);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->kind, tcp::FrameKind::kControl);
  EXPECT_EQ(ok->length, 0x01020304u);
}

TEST(TcpFrameTest, MalformedHeadersAreCorruptionWithAReason) {
  struct Case {
    Bytes header;
    const char* reason;
  } cases[] = {
      {RawHeader('G', 'E', 1, 0, 0), "bad magic 0x4745"},
      {RawHeader('P', 'R', 1, 0, 0), "bad magic 0x5052"},
      {RawHeader('R', 'P', 2, 0, 0), "unsupported frame version 2"},
      {RawHeader('R', 'P', 1, 2, 0), "unknown frame kind 2"},
      {RawHeader('R', 'P', 1, 0, 1001), "frame body of 1001 bytes exceeds max_message_size 1000"},
      {RawHeader('R', 'P', 1, 0, 0xffffffffu), "exceeds max_message_size"},
  };
  for (const Case& c : cases) {
    auto r = tcp::DecodeHeader(c.header.data(), 1000);
    ASSERT_FALSE(r.ok()) << c.reason;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
    EXPECT_NE(r.status().message().find(c.reason), std::string_view::npos) << r.status().ToString();
  }
  EXPECT_TRUE(tcp::DecodeHeader(RawHeader('R', 'P', 1, 0, 1000).data(), 1000).ok());
}

TEST(TcpByteQueueTest, FifoWithGrowthAndCompaction) {
  tcp::ByteQueue q;
  for (uint64_t round = 0; round < 50; ++round) {
    Bytes in = Pattern(10000 + round * 997, round);
    ASSERT_TRUE(q.Reserve(in.size()));
    memcpy(q.tail(), in.data(), in.size());
    q.Commit(in.size());
    ASSERT_GE(q.size(), in.size());
    // Consume all but the last bytes of this round; they must survive moves.
    Bytes keep(q.front() + q.size() - 100, q.front() + q.size());
    q.Consume(q.size() - 100);
    ASSERT_EQ(Bytes(q.front(), q.front() + 100), keep);
  }
  q.Consume(q.size());
  EXPECT_TRUE(q.empty());
  q.ShrinkIfIdle(0);
  EXPECT_EQ(q.capacity(), 0u);
}

TEST(TcpByteQueueTest, PinnedBytesNeverMoveEvenWhenNested) {
  tcp::ByteQueue q;
  ASSERT_TRUE(q.Reserve(4096));
  Bytes a = Pattern(4096, 1);
  memcpy(q.tail(), a.data(), a.size());
  q.Commit(a.size());

  // Depth 1 hands out `a` and consumes it.
  const std::byte* a_at = q.front();
  q.Pin();
  q.Consume(a.size());
  // More input arrives and forces growth: `a` must stay readable.
  Bytes b = Pattern(1 << 20, 2);
  ASSERT_TRUE(q.Reserve(b.size()));
  memcpy(q.tail(), b.data(), b.size());
  q.Commit(b.size());
  EXPECT_EQ(memcmp(a_at, a.data(), a.size()), 0);
  EXPECT_EQ(q.retired_buffers(), 1u);

  // Depth 2 hands out `b` and, nested, more growth happens.
  const std::byte* b_at = q.front();
  q.Pin();
  q.Consume(b.size());
  Bytes c = Pattern(3 << 20, 3);
  ASSERT_TRUE(q.Reserve(c.size()));
  memcpy(q.tail(), c.data(), c.size());
  q.Commit(c.size());
  EXPECT_EQ(q.retired_buffers(), 2u);
  EXPECT_EQ(memcmp(a_at, a.data(), a.size()), 0);
  EXPECT_EQ(memcmp(b_at, b.data(), b.size()), 0);

  q.Unpin();  // depth 2 done: its buffer goes, depth 1's stays
  EXPECT_EQ(q.retired_buffers(), 1u);
  EXPECT_EQ(memcmp(a_at, a.data(), a.size()), 0);
  q.Unpin();
  EXPECT_EQ(q.retired_buffers(), 0u);
  ASSERT_EQ(q.size(), c.size());
  EXPECT_EQ(memcmp(q.front(), c.data(), c.size()), 0);
}

// ---- set-up path ----

TEST(TcpFabricTest, ListenConnectAcceptAndPeerNames) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok()) << server.status.ToString();
  EXPECT_EQ(server.fabric->backend(), Backend::kTcp);
  EXPECT_NE(server.port(), 0);
  Status again = server.fabric->Listen("127.0.0.1", 0);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.ToString();

  Client client(server.port());
  ASSERT_TRUE(client.status.ok()) << client.status.ToString();
  EXPECT_EQ(client.ep->peer_name(), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_TRUE(client.ep->connected());
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return server.accepted.size() == 1; }));
  EXPECT_EQ(server.accepted[0]->peer_name().rfind("127.0.0.1:", 0), 0u)
      << server.accepted[0]->peer_name();
  EXPECT_NE(server.accepted[0]->peer_name(), client.ep->peer_name());
  EXPECT_TRUE(server.accepted[0]->connected());
  EXPECT_EQ(server.fabric->registration_cache_stats().hits, 0u);
}

TEST(TcpFabricTest, ConnectRefusedSaysWhereAndWhy) {
  // A port that was free a moment ago and has no listener now.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const uint16_t port = ntohs(a.sin_port);
  close(fd);

  auto fabric = Fabric::Create(TcpOptions());
  ASSERT_TRUE(fabric.ok());
  auto ep = (*fabric)->Connect("127.0.0.1", port);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(ep.status().message(),
            "connect 127.0.0.1:" + std::to_string(port) + ": Connection refused");
}

// ---- messages ----

TEST(TcpFabricTest, EchoesMessagesOfEverySize) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok()) << client.status.ToString();

  const size_t sizes[] = {0, 1, 4096, 1u << 20, 16u << 20};
  // One at a time, then all in flight at once.
  for (int pass = 0; pass < 2; ++pass) {
    client.received.clear();
    std::vector<Bytes> sent;
    for (size_t i = 0; i < std::size(sizes); ++i) {
      sent.push_back(Pattern(sizes[i], 100 * pass + i));
      ASSERT_TRUE(client.SendCopy(sent.back()).ok());
      if (pass == 0) {
        ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                              [&] { return client.received.size() == sent.size(); }, 30s))
            << "size " << sizes[i];
      }
    }
    ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                          [&] { return client.received.size() == sent.size(); }, 30s));
    for (size_t i = 0; i < sent.size(); ++i) {
      ASSERT_EQ(client.received[i].size(), sent[i].size()) << "pass " << pass << " #" << i;
      EXPECT_TRUE(client.received[i] == sent[i]) << "pass " << pass << " #" << i;
    }
  }
  EXPECT_EQ(server.messages, 2 * std::size(sizes));
  EXPECT_EQ(server.send_errors, 0u);
}

TEST(TcpFabricTest, GatherListsArriveAsOneMessage) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok());

  // A few slices of odd sizes (one empty), and a list longer than the number
  // of iovecs one sendmsg() takes.
  std::vector<std::vector<size_t>> lists = {{3, 0, 1000, 65536, 7}, {}};
  for (size_t i = 0; i < 3 * tcp::kMaxIov; ++i) lists[1].push_back(1 + (i * 37) % 300);
  std::vector<Bytes> expected;
  for (size_t l = 0; l < lists.size(); ++l) {
    std::vector<Bytes> parts;
    Bytes whole;
    for (size_t i = 0; i < lists[l].size(); ++i) {
      parts.push_back(Pattern(lists[l][i], 1000 * l + i));
      whole.insert(whole.end(), parts.back().begin(), parts.back().end());
    }
    std::vector<IoSlice> slices;
    for (const Bytes& p : parts) slices.push_back(Slice(p));
    bool done = false;
    ASSERT_TRUE(client.ep->Send(slices, [&](Status st) {
      EXPECT_TRUE(st.ok());
      done = true;
    }).ok());
    expected.push_back(whole);
    // `parts` must stay valid until `done`.
    ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()}, [&] { return done; }));
  }
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return client.received.size() == expected.size(); }));
  EXPECT_TRUE(client.received[0] == expected[0]);
  EXPECT_TRUE(client.received[1] == expected[1]);
}

TEST(TcpFabricTest, ManyMessagesInFlightArriveInOrder) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok());
  uint64_t next = 0;
  bool bad = false;
  client.on_message = [&](std::span<const std::byte> body) {
    uint64_t seq = CheckSeqMessage(body);
    if (seq != next) bad = true;
    ++next;
  };
  constexpr uint64_t kCount = 20000;
  int completions = 0;
  std::vector<Bytes> msgs;
  msgs.reserve(kCount);
  for (uint64_t i = 0; i < kCount; ++i) {
    msgs.push_back(SeqMessage(i, 8 + (i * 131) % 3000));
    IoSlice s = Slice(msgs.back());
    ASSERT_TRUE(client.ep->Send({&s, 1}, [&](Status st) { completions += st.ok(); }).ok());
  }
  EXPECT_EQ(completions, 0) << "completions must never run inside Send()";
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return next == kCount || bad; }, 60s))
      << "received " << next;
  EXPECT_FALSE(bad) << "message out of order or corrupt near #" << next;
  EXPECT_EQ(completions, static_cast<int>(kCount));
}

TEST(TcpFabricTest, OversizedMessagesAreRefusedWithoutCompletion) {
  constexpr size_t kMax = 1u << 20;
  EchoServer server(TcpOptions(kMax));
  ASSERT_TRUE(server.status.ok());
  Client client(server.port(), TcpOptions(kMax));
  ASSERT_TRUE(client.status.ok());

  Bytes too_big = Pattern(kMax + 1, 1);
  int called = 0;
  IoSlice s = Slice(too_big);
  Status st = client.ep->Send({&s, 1}, [&](Status) { ++called; });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  // The same total as a gather list.
  Bytes half = Pattern(kMax / 2 + 1, 2);
  IoSlice halves[] = {Slice(half), Slice(half)};
  st = client.ep->Send(halves, [&](Status) { ++called; });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();

  Bytes max = Pattern(kMax, 3);
  ASSERT_TRUE(client.SendCopy(max).ok());
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return client.received.size() == 1; }));
  EXPECT_TRUE(client.received[0] == max);
  EXPECT_EQ(called, 0);
  EXPECT_TRUE(client.ep->connected());
}

TEST(TcpFabricTest, ReceiverClosesOnAFrameAboveItsOwnLimit) {
  EchoServer server(TcpOptions(1u << 20));
  ASSERT_TRUE(server.status.ok());
  Client client(server.port(), TcpOptions(4u << 20));
  ASSERT_TRUE(client.status.ok());
  ASSERT_TRUE(client.SendCopy(Pattern(2u << 20, 1)).ok());
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()}, [&] {
    return server.why_disconnected.size() == 1 && client.why_disconnected.size() == 1;
  }));
  EXPECT_EQ(server.why_disconnected[0].code(), StatusCode::kUnavailable);
  EXPECT_NE(server.why_disconnected[0].message().find("exceeds max_message_size"),
            std::string_view::npos)
      << server.why_disconnected[0].ToString();
  EXPECT_EQ(client.why_disconnected[0].code(), StatusCode::kUnavailable);
  EXPECT_NE(client.why_disconnected[0].message().find("closed the connection"),
            std::string_view::npos)
      << client.why_disconnected[0].ToString();
  EXPECT_EQ(client.SendCopy(Pattern(10, 1)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(server.messages, 0u);
}

TEST(TcpFabricTest, ControlFramesNeverReachTheUserHandler) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok());
  auto base = std::dynamic_pointer_cast<EndpointBase>(client.ep);
  ASSERT_NE(base, nullptr);
  Bytes control = Pattern(3, 9);  // too short for any control type: ignored
  IoSlice s = Slice(control);
  bool control_done = false;
  ASSERT_TRUE(base->SendControl({&s, 1}, [&](Status st) { control_done = st.ok(); }).ok());
  Bytes hello = Pattern(5, 5);
  ASSERT_TRUE(client.SendCopy(hello).ok());
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return client.received.size() == 1 && control_done; }));
  PumpFor({server.fabric.get(), client.fabric.get()}, 50ms);
  EXPECT_EQ(server.messages, 1u);
  ASSERT_EQ(client.received.size(), 1u);
  EXPECT_TRUE(client.received[0] == hello);
}

// A message handler that re-enters Progress (as a blocking set-up call made
// from a handler does) sees later messages of the same connection delivered
// once each, in order, and its own message stays valid meanwhile.
TEST(TcpFabricTest, HandlersMayReenterProgress) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok());
  Fabric* fabrics[] = {server.fabric.get(), client.fabric.get()};

  constexpr uint64_t kCount = 60;
  std::vector<uint64_t> order;
  int depth = 0, max_depth = 0;
  bool body_changed = false;
  server.fabric->SetMessageHandler([&](const std::shared_ptr<Endpoint>&,
                                       std::span<const std::byte> body) {
    order.push_back(CheckSeqMessage(body));
    if (depth >= 3 || order.size() >= kCount) return;
    Bytes saved(body.begin(), body.end());
    const size_t want = order.size() + 5;
    ++depth;
    max_depth = std::max(max_depth, depth);
    const auto deadline = Clock::now() + 5s;
    while (order.size() < want && Clock::now() < deadline) {
      for (Fabric* f : fabrics) f->Progress();
    }
    --depth;
    if (Bytes(body.begin(), body.end()) != saved) body_changed = true;
  });
  // Large messages, so nested reads grow the receive buffer under the pins.
  for (uint64_t i = 0; i < kCount; ++i) ASSERT_TRUE(client.SendCopy(SeqMessage(i, 200000)).ok());
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return order.size() >= kCount; }, 30s))
      << order.size();
  PumpFor({server.fabric.get(), client.fabric.get()}, 20ms);
  EXPECT_GE(max_depth, 2);
  EXPECT_FALSE(body_changed);
  ASSERT_EQ(order.size(), kCount);
  for (uint64_t i = 0; i < kCount; ++i) EXPECT_EQ(order[i], i);
}

// ---- completions, flush and close ----

TEST(TcpFabricTest, CompletionsAreDeferredAndFlushWaitsForTheQueue) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok());
  auto* tcp_ep = dynamic_cast<TcpEndpoint*>(client.ep.get());
  ASSERT_NE(tcp_ep, nullptr);

  // A flush with nothing queued still completes later, not inline.
  bool empty_flush = false;
  ASSERT_TRUE(client.ep->Flush([&](Status st) { empty_flush = st.ok(); }).ok());
  EXPECT_FALSE(empty_flush);
  client.fabric->Progress();
  EXPECT_TRUE(empty_flush);

  // More than the socket buffers hold: the rest waits in the output queue.
  Bytes big = Pattern(48u << 20, 4);
  bool sent = false;
  IoSlice s = Slice(big);
  ASSERT_TRUE(client.ep->Send({&s, 1}, [&](Status st) { sent = st.ok(); }).ok());
  EXPECT_FALSE(sent);
  EXPECT_GT(tcp_ep->queued_output_bytes(), 0u);
  bool flushed = false;
  size_t queued_at_flush = ~size_t{0};
  ASSERT_TRUE(client.ep->Flush([&](Status st) {
    EXPECT_TRUE(st.ok()) << st.ToString();
    flushed = true;
    queued_at_flush = tcp_ep->queued_output_bytes();
  }).ok());
  client.fabric->Progress();
  EXPECT_TRUE(sent) << "Send completes once the bytes are copied";
  EXPECT_FALSE(flushed) << "the peer has not read anything yet";
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()}, [&] { return flushed; }, 30s));
  EXPECT_EQ(queued_at_flush, 0u);
  EXPECT_EQ(client.ep->Fence().code(), StatusCode::kOk);
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return client.received.size() == 1; }, 30s));
  EXPECT_TRUE(client.received[0] == big);
}

TEST(TcpFabricTest, CloseFromOurSideReportsOnlyToThePeer) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok());
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return server.accepted.size() == 1; }));

  Bytes big = Pattern(32u << 20, 1);
  IoSlice s = Slice(big);
  ASSERT_TRUE(client.ep->Send({&s, 1}, [](Status) {}).ok());
  Status flush = Status();
  bool flushed = false;
  ASSERT_TRUE(client.ep->Flush([&](Status st) {
    flush = st;
    flushed = true;
  }).ok());
  client.ep->Close();
  client.ep->Close();  // idempotent
  EXPECT_FALSE(client.ep->connected());
  EXPECT_EQ(client.SendCopy(Pattern(1, 1)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(client.ep->Flush([](Status) {}).code(), StatusCode::kUnavailable);
  EXPECT_EQ(client.ep->Fence().code(), StatusCode::kUnavailable);

  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return flushed && server.why_disconnected.size() == 1; }));
  EXPECT_EQ(flush.code(), StatusCode::kAborted) << flush.ToString();
  PumpFor({server.fabric.get(), client.fabric.get()}, 50ms);
  EXPECT_TRUE(client.why_disconnected.empty());
  ASSERT_EQ(server.why_disconnected.size(), 1u);  // exactly once
  EXPECT_EQ(server.disconnected[0], server.accepted[0]);
  const Status& why = server.why_disconnected[0];
  EXPECT_EQ(why.code(), StatusCode::kUnavailable);
  EXPECT_NE(why.message().find("peer 127.0.0.1:"), std::string_view::npos) << why.ToString();
  EXPECT_NE(why.message().find("closed the connection"), std::string_view::npos) << why.ToString();
  EXPECT_FALSE(server.accepted[0]->connected());
  Bytes one = Pattern(1, 1);
  IoSlice os = Slice(one);
  EXPECT_EQ(server.accepted[0]->Send({&os, 1}, [](Status) {}).code(), StatusCode::kUnavailable);
  EXPECT_EQ(dynamic_cast<TcpFabric&>(*server.fabric).connection_count(), 0u);
}

TEST(TcpFabricTest, EndpointsOutliveTheirFabric) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok());
  ASSERT_TRUE(PumpUntil({server.fabric.get(), client.fabric.get()},
                        [&] { return server.accepted.size() == 1; }));
  std::shared_ptr<Endpoint> orphan = server.accepted[0];
  server.accepted.clear();
  bool flushed = false;
  ASSERT_TRUE(orphan->Flush([&](Status) { flushed = true; }).ok());
  server.fabric.reset();
  EXPECT_FALSE(orphan->connected());
  Bytes one = Pattern(1, 1);
  IoSlice s = Slice(one);
  EXPECT_EQ(orphan->Send({&s, 1}, [](Status) {}).code(), StatusCode::kUnavailable);
  orphan->Close();
  ASSERT_TRUE(PumpUntil({client.fabric.get()}, [&] { return !client.why_disconnected.empty(); }));
  EXPECT_EQ(client.why_disconnected[0].code(), StatusCode::kUnavailable);
  EXPECT_FALSE(flushed) << "the fabric is gone; nothing may run its completions";
}

// ---- what this backend does not have ----

TEST(TcpFabricTest, OneSidedOperationsAreNotSupported) {
  EchoServer server;
  ASSERT_TRUE(server.status.ok());
  Client client(server.port());
  ASSERT_TRUE(client.status.ok());
  Endpoint& ep = *client.ep;
  auto region = client.fabric->Allocate(4096);
  ASSERT_TRUE(region.ok());
  RemoteRegion remote;
  std::byte buf[16];
  IoSlice local{buf, sizeof buf};
  int called = 0;
  auto done = [&](Status) { ++called; };
  auto check = [](const Status& st, const char* op) {
    EXPECT_EQ(st.code(), StatusCode::kNotSupported) << op;
    EXPECT_EQ(st.message(), std::string("one-sided ") + op +
                                " is not available on the tcp backend; set transport.backend = "
                                "\"ucx\"");
  };
  check(ep.Read(remote, 0, {&local, 1}, done), "read");
  check(ep.Write({&local, 1}, remote, 0, done), "write");
  check(ep.ReadToRegion(remote, 0, *region, 0, 16, done), "read-to-region");
  check(ep.WriteFromRegion(*region, 0, 16, remote, 0, done), "write-from-region");
  check(ep.CompareSwap(remote, 0, 1, 2, [&](Result<uint64_t>) { ++called; }),
        "compare-and-swap");
  std::byte descriptor[8] = {};
  check(ep.Import(descriptor).status(), "import");
  EXPECT_TRUE(ep.Fence().ok());

  auto channel = client.fabric->OpenChannel(client.ep);
  EXPECT_EQ(channel.status().code(), StatusCode::kNotSupported) << channel.status().ToString();
  PumpFor({server.fabric.get(), client.fabric.get()}, 20ms);
  EXPECT_EQ(called, 0);
  EXPECT_TRUE(ep.connected());
}

TEST(TcpFabricTest, AllocateAndRegisterVector) {
  auto fabric = Fabric::Create(TcpOptions());
  ASSERT_TRUE(fabric.ok());
  auto region = (*fabric)->Allocate(10000);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  EXPECT_EQ(region->size(), 10000u);
  ASSERT_EQ(region->segments().size(), 1u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(region->data()) % sysconf(_SC_PAGESIZE), 0u);
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(region->data()[i], std::byte{0}) << i;
  region->data()[9999] = std::byte{7};
  EXPECT_EQ(region->Descriptor().status().code(), StatusCode::kNotSupported);
  EXPECT_EQ((*fabric)->Allocate(0).status().code(), StatusCode::kInvalidArgument);

  Bytes a = Pattern(100, 1), b = Pattern(50, 2), c = Pattern(7, 3);
  IoSlice list[] = {Slice(a), Slice(b), Slice(c)};
  auto vec = (*fabric)->RegisterVector(list);
  ASSERT_TRUE(vec.ok()) << vec.status().ToString();
  EXPECT_EQ(vec->size(), 157u);
  ASSERT_EQ(vec->segments().size(), 3u);
  EXPECT_EQ(vec->segments()[1].data, b.data());
  EXPECT_EQ(vec->segments()[1].size, 50u);
  auto slices = vec->Slices(90, 65);  // the end of a, all of b, the start of c
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0].data, a.data() + 90);
  EXPECT_EQ(slices[0].size, 10u);
  EXPECT_EQ(slices[1].size, 50u);
  EXPECT_EQ(slices[2].data, c.data());
  EXPECT_EQ(slices[2].size, 5u);
  EXPECT_EQ(vec->Descriptor().status().code(), StatusCode::kNotSupported);

  EXPECT_EQ((*fabric)->RegisterVector({}).status().code(), StatusCode::kInvalidArgument);
  IoSlice null_slice[] = {Slice(a), {nullptr, 10}};
  EXPECT_EQ((*fabric)->RegisterVector(null_slice).status().code(), StatusCode::kInvalidArgument);
  IoSlice empty_slice[] = {{a.data(), 0}};
  EXPECT_EQ((*fabric)->RegisterVector(empty_slice).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rampart::transport
