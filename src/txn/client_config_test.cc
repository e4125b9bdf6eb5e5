#include "txn/client_config.h"

#include <gtest/gtest.h>

namespace rampart::txn {
namespace {

ClusterConfig Config(std::string_view toml) {
  auto config = ParseClusterConfig(toml, "client_config_test");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : ClusterConfig{};
}

TEST(ClientOptionsFromConfigTest, TakesTheClusterFile) {
  ClusterConfig config = Config(R"(
[transport]
backend = "ucx"
ring_bytes = "64KiB"
connect_timeout_ms = 1234
[kv]
partitions_per_node = 3
[client]
get = "read"
put = "ring"
address_cache_entries = 77
)");
  auto options = ClientOptionsFromConfig(config, "s2pl", "", "", "");
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->nodes, config.nodes);
  EXPECT_EQ(options->partitions_per_node, 3u);
  EXPECT_EQ(options->fabric.backend, transport::Backend::kUcx);
  EXPECT_EQ(options->fabric.connect_timeout, std::chrono::milliseconds(1234));
  EXPECT_EQ(options->channel.ring_bytes, 64u << 10);
  EXPECT_EQ(options->address_cache_entries, 77u);
  EXPECT_EQ(options->isolation, Isolation::kS2pl);
  EXPECT_EQ(options->get_mode, GetMode::kRead);
  EXPECT_EQ(options->put_mode, PutMode::kRing);
  EXPECT_EQ(options->client_id, 0u);
}

TEST(ClientOptionsFromConfigTest, ArgumentsOverrideTheFile) {
  ClusterConfig config = Config("[client]\nget = \"read\"\nput = \"ring\"\n");
  auto options = ClientOptionsFromConfig(config, "none", "rpc", "rpc", "tcp");
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->isolation, Isolation::kNone);
  EXPECT_EQ(options->get_mode, GetMode::kRpc);
  EXPECT_EQ(options->put_mode, PutMode::kRpc);
  EXPECT_EQ(options->fabric.backend, transport::Backend::kTcp);
}

TEST(ClientOptionsFromConfigTest, RejectsBadNamesAndOneSidedModesOverTcp) {
  ClusterConfig config = Config("");
  EXPECT_EQ(ClientOptionsFromConfig(config, "", "", "", "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ClientOptionsFromConfig(config, "ramp-fast", "", "", "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ClientOptionsFromConfig(config, "ramp", "star", "", "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ClientOptionsFromConfig(config, "ramp", "", "read", "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ClientOptionsFromConfig(config, "ramp", "", "", "rdma").status().code(),
            StatusCode::kInvalidArgument);
  Status over_tcp = ClientOptionsFromConfig(config, "ramp", "read", "", "tcp").status();
  EXPECT_EQ(over_tcp.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(over_tcp.message().find("need the ucx transport"), std::string_view::npos)
      << over_tcp.ToString();
  EXPECT_FALSE(ClientOptionsFromConfig(config, "ramp", "rpc", "ring", "tcp").ok());
  EXPECT_TRUE(ClientOptionsFromConfig(config, "ramp", "rpc", "rpc", "tcp").ok());
}

}  // namespace
}  // namespace rampart::txn
