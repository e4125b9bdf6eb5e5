// Message-ring stress: several client threads, each with its own Fabric (own
// UCX worker) in this process, each with a channel to one peer process that
// checks and echoes every message. Spin 0 and more threads than cores, like
// the YCSB runs of the native client. Random sizes from empty to twice the
// ring: near the fragment limit (ring / 4), across the ring's end, far larger
// than the ring. Every message carries its stream sequence, its length and a
// checksum; the peer checks them on arrival and the client compares the echo
// byte for byte.
//
// Payloads: a third random bytes; the rest "protocol-like" content: 8-byte
// words whose low half is a small integer near the ring's record sequence
// numbers and whose high half is a large number (a KV message is full of u32
// lengths, counts and ids followed by text; YCSB's "\x17\0\0\0user..." keys
// were what the kv-node misread in bench/results/ycsb/*.failed.txt). The ring
// must not care what a payload contains.
//
// Default: 4 s of traffic (`make test`). Longer:
//   RAMPART_RING_STRESS_SECONDS=60 RAMPART_RING_STRESS_THREADS=8 \
//     transport_test --gtest_filter='ChannelStress*'
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "transport/channel_impl.h"
#include "transport/test_peer.h"

namespace rampart::transport::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr size_t kHeaderBytes = 32;  // u64 stream seq, u64 length, u64 checksum, u64 stream id
constexpr int kPeerCorrupt = 5;      // peer exit code: a message failed its checks
constexpr int kPeerChannelFailed = 6;  // peer exit code: a channel failed (corrupt ring)

