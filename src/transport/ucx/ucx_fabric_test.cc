// Two-process tests of the ucx backend against the echo peer, over shared
// memory (UCX's default transports on one host) and over UCX's tcp transport.
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "transport/test_peer.h"
#include "transport/ucx/ucx_fabric.h"

namespace rampart::transport::testing {
namespace {

using namespace std::chrono_literals;

// Parameter: UCX_TLS for both processes. "" = UCX's default (shared memory on
// one host); "tcp" = UCX over TCP, where one-sided operations are emulated.
class UcxTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    pc_ = StartEchoPeer("ucx", GetParam());
    ASSERT_NE(pc_.client, nullptr);
  }
  TestClient& client() { return *pc_.client; }
  bool shared_memory() const { return GetParam().empty(); }

  RemoteRegion ImportPeerRegion() {
    std::vector<std::byte> request = {std::byte{'D'}};
    auto reply = client().Call(request);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    if (!reply.ok()) return {};
    auto remote = client().ep->Import(std::span<const std::byte>(*reply).subspan(1));
    EXPECT_TRUE(remote.ok()) << remote.status().ToString();
    return remote.ok() ? std::move(*remote) : RemoteRegion();
  }

  // Runs an operation and waits for its completion status.
  Status Complete(const std::function<Status(Completion)>& start) {
    bool done = false;
    Status result;
    RAMPART_RETURN_IF_ERROR(start([&](Status s) {
      done = true;
      result = s;
    }));
    if (!client().Await([&] { return done; })) return TimedOut("operation did not complete");
    return result;
  }

  PeerAndClient pc_;
};

