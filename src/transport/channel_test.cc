// Message rings (Channel) between two processes, over ucx shared memory
// (direct stores into the peer's ring) and ucx tcp (puts + fence + flush).
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "transport/channel_impl.h"
#include "transport/test_peer.h"

namespace rampart::transport::testing {
namespace {

using namespace std::chrono_literals;

class ChannelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    pc_ = StartEchoPeer("ucx", GetParam());
    ASSERT_NE(pc_.client, nullptr);
  }
  TestClient& client() { return *pc_.client; }

  std::shared_ptr<Channel> Open(size_t ring_bytes) {
    auto channel = client().fabric->OpenChannel(client().ep, ChannelOptions{ring_bytes});
    EXPECT_TRUE(channel.ok()) << channel.status().ToString();
    if (!channel.ok()) return nullptr;
    (*channel)->SetMessageHandler([this](std::span<const std::byte> m) {
      replies_.emplace_back(m.begin(), m.end());
    });
    return *channel;
  }

  static Status SendVec(Channel& c, const std::vector<std::byte>& v) {
    IoSlice s{const_cast<std::byte*>(v.data()), v.size()};
    return c.Send(std::span<const IoSlice>(&s, 1));
  }

  PeerAndClient pc_;
  std::deque<std::vector<std::byte>> replies_;
};

std::vector<std::byte> Message(size_t n, uint64_t seed) {
  std::vector<std::byte> v(n);
  std::mt19937_64 rng(seed);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

TEST_P(ChannelTest, SustainedLoadWrapsTheRingAndKeepsOrder) {
  auto channel = Open(4096);  // the smallest ring: wraps every few messages
  ASSERT_NE(channel, nullptr);
  constexpr int kMessages = 20000;
  constexpr int kWindow = 64;
  std::mt19937 rng(42);
  std::deque<std::vector<std::byte>> outstanding;
  int sent = 0, checked = 0;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (checked < kMessages && std::chrono::steady_clock::now() < deadline) {
    while (sent < kMessages && sent - checked < kWindow) {
      outstanding.push_back(Message(1 + rng() % 1000, sent));
      ASSERT_TRUE(SendVec(*channel, outstanding.back()).ok());
      ++sent;
    }
    client().fabric->Wait(10ms);
    while (!replies_.empty()) {
      ASSERT_FALSE(outstanding.empty());
      ASSERT_EQ(replies_.front(), outstanding.front()) << "message " << checked;
      replies_.pop_front();
      outstanding.pop_front();
      ++checked;
    }
  }
  EXPECT_EQ(checked, kMessages);
}

TEST_P(ChannelTest, CreditExhaustionBacklogsAndRecovers) {
  auto channel = Open(4096);
  ASSERT_NE(channel, nullptr);
  // The peer stops reading its ring, so no credit comes back.
  std::vector<std::byte> pause = {std::byte{'P'}}, resume = {std::byte{'R'}};
  ASSERT_TRUE(client().Call(pause).ok());
  std::vector<std::vector<std::byte>> sent;
  for (int i = 0; i < 200; ++i) {
    sent.push_back(Message(500, i));
    ASSERT_TRUE(SendVec(*channel, sent.back()).ok());
  }
  EXPECT_GT(channel->backlog_bytes(), 90000u) << "4 KiB of ring cannot take 100 KB";
  // Nothing moves while the peer does not read, however long we progress.
  client().Await([] { return false; }, 100ms);
  EXPECT_GT(channel->backlog_bytes(), 90000u);
  EXPECT_TRUE(replies_.empty());
  ASSERT_TRUE(client().Call(resume).ok());
  ASSERT_TRUE(client().Await([&] { return replies_.size() == sent.size(); }, 30s))
      << "got " << replies_.size();
  EXPECT_EQ(channel->backlog_bytes(), 0u);
  for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(replies_[i], sent[i]) << i;
}

TEST_P(ChannelTest, MessagesFarLargerThanTheRingArriveWhole) {
  auto channel = Open(4096);
  ASSERT_NE(channel, nullptr);
  for (size_t size : {size_t{3000}, size_t{1 << 20}, size_t{5 << 20}}) {
    auto msg = Message(size, size);
    // Sent as a gather list of three pieces.
    IoSlice parts[] = {{msg.data(), 1}, {msg.data() + 1, size / 2}, {msg.data() + 1 + size / 2, size - 1 - size / 2}};
    ASSERT_TRUE(channel->Send(parts).ok());
    ASSERT_TRUE(client().Await([&] { return !replies_.empty(); }, 30s)) << size;
    ASSERT_EQ(replies_.front(), msg) << size;
    replies_.pop_front();
  }
}

TEST_P(ChannelTest, SleepingPeerIsWokenByTheDoorbell) {
  auto channel = Open(1 << 16);
  ASSERT_NE(channel, nullptr);
  // Each round lets both sides go idle past their spin time, so the peer is
  // blocked in epoll when the record lands; only the doorbell can wake it.
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(5ms);
    auto msg = Message(64, round);
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(SendVec(*channel, msg).ok());
    ASSERT_TRUE(client().Await([&] { return !replies_.empty(); }, 2s)) << "round " << round;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "woken only by a timeout";
    ASSERT_EQ(replies_.front(), msg);
    replies_.pop_front();
  }
}

TEST_P(ChannelTest, KilledPeerFailsTheChannel) {
  auto channel = Open(4096);
  ASSERT_NE(channel, nullptr);
  auto msg = Message(100, 1);
  ASSERT_TRUE(SendVec(*channel, msg).ok());
  ASSERT_TRUE(client().Await([&] { return !replies_.empty(); }));
  // Both sides go idle before the kill. Over UCX 1.13.1's tcp transport a peer
  // killed while bytes are still in flight on the connection can make our own
  // progress abort the process (tcp_ep.c:939 assertion, ~7 % of runs; see
  // docs/transport.md "Known UCX defects"). Killing a peer mid-transfer is
  // covered by TcpPeerFailureTest on rampart's own tcp backend.
  client().Await([] { return false; }, 100ms);
  pc_.peer->Kill();
  ASSERT_TRUE(client().Await([&] { return client().disconnected; }, 5s));
  EXPECT_FALSE(channel->connected());
  EXPECT_EQ(SendVec(*channel, msg).code(), StatusCode::kUnavailable);
}

TEST_P(ChannelTest, BadRingSizeIsRefused) {
  for (size_t bytes : {size_t{0}, size_t{1000}, size_t{4097}, size_t{2} << 30}) {
    auto channel = client().fabric->OpenChannel(client().ep, ChannelOptions{bytes});
    EXPECT_EQ(channel.status().code(), StatusCode::kInvalidArgument) << bytes;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, ChannelTest,
                         ::testing::Values(std::string(""), std::string("tcp")),
                         [](const auto& info) { return info.param.empty() ? "shm" : "tcp"; });

TEST(ChannelRecord, SizesArePaddedAndFragmentsFitTheRing) {
  EXPECT_EQ(ring::RecordBytes(0), 16u);
  EXPECT_EQ(ring::RecordBytes(1), 24u);
  EXPECT_EQ(ring::RecordBytes(8), 24u);
  EXPECT_EQ(ring::RecordBytes(9), 32u);
  // A maximal fragment plus the worst wrap waste fits in an empty ring.
  for (size_t ring_bytes = ring::kMinRingBytes; ring_bytes <= (1u << 24); ring_bytes <<= 1) {
    size_t worst = ring::RecordBytes(ring::MaxFragment(ring_bytes)) * 2;
    EXPECT_LE(worst, ring_bytes);
  }
}

}  // namespace
}  // namespace rampart::transport::testing
