// The storage-node in-process, with a client written here on the raw
// protocol over ucx (HELLO, READ/WRITE round trips, errors, FLUSH).
#include "storage/node.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <random>

#include "storage/protocol.h"
#include "transport/config_options.h"

namespace rampart::storage {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kPoolBytes = 4u << 20;

class RawClient {
 public:
  Status Connect(uint16_t port) {
    // As every process of a cluster: ucx with UCX_NET_DEVICES=lo (docs/ucx_notes.md).
    const transport::FabricOptions o = *transport::FabricOptionsFromConfig(ClusterConfig());
    RAMPART_ASSIGN_OR_RETURN(fabric_, transport::Fabric::Create(o));
    RAMPART_ASSIGN_OR_RETURN(auto ep, fabric_->Connect("127.0.0.1", port));
    RAMPART_ASSIGN_OR_RETURN(channel_, fabric_->OpenChannel(ep));
    channel_->SetMessageHandler([this](std::span<const std::byte> m) {
      auto replies = wire::DecodeReplies(m);
      ASSERT_TRUE(replies.ok()) << replies.status().ToString();
      for (auto& r : *replies) replies_[r.request_id] = r;
    });
    RAMPART_ASSIGN_OR_RETURN(pool_, fabric_->Allocate(kPoolBytes));
    return Status::Ok();
  }
  void Send(const std::vector<std::byte>& m) {
    transport::IoSlice s{const_cast<std::byte*>(m.data()), m.size()};
    ASSERT_TRUE(channel_->Send(std::span<const transport::IoSlice>(&s, 1)).ok());
  }
  // Waits for the reply to `id`.
  wire::Reply Await(uint64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!replies_.count(id) && std::chrono::steady_clock::now() < deadline) {
      fabric_->Wait(10ms);
    }
    auto it = replies_.find(id);
    if (it == replies_.end()) {
      ADD_FAILURE() << "no reply to " << id;
      return wire::Reply{.status = StatusCode::kTimedOut};
    }
    wire::Reply r = it->second;
    replies_.erase(it);
    return r;
  }
  wire::Reply Hello() {
    std::vector<std::byte> m;
    wire::AppendHello(m, 1, *pool_.Descriptor());
    Send(m);
    return Await(1);
  }
  wire::Reply Io(wire::MsgType type, uint64_t id, uint64_t offset, uint32_t length,
                 uint64_t buffer_offset) {
    std::vector<std::byte> m;
    if (type == wire::MsgType::kRead) wire::AppendRead(m, id, offset, length, buffer_offset);
    else wire::AppendWrite(m, id, offset, length, buffer_offset);
    Send(m);
    return Await(id);
  }
  std::byte* pool() { return pool_.data(); }
  transport::Fabric& fabric() { return *fabric_; }

  // Declared in destruction order: the region and channel before the fabric.
  std::unique_ptr<transport::Fabric> fabric_;
  std::shared_ptr<transport::Channel> channel_;
  transport::MemoryRegion pool_;
  std::map<uint64_t, wire::Reply> replies_;

  ~RawClient() {
    pool_ = transport::MemoryRegion();
    channel_.reset();
  }
};

struct Case {
  EngineKind engine;
  bool ram;
};

class StorageNodeTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    StorageNodeOptions o;
    o.fabric = *transport::FabricOptionsFromConfig(ClusterConfig());
    o.engine = GetParam().engine;
    o.engine_options.threads = 2;
    o.device.size = 8u << 20;
    o.staging_bytes = 2u << 20;
    o.max_io_bytes = 256u << 10;
    o.queue_depth = 8;
    if (!GetParam().ram) {
      char tmpl[] = "/tmp/rampart_storage_node_XXXXXX";
      close(mkstemp(tmpl));
      path_ = tmpl;
      o.device.path = path_;
    }
    auto node = StorageNode::Start(o);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(*node);
    Status connected = client_.Connect(node_->listen_port());
    ASSERT_TRUE(connected.ok()) << connected.ToString();
  }
  void TearDown() override {
    if (node_) node_->Stop();
    if (!path_.empty()) unlink(path_.c_str());
  }

  std::string path_;
  std::unique_ptr<StorageNode> node_;
  RawClient client_;
};