std::vector<std::byte> RandomBytes(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

TEST_P(UcxTest, MessagesOfEverySizeEchoWhole) {
  // Sizes on both sides of the same-host context's rendezvous threshold
  // (256 KiB, kEagerMessageBytes in ucx_fabric.cc): eager and rendezvous
  // messages both arrive whole.
  for (size_t size : {size_t{1}, size_t{100}, size_t{4096}, size_t{64 << 10}, size_t{255 << 10},
                      size_t{257 << 10}, size_t{4 << 20}}) {
    auto msg = RandomBytes(size, static_cast<uint32_t>(size));
    auto reply = client().Call(msg);
    ASSERT_TRUE(reply.ok()) << size << ": " << reply.status().ToString();
    EXPECT_EQ(*reply, msg) << "size " << size;
  }
}

TEST_P(UcxTest, ManyMessagesInFlightArriveInOrder) {
  constexpr int kCount = 2000;
  std::vector<std::vector<std::byte>> sent;
  int completed = 0;
  for (int i = 0; i < kCount; ++i) {
    sent.push_back(RandomBytes(1 + i % 300, i));
    IoSlice s{sent.back().data(), sent.back().size()};
    ASSERT_TRUE(client().ep->Send(std::span<const IoSlice>(&s, 1), [&](Status st) {
      EXPECT_TRUE(st.ok()) << st.ToString();
      ++completed;
    }).ok());
    if (i % 64 == 63) client().fabric->Progress();
  }
  ASSERT_TRUE(client().Await([&] { return client().inbox.size() == kCount; }, 20s));
  EXPECT_EQ(completed, kCount);
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(client().inbox[i], sent[i]) << "message " << i;
}

TEST_P(UcxTest, GatherListSendsOneMessage) {
  std::string a = "hello, ", b = "gathered ", c = "world";
  IoSlice slices[] = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  ASSERT_TRUE(Complete([&](Completion d) { return client().ep->Send(slices, std::move(d)); }).ok());
  ASSERT_TRUE(client().Await([&] { return !client().inbox.empty(); }));
  std::string got(reinterpret_cast<const char*>(client().inbox[0].data()), client().inbox[0].size());
  EXPECT_EQ(got, "hello, gathered world");
}

TEST_P(UcxTest, OversizedMessageIsRefused) {
  std::vector<std::byte> big(client().fabric->options().max_message_size + 1);
  IoSlice s{big.data(), big.size()};
  Status st = client().ep->Send(std::span<const IoSlice>(&s, 1), [](Status) { FAIL(); });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST_P(UcxTest, ReadScattersRemoteBytes) {
  RemoteRegion remote = ImportPeerRegion();
  ASSERT_TRUE(remote.valid());
  EXPECT_EQ(remote.size(), kPeerRegionBytes);
  EXPECT_EQ(remote.DirectPointer(0, 64) != nullptr, shared_memory());
  for (size_t offset : {size_t{0}, size_t{12345}, kPeerRegionBytes - 1024}) {
    std::vector<std::byte> a(10), b(500), c(514);
    IoSlice slices[] = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
    ASSERT_TRUE(Complete([&](Completion d) {
                  return client().ep->Read(remote, offset, slices, std::move(d));
                }).ok());
    size_t i = offset;
    for (auto* v : {&a, &b, &c}) {
      for (std::byte x : *v) ASSERT_EQ(x, PatternByte(i++)) << "offset " << offset;
    }
  }
}

TEST_P(UcxTest, WriteThenReadBack) {
  RemoteRegion remote = ImportPeerRegion();
  ASSERT_TRUE(remote.valid());
  auto data = RandomBytes(3000, 7);
  IoSlice halves[] = {{data.data(), 1000}, {data.data() + 1000, 2000}};
  ASSERT_TRUE(Complete([&](Completion d) {
                return client().ep->Write(halves, remote, 4096, std::move(d));
              }).ok());
  ASSERT_TRUE(Complete([&](Completion d) { return client().ep->Flush(std::move(d)); }).ok());
  std::vector<std::byte> back(3000);
  IoSlice s{back.data(), back.size()};
  ASSERT_TRUE(Complete([&](Completion d) {
                return client().ep->Read(remote, 4096, std::span<const IoSlice>(&s, 1), std::move(d));
              }).ok());
  EXPECT_EQ(back, data);
}

TEST_P(UcxTest, OutOfRangeAccessIsRefused) {
  RemoteRegion remote = ImportPeerRegion();
  std::vector<std::byte> buf(64);
  IoSlice s{buf.data(), buf.size()};
  Status st = client().ep->Read(remote, kPeerRegionBytes - 10, std::span<const IoSlice>(&s, 1),
                                [](Status) { FAIL(); });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  std::vector<std::byte> garbage = RandomBytes(100, 1);
  EXPECT_EQ(client().ep->Import(garbage).status().code(), StatusCode::kInvalidArgument);
}

// Paths where one-sided operations are software requests the peer carries
// out (memory not mapped here, no RDMA hardware): UCX over tcp. (Over shared
// memory a descriptor is trusted as it is: ucp_rkey_ptr maps whatever address
// it names.)
class UcxSoftwareRmaTest : public UcxTest {};

// A descriptor whose address the peer never exposed (forged here by moving
// the segment's address): the peer refuses every access instead of touching
// memory it does not own; reads fail, writes fail at the next Flush.
TEST_P(UcxSoftwareRmaTest, AccessOutsideThePeersRegionsIsRefusedByThePeer) {
  std::vector<std::byte> request = {std::byte{'D'}};
  auto reply = client().Call(request);
  ASSERT_TRUE(reply.ok());
  std::vector<std::byte> forged(reply->begin() + 1, reply->end());
  uint64_t address;
  std::memcpy(&address, forged.data() + 16, 8);  // first segment's address
  address += 64ull << 30;                          // far outside the 1 MiB region
  std::memcpy(forged.data() + 16, &address, 8);
  auto remote = client().ep->Import(forged);
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  EXPECT_EQ(remote->DirectPointer(0, 8), nullptr);
  std::vector<std::byte> buf(64);
  IoSlice s{buf.data(), buf.size()};
  Status read = Complete([&](Completion d) {
    return client().ep->Read(*remote, 0, std::span<const IoSlice>(&s, 1), std::move(d));
  });
  EXPECT_EQ(read.code(), StatusCode::kInvalidArgument) << read.ToString();
  EXPECT_TRUE(Complete([&](Completion d) {
                return client().ep->Write(std::span<const IoSlice>(&s, 1), *remote, 0, std::move(d));
              }).ok());
  Status flush = Complete([&](Completion d) { return client().ep->Flush(std::move(d)); });
  EXPECT_EQ(flush.code(), StatusCode::kInvalidArgument) << flush.ToString();
  // The connection is still good.
  auto again = client().Call(request);
  EXPECT_TRUE(again.ok());
}

TEST_P(UcxTest, VectoredRegionTransfersByOffsetWithOneCompletion) {
  RemoteRegion remote = ImportPeerRegion();
  ASSERT_TRUE(remote.valid());
  // 32 discrete 4 KiB buffers (seed 004's experiment), not adjacent.
  std::vector<std::vector<std::byte>> buffers;
  std::vector<IoSlice> slices;
  for (int i = 0; i < 32; ++i) {
    buffers.emplace_back(4096 + 64);
    slices.push_back({buffers.back().data() + 64, 4096});
  }
  auto region = client().fabric->RegisterVector(slices);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  EXPECT_EQ(region->size(), 32u * 4096);
  // A range that starts inside buffer 2 and ends inside buffer 9.
  const size_t local_off = 2 * 4096 + 100, len = 7 * 4096, remote_off = 5000;
  int completions = 0;
  ASSERT_TRUE(client().ep->ReadToRegion(remote, remote_off, *region, local_off, len,
                                        [&](Status s) { ASSERT_TRUE(s.ok()); ++completions; }).ok());
  ASSERT_TRUE(client().Await([&] { return completions > 0; }));
  client().fabric->Progress();
  EXPECT_EQ(completions, 1);
  for (size_t i = 0; i < len; ++i) {
    size_t at = local_off + i;
    ASSERT_EQ(static_cast<std::byte*>(slices[at / 4096].data)[at % 4096],
              PatternByte(remote_off + i)) << i;
  }
  // And back: write buffers 0..31 into the peer, read them to a plain buffer.
  for (size_t i = 0; i < 32; ++i) std::memset(slices[i].data, static_cast<int>(i + 1), 4096);
  ASSERT_TRUE(Complete([&](Completion d) {
                return client().ep->WriteFromRegion(*region, 0, 32 * 4096, remote, 0, std::move(d));
              }).ok());
  ASSERT_TRUE(Complete([&](Completion d) { return client().ep->Flush(std::move(d)); }).ok());
  std::vector<std::byte> back(32 * 4096);
  IoSlice s{back.data(), back.size()};
  ASSERT_TRUE(Complete([&](Completion d) {
                return client().ep->Read(remote, 0, std::span<const IoSlice>(&s, 1), std::move(d));
              }).ok());
  for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], std::byte(i / 4096 + 1)) << i;
}

