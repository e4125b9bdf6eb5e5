// The volume client against an in-process storage node (ucx, same host).
#include "storage/volume_client.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "storage/node.h"

namespace rampart::storage {
namespace {

using std::chrono::milliseconds;

class VolumeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StorageNodeOptions o;
    o.device.path = "ram";
    o.device.size = 8u << 20;
    o.engine = EngineKind::kThreads;
    o.engine_options.threads = 2;
    o.queue_depth = 16;
    o.max_io_bytes = 256u << 10;
    o.staging_bytes = 4u << 20;
    o.fabric.spin = std::chrono::microseconds(0);
    auto node = StorageNode::Start(o);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(*node);
  }

  Result<std::unique_ptr<VolumeClient>> ConnectClient(uint32_t connections, uint32_t depth) {
    VolumeClientOptions o;
    o.port = node_->listen_port();
    o.connections = connections;
    o.queue_depth = depth;
    o.pool_bytes = 8u << 20;
    o.fabric.spin = std::chrono::microseconds(0);
    return VolumeClient::Connect(o);
  }

  static void Drain(VolumeClient& c) {
    for (int i = 0; i < 1000 && c.in_flight() > 0; ++i) c.Wait(milliseconds(20));
    ASSERT_EQ(c.in_flight(), 0u);
  }

  std::unique_ptr<StorageNode> node_;
};

TEST_F(VolumeClientTest, HelloDescribesTheDevice) {
  auto client = ConnectClient(2, 8);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->device().device_bytes, 8u << 20);
  EXPECT_EQ((*client)->device().max_io_bytes, 256u << 10);
  EXPECT_EQ((*client)->live_connections(), 2u);
}

// Random offsets and sizes, many in flight over two connections: what was
// written reads back identical.
TEST_F(VolumeClientTest, WrittenDataReadsBack) {
  auto client = ConnectClient(2, 8);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  VolumeClient& c = **client;
  const uint32_t align = std::max<uint32_t>(c.device().alignment, 512);
  std::mt19937_64 rng(42);
  struct Io {
    uint64_t offset;
    uint32_t length;
    std::vector<std::byte> data;
  };
  std::vector<Io> ios;  // non-overlapping: one per 64 KiB slice of the device
  for (uint64_t slot = 0; slot < 64; ++slot) {
    const uint32_t length = align * (1 + rng() % (32768 / align));
    Io io{slot * 65536 + align * (rng() % ((65536 - length) / align + 1)), length, {}};
    io.data.resize(length);
    for (auto& b : io.data) b = static_cast<std::byte>(rng());
    ios.push_back(std::move(io));
  }
  std::vector<Buffer> buffers;
  int ok = 0;
  for (const Io& io : ios) {
    auto b = c.pool().Get(io.length);
    ASSERT_TRUE(b.ok());
    std::memcpy(b->data(), io.data.data(), io.length);
    ASSERT_TRUE(c.Write(io.offset, io.length, b->ref(),
                        [&, len = io.length](const Status& s, uint64_t bytes) {
                          EXPECT_TRUE(s.ok()) << s.ToString();
                          EXPECT_EQ(bytes, len);
                          ++ok;
                        })
                    .ok());
    buffers.push_back(std::move(*b));
  }
  Drain(c);
  EXPECT_EQ(ok, 64);
  bool flushed = false;
  ASSERT_TRUE(c.Flush([&](const Status& s, uint64_t) {
                 EXPECT_TRUE(s.ok()) << s.ToString();
                 flushed = true;
               }).ok());
  Drain(c);
  EXPECT_TRUE(flushed);
  buffers.clear();
  ok = 0;
  for (const Io& io : ios) {
    auto b = c.pool().Get(io.length);
    ASSERT_TRUE(b.ok());
    std::memset(b->data(), 0, b->size());
    const std::byte* where = b->data();
    ASSERT_TRUE(c.Read(io.offset, io.length, b->ref(), [&, where](const Status& s, uint64_t) {
                   EXPECT_TRUE(s.ok()) << s.ToString();
                   EXPECT_EQ(std::memcmp(where, io.data.data(), io.length), 0)
                       << "at " << io.offset << "+" << io.length;
                   ++ok;
                 }).ok());
    buffers.push_back(std::move(*b));
  }
  Drain(c);
  EXPECT_EQ(ok, 64);
}

TEST_F(VolumeClientTest, OutOfRangeAndOversizedGetErrorsAndTheNodeServesOn) {
  auto client = ConnectClient(1, 4);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  VolumeClient& c = **client;
  auto b = c.pool().Get(512u << 10);
  ASSERT_TRUE(b.ok());
  std::vector<Status> got;
  auto record = [&](const Status& s, uint64_t) { got.push_back(s); };
  const uint64_t end = c.device().device_bytes;
  ASSERT_TRUE(c.Read(end, 4096, b->ref(), record).ok());         // past the end
  ASSERT_TRUE(c.Read(end - 4096, 8192, b->ref(), record).ok());  // straddles it
  ASSERT_TRUE(c.Write(0, 512u << 10, b->ref(), record).ok());    // > max_io_bytes
  ASSERT_TRUE(c.Read(0, 4096, b->ref(), record).ok());           // fine
  Drain(c);
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(got[i].ok()) << i;
  EXPECT_TRUE(got[3].ok()) << got[3].ToString();
  // The client refuses a buffer outside its pool, or too small, itself.
  BufferRef outside{c.pool().capacity(), 4096, nullptr};
  EXPECT_EQ(c.Read(0, 4096, outside, record).code(), StatusCode::kInvalidArgument);
  auto small = c.pool().Get(4096);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(c.Read(0, 8192, small->ref(), record).code(), StatusCode::kInvalidArgument);
}