uint64_t Checksum(std::span<const std::byte> bytes) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (std::byte b : bytes) {
    h ^= static_cast<uint8_t>(b);
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t ReadU64(std::span<const std::byte> m, size_t at) {
  uint64_t v;
  std::memcpy(&v, m.data() + at, 8);
  return v;
}

// Checks a message's own header. Returns "" or what is wrong. Messages
// shorter than the header carry none (only the echo comparison checks them).
std::string CheckMessage(std::span<const std::byte> m, uint64_t expected_seq) {
  if (m.size() < kHeaderBytes) return "";
  std::string what;
  if (ReadU64(m, 0) != expected_seq) {
    what += StrCat("sequence ", ReadU64(m, 0), " where ", expected_seq, " was due; ");
  }
  if (ReadU64(m, 8) != m.size()) what += StrCat("length field ", ReadU64(m, 8), "; ");
  if (ReadU64(m, 16) != Checksum(m.subspan(kHeaderBytes))) what += "bad checksum; ";
  return what;
}

// The writer's record numbering, replayed (docs/transport.md "Record
// format"): which record sequence number a message's first record gets.
struct RecordModel {
  size_t ring_bytes;
  uint64_t pos = 0;
  uint64_t seq = 1;
  uint64_t Add(size_t n) {
    const uint64_t first = seq;
    size_t from = 0;
    do {
      size_t body = std::min(n - from, ring::MaxFragment(ring_bytes));
      size_t at = pos % ring_bytes;
      if (ring_bytes - at < ring::RecordBytes(body)) {
        pos += ring_bytes - at;
        ++seq;
      }
      pos += ring::RecordBytes(body);
      ++seq;
      from += body;
    } while (from < n);
    return first;
  }
};

std::vector<std::byte> MakeMessage(size_t n, uint64_t stream_seq, uint64_t stream_id,
                                   uint64_t record_seq, std::mt19937_64& rng) {
  std::vector<std::byte> m(n);
  if (rng() % 3 == 0) {
    for (auto& b : m) b = static_cast<std::byte>(rng());
  } else {
    // Words of {u32 small number near the record sequence, u32 large}.
    const uint64_t base = record_seq + rng() % 8;
    for (size_t j = 0; j * 8 < n; ++j) {
      uint64_t word = (uint64_t{0x2a000000u + static_cast<uint32_t>(j & 0xffff)} << 32) |
                      static_cast<uint32_t>(base + j % 160);
      std::memcpy(m.data() + j * 8, &word, std::min<size_t>(8, n - j * 8));
    }
  }
  if (n >= kHeaderBytes) {
    uint64_t h[4] = {stream_seq, n, 0, stream_id};
    std::memcpy(m.data(), h, sizeof h);
    h[2] = Checksum(std::span<const std::byte>(m).subspan(kHeaderBytes));
    std::memcpy(m.data() + 16, &h[2], 8);
  }
  return m;
}

// Sizes that find the edges: empty, tiny, around the fragment limit, around
// the ring's end, larger than half the ring, larger than the ring.
size_t PickSize(size_t ring_bytes, std::mt19937_64& rng) {
  const size_t fragment = ring::MaxFragment(ring_bytes);
  switch (rng() % 10) {
    case 0: return rng() % 40;
    case 1: case 2: return rng() % 300;
    case 3: return fragment - 24 + rng() % 48;
    case 4: return 2 * fragment - 24 + rng() % 48;
    case 5: return ring_bytes / 2 + rng() % (ring_bytes / 2);
    case 6: return ring_bytes + rng() % ring_bytes;
    default: return rng() % fragment;
  }
}

size_t EnvSize(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

// Peer: args: UCX_TLS, seconds to live, spin_us. Checks every message of every
// channel (its own sequence per channel), echoes it, and exits with
// kPeerCorrupt / kPeerChannelFailed at the first problem.
RAMPART_TEST_PEER(ring_stress) {
  if (args.size() != 3) return 2;
  FabricOptions o = PeerOptions("ucx", args[0]);
  o.spin = std::chrono::microseconds(std::stoi(args[2]));
  auto fabric_or = Fabric::Create(o);
  if (!fabric_or.ok()) return 3;
  Fabric& fabric = **fabric_or;
  struct Stream {
    std::shared_ptr<Channel> channel;
    uint64_t next = 0;
  };
  std::vector<std::shared_ptr<Endpoint>> endpoints;
  std::vector<std::unique_ptr<Stream>> streams;
  int verdict = 0;
  fabric.SetAcceptHandler([&](std::shared_ptr<Endpoint> ep) { endpoints.push_back(ep); });
  fabric.SetDisconnectHandler([](const std::shared_ptr<Endpoint>&, Status) {});
  fabric.SetChannelHandler([&](std::shared_ptr<Channel> channel) {
    auto s = std::make_unique<Stream>();
    Stream* stream = s.get();
    stream->channel = std::move(channel);
    stream->channel->SetMessageHandler([&verdict, stream](std::span<const std::byte> m) {
      std::string bad = CheckMessage(m, stream->next);
      if (!bad.empty()) {
        spdlog::error("ring_stress peer: message {} of {} bytes: {}", stream->next, m.size(), bad);
        verdict = kPeerCorrupt;
      }
      ++stream->next;
      IoSlice slice{const_cast<std::byte*>(m.data()), m.size()};
      if (Status st = stream->channel->Send(std::span<const IoSlice>(&slice, 1)); !st.ok()) {
        spdlog::warn("ring_stress peer: echo: {}", st.ToString());
      }
    });
    streams.push_back(std::move(s));
  });
  if (Status st = fabric.Listen("127.0.0.1", 0); !st.ok()) return 4;
  ReportToParent(report_fd, fabric.listen_port());
  auto until = Clock::now() + std::chrono::seconds(std::stoi(args[1]));
  while (Clock::now() < until && verdict == 0) {
    fabric.Wait(100ms);
    for (auto& s : streams) {
      if (!s->channel->connected() && s->channel->endpoint()->connected()) {
        spdlog::error("ring_stress peer: a channel failed while its endpoint is up");
        verdict = kPeerChannelFailed;
      }
    }
  }
  return verdict;
}

struct WorkerResult {
  std::string error;
  uint64_t messages = 0;
  uint64_t bytes = 0;
};

void RunWorker(int index, uint16_t port, size_t ring_bytes, Clock::time_point until,
               WorkerResult& out) {
  FabricOptions o = PeerOptions("ucx", "");
  o.spin = 0us;
  auto client = ConnectClient(o, port);
  if (!client.ok()) {
    out.error = client.status().ToString();
    return;
  }
  auto channel_or = client->fabric->OpenChannel(client->ep, ChannelOptions{ring_bytes});
  if (!channel_or.ok()) {
    out.error = channel_or.status().ToString();
    return;
  }
  std::shared_ptr<Channel> channel = *channel_or;
  std::mt19937_64 rng(0x5eed0000 + index);
  RecordModel model{ring_bytes};
  std::deque<std::vector<std::byte>> outstanding;
  uint64_t sent = 0, checked = 0;
  channel->SetMessageHandler([&](std::span<const std::byte> m) {
    if (!out.error.empty()) return;
    if (outstanding.empty()) {
      out.error = StrCat("an echo of ", m.size(), " bytes nobody sent");
      return;
    }
    const std::vector<std::byte>& want = outstanding.front();
    std::string bad = CheckMessage(m, checked);
    if (m.size() != want.size()) bad += StrCat("size ", m.size(), " instead of ", want.size(), "; ");
    // (memcmp of empty spans may see null pointers, which it must not get.)
    if (bad.empty() && !m.empty() && std::memcmp(m.data(), want.data(), m.size()) != 0) {
      bad = "bytes differ";
    }
    if (!bad.empty()) {
      out.error = StrCat("echo of message ", checked, " (", want.size(), " bytes): ", bad);
      return;
    }
    out.bytes += m.size();
    outstanding.pop_front();
    ++checked;
  });
  auto last_progress = Clock::now();
  uint64_t last_checked = 0;
  while (out.error.empty()) {
    const auto now = Clock::now();
    const bool sending = now < until;
    if (!sending && outstanding.empty()) break;
    if (sending) {
      const size_t window = 1 + rng() % 4;
      while (outstanding.size() < window) {
        size_t n = PickSize(ring_bytes, rng);
        uint64_t record_seq = model.Add(n);
        outstanding.push_back(MakeMessage(n, sent, index, record_seq, rng));
        IoSlice slice{outstanding.back().data(), n};
        if (Status st = channel->Send(std::span<const IoSlice>(&slice, 1)); !st.ok()) {
          out.error = StrCat("send: ", st.ToString());
          break;
        }
        ++sent;
      }
      // Now and then let both sides go idle (and the peer block).
      if (rng() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    }
    client->fabric->Wait(5ms);
    if (!channel->connected()) {
      out.error = StrCat("channel failed: ", channel->endpoint()->connected() ? "" : "endpoint gone");
      break;
    }
    if (checked != last_checked) {
      last_checked = checked;
      last_progress = Clock::now();
    } else if (Clock::now() - last_progress > 10s) {
      // A failed peer closes the connection at once; this is the fallback.
      out.error = StrCat("no echo for 10 s after ", checked, " of ", sent,
                         " messages (the peer's ring failed? see its log)");
    }
  }
  out.messages = checked;
}

TEST(ChannelStress, ManyFabricsOneProcessSpinZero) {
  const int seconds = static_cast<int>(EnvSize("RAMPART_RING_STRESS_SECONDS", 4));
  const int threads = static_cast<int>(EnvSize("RAMPART_RING_STRESS_THREADS", 6));
  PeerProcess peer("ring_stress", {"", std::to_string(seconds + 30), "0"});
  auto port = peer.ReadReport(20s);
  ASSERT_TRUE(port.has_value()) << "peer did not start";
  const auto until = Clock::now() + std::chrono::seconds(seconds);
  std::vector<WorkerResult> results(threads);
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    // 4 KiB, 16 KiB, 64 KiB rings: many laps per second.
    const size_t ring_bytes = size_t{4096} << (2 * (i % 3));
    workers.emplace_back(RunWorker, i, static_cast<uint16_t>(*port), ring_bytes, until,
                         std::ref(results[i]));
  }
  for (auto& w : workers) w.join();
  uint64_t messages = 0, bytes = 0;
  for (int i = 0; i < threads; ++i) {
    EXPECT_EQ(results[i].error, "") << "thread " << i;
    messages += results[i].messages;
    bytes += results[i].bytes;
  }
  const int peer_exit = peer.WaitExit(0ms);
  EXPECT_EQ(peer_exit, -1) << "the peer exited early: "
                           << (peer_exit == kPeerCorrupt        ? "a message failed its checks"
                               : peer_exit == kPeerChannelFailed ? "a channel failed (corrupt ring)"
                                                                 : "exit code");
  std::printf("ring stress: %d threads, %d s: %llu messages, %.1f MB echoed\n", threads, seconds,
              static_cast<unsigned long long>(messages), bytes / 1e6);
}

// Round-trip cost of ring messages (median of many), for before/after
// comparisons of the record protocol. Runs only with RAMPART_RING_PERF=1.
TEST(ChannelStress, RoundTripCost) {
  if (std::getenv("RAMPART_RING_PERF") == nullptr) GTEST_SKIP() << "set RAMPART_RING_PERF=1";
  PeerAndClient pc = StartEchoPeer("ucx", "");
  ASSERT_NE(pc.client, nullptr);
  auto channel = pc.client->fabric->OpenChannel(pc.client->ep, ChannelOptions{1 << 20});
  ASSERT_TRUE(channel.ok());
  size_t got = 0;
  (*channel)->SetMessageHandler([&](std::span<const std::byte>) { ++got; });
  for (size_t size : {size_t{64}, size_t{1024}, size_t{8192}, size_t{65536}}) {
    std::vector<std::byte> msg(size, std::byte{1});
    std::vector<double> us;
    for (int i = 0; i < 5000; ++i) {
      IoSlice slice{msg.data(), size};
      auto start = Clock::now();
      ASSERT_TRUE((*channel)->Send(std::span<const IoSlice>(&slice, 1)).ok());
      const size_t want = got + 1;
      ASSERT_TRUE(pc.client->Await([&] { return got == want; }, 5s));
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    std::sort(us.begin(), us.end());
    std::printf("ring round trip %6zu B: median %.2f us, p90 %.2f us\n", size, us[us.size() / 2],
                us[us.size() * 9 / 10]);
  }
}

}  // namespace
}  // namespace rampart::transport::testing