TEST_P(UcxTest, CompareSwapFromTwoClientsLosesNoIncrement) {
  RemoteRegion remote = ImportPeerRegion();
  ASSERT_TRUE(remote.valid());
  std::vector<std::byte> desc_request = {std::byte{'D'}};
  auto desc = client().Call(desc_request);
  ASSERT_TRUE(desc.ok());
  const uint16_t port = pc_.port;
  constexpr int kIncrements = 2000;
  constexpr uint64_t kWord = 8192;
  auto worker = [&](std::atomic<int>* errors) {
    auto c = ConnectClient(PeerOptions("ucx", GetParam()), port);
    if (!c.ok()) {
      ++*errors;
      return;
    }
    auto r = c->ep->Import(std::span<const std::byte>(*desc).subspan(1));
    if (!r.ok()) {
      ++*errors;
      return;
    }
    uint64_t guess = 0;
    for (int done = 0; done < kIncrements;) {
      bool finished = false;
      uint64_t previous = 0;
      Status st = c->ep->CompareSwap(*r, kWord, guess, guess + 1, [&](Result<uint64_t> p) {
        finished = true;
        if (p.ok()) previous = *p;
      });
      if (!st.ok() || !c->Await([&] { return finished; })) {
        ++*errors;
        return;
      }
      if (previous == guess) ++done;
      guess = previous == guess ? guess + 1 : previous;
    }
  };
  // Zero the word first (plain write), then two clients in two threads, each
  // with its own fabric, race on it.
  std::vector<std::byte> zero(8);
  IoSlice zs{zero.data(), 8};
  ASSERT_TRUE(Complete([&](Completion d) {
                return client().ep->Write(std::span<const IoSlice>(&zs, 1), remote, kWord, std::move(d));
              }).ok());
  ASSERT_TRUE(Complete([&](Completion d) { return client().ep->Flush(std::move(d)); }).ok());
  std::atomic<int> errors{0};
  std::thread t1(worker, &errors), t2(worker, &errors);
  t1.join();
  t2.join();
  EXPECT_EQ(errors.load(), 0);
  std::vector<std::byte> out(8);
  IoSlice os{out.data(), 8};
  ASSERT_TRUE(Complete([&](Completion d) {
                return client().ep->Read(remote, kWord, std::span<const IoSlice>(&os, 1), std::move(d));
              }).ok());
  uint64_t value;
  std::memcpy(&value, out.data(), 8);
  EXPECT_EQ(value, 2u * kIncrements);
}