// The node going away fails what is in flight with kUnavailable, and later
// calls are refused.
TEST_F(VolumeClientTest, NodeStopFailsInFlightIo) {
  auto client = ConnectClient(2, 8);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  VolumeClient& c = **client;
  auto b = c.pool().Get(4096);
  ASSERT_TRUE(b.ok());
  int failed = 0, succeeded = 0;
  std::function<void(const Status&, uint64_t)> again = [&](const Status& s, uint64_t) {
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
      ++failed;
      return;
    }
    ++succeeded;
    (void)c.Read(4096 * (succeeded % 100), 4096, b->ref(), again);
  };
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(c.Read(0, 4096, b->ref(), again).ok());
  for (int i = 0; i < 20; ++i) c.Poll();
  node_->Stop();
  for (int i = 0; i < 500 && c.in_flight() > 0; ++i) c.Wait(milliseconds(20));
  EXPECT_EQ(c.in_flight(), 0u);
  EXPECT_GT(failed, 0);
  EXPECT_EQ(c.live_connections(), 0u);
  EXPECT_EQ(c.Read(0, 4096, b->ref(), again).code(), StatusCode::kUnavailable);
}

// Two nodes, one client each over one caller-owned Fabric and BufferPool: one
// thread drives both with one Wait, and a node's death (routed by endpoint to
// its client) fails only that client's IO.
TEST_F(VolumeClientTest, ClientsShareOneFabricAndPool) {
  StorageNodeOptions no;
  no.device.path = "ram";
  no.device.size = 1u << 20;
  no.fabric.spin = std::chrono::microseconds(0);
  auto second = StorageNode::Start(no);
  ASSERT_TRUE(second.ok()) << second.status().ToString();

  transport::FabricOptions fo;
  fo.spin = std::chrono::microseconds(0);
  auto fabric = transport::Fabric::Create(fo);
  ASSERT_TRUE(fabric.ok()) << fabric.status().ToString();
  auto pool = BufferPool::Create(**fabric, 1u << 20);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  std::vector<std::unique_ptr<VolumeClient>> clients;
  for (uint16_t port : {node_->listen_port(), (*second)->listen_port()}) {
    VolumeClientOptions o;
    o.port = port;
    auto c = VolumeClient::Connect(o, **fabric, **pool);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients.push_back(std::move(*c));
  }
  int routed = 0;
  (*fabric)->SetDisconnectHandler([&](const std::shared_ptr<transport::Endpoint>& ep, Status why) {
    for (auto& c : clients) routed += c->HandleDisconnect(*ep, why) ? 1 : 0;
  });
  auto drain = [&] {
    for (int i = 0; i < 500; ++i) {
      size_t left = 0;
      for (auto& c : clients) left += c->in_flight();
      if (left == 0) return;
      (*fabric)->Wait(milliseconds(20));
      for (auto& c : clients) c->RunCompletions();
    }
    FAIL() << "IO did not complete";
  };

  // Each node gets its own pattern through the one pool; both read back.
  std::vector<Buffer> bufs;
  for (int i = 0; i < 4; ++i) bufs.push_back(std::move(*(*pool)->Get(4096)));
  std::memset(bufs[0].data(), 0xA1, 4096);
  std::memset(bufs[1].data(), 0xB2, 4096);
  std::vector<Status> got;
  auto record = [&](const Status& s, uint64_t) { got.push_back(s); };
  ASSERT_TRUE(clients[0]->Write(8192, 4096, bufs[0].ref(), record).ok());
  ASSERT_TRUE(clients[1]->Write(8192, 4096, bufs[1].ref(), record).ok());
  drain();
  ASSERT_TRUE(clients[0]->Read(8192, 4096, bufs[2].ref(), record).ok());
  ASSERT_TRUE(clients[1]->Read(8192, 4096, bufs[3].ref(), record).ok());
  drain();
  ASSERT_EQ(got.size(), 4u);
  for (const Status& s : got) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(std::memcmp(bufs[2].data(), bufs[0].data(), 4096), 0);
  EXPECT_EQ(std::memcmp(bufs[3].data(), bufs[1].data(), 4096), 0);

  // The second node dies: its client fails, the first carries on.
  (*second)->Stop();
  got.clear();
  for (int i = 0; i < 100 && clients[1]->live_connections() > 0; ++i) {
    (*fabric)->Wait(milliseconds(10));
    for (auto& c : clients) c->RunCompletions();
  }
  EXPECT_EQ(clients[1]->live_connections(), 0u);
  EXPECT_GE(routed, 1);
  EXPECT_EQ(clients[1]->Read(0, 4096, bufs[3].ref(), record).code(), StatusCode::kUnavailable);
  ASSERT_TRUE(clients[0]->Read(8192, 4096, bufs[2].ref(), record).ok());
  drain();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].ok()) << got[0].ToString();
  EXPECT_EQ(clients[0]->live_connections(), 1u);
  bufs.clear();
  clients.clear();
}

}  // namespace
}  // namespace rampart::storage