TEST_P(StorageNodeTest, HelloThenRoundTripsAndErrors) {
  // Before HELLO: an error, and the node serves on.
  wire::Reply early = client_.Io(wire::MsgType::kRead, 5, 0, 4096, 0);
  EXPECT_EQ(early.status, StatusCode::kFailedPrecondition) << early.error;

  wire::Reply hello = client_.Hello();
  ASSERT_TRUE(hello.ok()) << hello.error;
  EXPECT_EQ(hello.info.device_bytes, 8u << 20);
  EXPECT_EQ(hello.info.block_bytes, 4096u);
  EXPECT_EQ(hello.info.max_io_bytes, 256u << 10);
  EXPECT_EQ(hello.info.queue_depth, 8u);
  const uint32_t align = hello.info.alignment;

  // Many writes in flight at once, then reads of the same ranges elsewhere in the pool.
  std::mt19937_64 rng(7);
  const int n = 32;
  std::vector<uint32_t> len(n);
  std::vector<std::byte> expect(kPoolBytes / 2);
  for (auto& b : expect) b = std::byte(rng());
  std::memcpy(client_.pool(), expect.data(), expect.size());
  std::vector<std::byte> batch;
  for (int i = 0; i < n; ++i) {
    len[i] = 4096 * (1 + rng() % 16);
    wire::AppendWrite(batch, 100 + i, uint64_t(i) * 65536, len[i], uint64_t(i) * 65536);
  }
  client_.Send(batch);
  for (int i = 0; i < n; ++i) {
    wire::Reply r = client_.Await(100 + i);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.bytes, len[i]);
  }
  std::vector<std::byte> flush;
  wire::AppendFlush(flush, 99);
  client_.Send(flush);
  EXPECT_TRUE(client_.Await(99).ok());

  batch.clear();
  for (int i = 0; i < n; ++i) {
    wire::AppendRead(batch, 200 + i, uint64_t(i) * 65536, len[i], kPoolBytes / 2 + uint64_t(i) * 65536);
  }
  client_.Send(batch);
  for (int i = 0; i < n; ++i) {
    wire::Reply r = client_.Await(200 + i);
    ASSERT_TRUE(r.ok()) << r.error;
    if (GetParam().engine == EngineKind::kNone) continue;
    EXPECT_EQ(std::memcmp(client_.pool() + kPoolBytes / 2 + uint64_t(i) * 65536,
                          expect.data() + uint64_t(i) * 65536, len[i]),
              0)
        << "read " << i;
  }

  // Errors: out of range, oversized, misaligned (O_DIRECT), outside the pool,
  // unknown type, a second HELLO.
  EXPECT_EQ(client_.Io(wire::MsgType::kRead, 300, 8u << 20, 4096, 0).status,
            StatusCode::kInvalidArgument);
  EXPECT_EQ(client_.Io(wire::MsgType::kWrite, 301, 0, 512u << 10, 0).status,
            StatusCode::kInvalidArgument);
  if (align > 1) {
    EXPECT_EQ(client_.Io(wire::MsgType::kRead, 302, 100, 4096, 0).status,
              StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(client_.Io(wire::MsgType::kRead, 303, 0, 8192, kPoolBytes - 4096).status,
            StatusCode::kInvalidArgument);
  std::vector<std::byte> bad;
  wire::AppendFlush(bad, 304);
  bad[0] = std::byte{42};
  client_.Send(bad);
  EXPECT_EQ(client_.Await(304).status, StatusCode::kInvalidArgument);
  EXPECT_EQ(client_.Hello().status, StatusCode::kFailedPrecondition);

  // ... and it keeps serving.
  wire::Reply again = client_.Io(wire::MsgType::kRead, 400, 0, 4096, 0);
  ASSERT_TRUE(again.ok()) << again.error;
  if (GetParam().engine != EngineKind::kNone) {
    EXPECT_EQ(std::memcmp(client_.pool(), expect.data(), 4096), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, StorageNodeTest,
    ::testing::Values(Case{EngineKind::kThreads, false}, Case{EngineKind::kThreads, true},
                      Case{EngineKind::kUring, false}, Case{EngineKind::kInline, false},
                      Case{EngineKind::kInline, true}, Case{EngineKind::kNone, true}),
    [](const auto& info) {
      return StrCat(EngineKindName(info.param.engine), info.param.ram ? "_ram" : "_file");
    });

TEST(StorageNode, StartErrors) {
  StorageNodeOptions o;
  o.block_bytes = 3000;
  EXPECT_EQ(StorageNode::Start(o).status().code(), StatusCode::kInvalidArgument);
  o.block_bytes = 4096;
  o.device.size = 4096 * 3 + 512;
  EXPECT_EQ(StorageNode::Start(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rampart::storage
