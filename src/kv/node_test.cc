#include "kv/node.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kv/protocol.h"
#include "kv/test_ports.h"
#include "transport/config_options.h"

namespace rampart::kv {
namespace {

using namespace std::chrono_literals;

// Two nodes, two partitions each; only node 0 is started by the tests, so
// node 0 serves partitions 0 and 2 on base and base + 1.
ClusterConfig TestConfig(const std::string& backend, uint16_t base) {
  ClusterConfig c = *ParseClusterConfig("", "node_test");
  c.transport.backend = backend;
  c.kv.partitions_per_node = 2;
  c.kv.arena_bytes = 16 << 20;
  c.nodes = {NodeConfig{0, "127.0.0.1", base},
             NodeConfig{1, "127.0.0.1", static_cast<uint16_t>(base + 2)}};
  return c;
}

// Starts node 0, retrying on fresh ports if one was taken meanwhile.
std::unique_ptr<KvNode> StartNode(const std::string& backend, ClusterConfig* config) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    const uint16_t base = FreePortPair();
    if (base == 0) continue;
    *config = TestConfig(backend, base);
    auto node = KvNode::Start(*config, 0);
    if (node.ok()) return std::move(*node);
    ADD_FAILURE() << "attempt " << attempt << ": " << node.status().ToString();
  }
  return nullptr;
}

// A client on the test thread: one connection, request/reply.
class Client {
 public:
  Status Connect(const ClusterConfig& config, uint16_t port) {
    RAMPART_ASSIGN_OR_RETURN(fabric_, transport::Fabric::Create(
                                          *transport::FabricOptionsFromConfig(config)));
    fabric_->SetMessageHandler(
        [this](const std::shared_ptr<transport::Endpoint>&, std::span<const std::byte> m) {
          replies_.emplace_back(m.begin(), m.end());
        });
    RAMPART_ASSIGN_OR_RETURN(ep_, fabric_->Connect("127.0.0.1", port));
    return Status::Ok();
  }

  // Sends `message` and returns the next reply message.
  Result<std::vector<std::byte>> Call(const std::vector<std::byte>& message) {
    transport::IoSlice slice{const_cast<std::byte*>(message.data()), message.size()};
    bool sent = false;
    RAMPART_RETURN_IF_ERROR(ep_->Send(std::span(&slice, 1), [&sent](Status) { sent = true; }));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while ((!sent || replies_.empty()) && std::chrono::steady_clock::now() < deadline) {
      fabric_->Wait(10ms);
    }
    if (replies_.empty()) return TimedOut("no reply within 10 s");
    std::vector<std::byte> reply = std::move(replies_.front());
    replies_.erase(replies_.begin());
    return reply;
  }

  // Call() for a message of one request; returns its reply.
  wire::Reply One(const std::vector<std::byte>& message) {
    auto bytes = Call(message);
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    if (!bytes.ok()) return {};
    kept_.push_back(std::move(*bytes));
    auto replies = wire::DecodeReplies(kept_.back(), {});
    EXPECT_TRUE(replies.ok()) << replies.status().ToString();
    if (!replies.ok() || replies->size() != 1) return {};
    return (*replies)[0];
  }

 private:
  std::unique_ptr<transport::Fabric> fabric_;
  std::shared_ptr<transport::Endpoint> ep_;
  std::vector<std::vector<std::byte>> replies_;
  std::vector<std::vector<std::byte>> kept_;  // decoded replies view these
};

class KvNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(KvNodeTest, ServesPrepareCommitGetAndStops) {
  ClusterConfig config;
  std::unique_ptr<KvNode> node = StartNode(GetParam(), &config);
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->ready());
  ASSERT_EQ(node->partitions().size(), 2u);
  EXPECT_EQ(node->partitions()[0].partition, 0u);
  EXPECT_EQ(node->partitions()[1].partition, 2u);
  EXPECT_EQ(node->partitions()[1].port, node->partitions()[0].port + 1);

  for (const PartitionAddress& a : node->partitions()) {
    SCOPED_TRACE(a.partition);
    Client client;
    ASSERT_TRUE(client.Connect(config, a.port).ok());
    const uint16_t p = static_cast<uint16_t>(a.partition);

    std::vector<std::byte> msg;
    std::string sib = wire::EncodeKeyList(std::vector<std::string_view>{"k"});
    std::vector<wire::PrepareItemIn> items = {{"k", "value", sib, false}};
    wire::RequestWriter(&msg).Prepare(p, 1, 42, items);
    EXPECT_TRUE(client.One(msg).ok());

    msg.clear();
    wire::RequestWriter(&msg).Commit(p, 2, 42);
    EXPECT_TRUE(client.One(msg).ok());

    msg.clear();
    std::vector<std::string_view> keys = {"k", "missing"};
    wire::RequestWriter(&msg).Get(p, 3, keys);
    wire::Reply r = client.One(msg);
    EXPECT_TRUE(r.ok()) << r.ToStatus().ToString();
    EXPECT_EQ(r.header.request_id, 3u);
    ASSERT_EQ(r.results.size(), 2u);
    EXPECT_TRUE(r.results[0].found);
    EXPECT_EQ(r.results[0].ts, 42u);
    EXPECT_EQ(r.results[0].value, "value");
    EXPECT_FALSE(r.results[1].found);

    // Garbage gets an error reply and the connection keeps working.
    std::vector<std::byte> garbage = {std::byte{7}};
    r = client.One(garbage);
    EXPECT_FALSE(r.ok());
    msg.clear();
    wire::RequestWriter(&msg).Get(p, 4, keys);
    EXPECT_TRUE(client.One(msg).ok());
  }

  const auto start = std::chrono::steady_clock::now();
  node->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_FALSE(node->ready());
  node->Stop();  // idempotent
}

TEST_P(KvNodeTest, PortInUseIsAnErrorNamingThePort) {
  // Partition 2 (slot 1) of node 0 listens on base + 1 = the taken port; the
  // base must be free, or partition 0 fails first on a port of someone else.
  const uint16_t base = FreePortPair();
  ASSERT_NE(base, 0);
  BoundSocket taken(static_cast<uint16_t>(base + 1), /*listen_too=*/true);
  ASSERT_NE(taken.port(), 0);
  ClusterConfig config = TestConfig(GetParam(), base);
  auto node = KvNode::Start(config, 0);
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.status().message().find(StrCat(":", taken.port())), std::string_view::npos)
      << node.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Backends, KvNodeTest, ::testing::Values("tcp", "ucx"),
                         [](const auto& info) { return info.param; });

TEST(KvNodeStartTest, UnknownNodeAndBadKvSettingsAreErrors) {
  ClusterConfig config = TestConfig("tcp", 20000);
  auto node = KvNode::Start(config, 7);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), StatusCode::kNotFound);

  config.kv.max_value_bytes = 64 << 20;  // with the key and metadata over the 64 MiB slot
  node = KvNode::Start(config, 0);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(node.status().message().find("kv.max_value_bytes"), std::string_view::npos)
      << node.status().ToString();
}

}  // namespace
}  // namespace rampart::kv