TEST_P(UcxTest, PeerKilledMidTransferIsReportedAndNothingHangs) {
  RemoteRegion remote = ImportPeerRegion();
  ASSERT_TRUE(remote.valid());
  // Keep large messages in flight, then kill the peer.
  std::vector<std::byte> big(8 << 20);
  IoSlice s{big.data(), big.size()};
  int failed_completions = 0, completions = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(client().ep->Send(std::span<const IoSlice>(&s, 1), [&](Status st) {
      ++completions;
      if (!st.ok()) ++failed_completions;
    }).ok());
  }
  client().fabric->Progress();
  auto killed_at = std::chrono::steady_clock::now();
  pc_.peer->Kill();
  ASSERT_TRUE(client().Await([&] { return client().disconnected; }, 5s))
      << "no disconnect within 5 s of the kill";
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, 5s);
  EXPECT_EQ(client().disconnect.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(client().ep->connected());
  EXPECT_EQ(remote.DirectPointer(0, 64), nullptr) << "a dead peer's memory must not be used";
  std::vector<std::byte> buf(64);
  IoSlice b{buf.data(), buf.size()};
  EXPECT_EQ(client().ep->Read(remote, 0, std::span<const IoSlice>(&b, 1), [](Status) {}).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(client().ep->Send(std::span<const IoSlice>(&b, 1), [](Status) {}).code(),
            StatusCode::kUnavailable);
  // Every send in flight completes (with an error, or OK if it made it out).
  ASSERT_TRUE(client().Await([&] { return completions == 4; }, 5s));
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxSoftwareRmaTest, ::testing::Values(std::string("tcp")),
                         [](const auto&) { return "tcp"; });
INSTANTIATE_TEST_SUITE_P(Transports, UcxTest, ::testing::Values(std::string(""), std::string("tcp")),
                         [](const auto& info) { return info.param.empty() ? "shm" : "tcp"; });

// ---------------------------------------------------------------------------
// Registration cache, through a fabric (no peer needed).

TEST(UcxRegistration, ReRegisteringIsACacheHitAndUnmapForgetsIt) {
  auto fabric = Fabric::Create(PeerOptions("ucx", ""));
  ASSERT_TRUE(fabric.ok()) << fabric.status().ToString();
  const size_t len = 1 << 20;
  void* mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  IoSlice s{mem, len};
  {
    auto r1 = (*fabric)->RegisterVector(std::span<const IoSlice>(&s, 1));
    ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  }
  EXPECT_EQ((*fabric)->registration_cache_stats().misses, 1u);
  {
    auto r2 = (*fabric)->RegisterVector(std::span<const IoSlice>(&s, 1));
    ASSERT_TRUE(r2.ok());
    // a sub-range of the same pages is also a hit
    IoSlice part{static_cast<char*>(mem) + 4096, 100};
    auto r3 = (*fabric)->RegisterVector(std::span<const IoSlice>(&part, 1));
    ASSERT_TRUE(r3.ok());
  }
  EXPECT_EQ((*fabric)->registration_cache_stats().hits, 2u);
  ASSERT_EQ(munmap(mem, len), 0);
  // The unmap reached the cache through UCX's memory hooks.
  void* again = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  IoSlice s2{again, len};
  {
    auto r4 = (*fabric)->RegisterVector(std::span<const IoSlice>(&s2, 1));
    ASSERT_TRUE(r4.ok());
  }
  EXPECT_GE((*fabric)->registration_cache_stats().invalidations, 1u);
  EXPECT_EQ((*fabric)->registration_cache_stats().misses, 2u);
  munmap(again, len);
}

TEST(UcxRegistration, BadInputIsRefused) {
  auto fabric = Fabric::Create(PeerOptions("ucx", ""));
  ASSERT_TRUE(fabric.ok());
  EXPECT_EQ((*fabric)->Allocate(0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*fabric)->RegisterVector({}).status().code(), StatusCode::kInvalidArgument);
  IoSlice null_slice{nullptr, 10};
  EXPECT_EQ((*fabric)->RegisterVector(std::span<const IoSlice>(&null_slice, 1)).status().code(),
            StatusCode::kInvalidArgument);
  auto region = (*fabric)->Allocate(12345);
  ASSERT_TRUE(region.ok());
  EXPECT_EQ(region->size(), 12345u);
  for (size_t i = 0; i < 12345; ++i) ASSERT_EQ(region->data()[i], std::byte{0});
}

}  // namespace
}  // namespace rampart::transport::testing

namespace rampart::transport {
namespace {

// The transports of the network context (peers on other hosts): the
// configured ones without shared memory.
TEST(UcxNetworkTransports, SharedMemoryIsLeftOut) {
  EXPECT_EQ(*NetworkTransports(""), "^sm");
  EXPECT_EQ(*NetworkTransports("all"), "^sm");
  EXPECT_EQ(*NetworkTransports("^cma"), "^cma,sm");
  EXPECT_EQ(*NetworkTransports("tcp"), "tcp");
  EXPECT_EQ(*NetworkTransports("sm,tcp,self"), "tcp,self");
  EXPECT_EQ(*NetworkTransports("posix,sysv,cma,rc_verbs,ud_verbs:aux,tcp"),
            "rc_verbs,ud_verbs:aux,tcp");
  const Status none = NetworkTransports("shm,self").status();
  EXPECT_EQ(none.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find("none that reaches another host"), std::string::npos)
      << none.ToString();
}

}  // namespace
}  // namespace rampart::transport
