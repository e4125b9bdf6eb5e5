// The settings of a cluster over several hosts: [[proxies]], the cluster
// secret, transport.ucx.net_devices = "auto".
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/config.h"
#include "common/config_test_util.h"

namespace rampart {
namespace {

using config_test::ErrorOf;
using config_test::ParseOk;

constexpr char kTwoHosts[] =
    "[[nodes]]\nid = 0\nhost = \"10.0.0.1\"\nport = 7000\n"
    "[[nodes]]\nid = 1\nhost = \"10.0.0.2\"\nport = 7000\n";

TEST(ConfigProxiesTest, WithoutAListTheProxySectionIsTheOneProxy) {
  ClusterConfig config = ParseOk("");
  ASSERT_EQ(config.ProxyProcesses().size(), 1u);
  EXPECT_EQ(config.ProxyProcesses()[0], (ProxyAddressConfig{0, "127.0.0.1", 6380}));
  config = ParseOk("proxy.enabled = false\n");
  EXPECT_TRUE(config.ProxyProcesses().empty());
}

TEST(ConfigProxiesTest, AListReplacesIt) {
  ClusterConfig config = ParseOk(std::string(kTwoHosts) +
                                 "[[proxies]]\nid = 1\nhost = \"10.0.0.3\"\nport = 6380\n"
                                 "[[proxies]]\nid = 2\nhost = \"10.0.0.4\"\nport = 6381\n");
  ASSERT_EQ(config.ProxyProcesses().size(), 2u);
  EXPECT_EQ(config.ProxyProcesses()[1], (ProxyAddressConfig{2, "10.0.0.4", 6381}));
  EXPECT_EQ(config.Hosts(),
            (std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}));
  EXPECT_EQ(ParseOk(FormatClusterConfig(config)), config);  // `config show` round-trips them
}

TEST(ConfigProxiesTest, BadEntriesAreRefused) {
  EXPECT_EQ(ErrorOf("[[proxies]]\nid = 0\nhost = \"10.0.0.3\"\n"),
            "c.toml:1:1: proxies[0].port is missing (every [[proxies]] entry needs id, host and "
            "port)");
  EXPECT_EQ(ErrorOf("[[proxies]]\nid = 1000\nhost = \"h\"\nport = 1\n"),
            "c.toml:2:6: proxies[0].id must be between 0 and 999, got 1000");
  EXPECT_EQ(ErrorOf("[[proxies]]\nid = 3\nhost = \"h\"\nport = 1\n"
                    "[[proxies]]\nid = 3\nhost = \"h\"\nport = 2\n"),
            "c.toml:6:6: proxies[1].id 3 is already the id of proxies[0]");
  EXPECT_EQ(ErrorOf("kv.partitions_per_node = 2\n[[proxies]]\nid = 0\nhost = \"127.0.0.1\"\nport = 7011\n"),
            "c.toml: proxies[id 0] 127.0.0.1:7011 is one of nodes[1] ports 7010..7011 on "
            "127.0.0.1 (each node uses kv.partitions_per_node = 2 ports from its port)");
}

TEST(ConfigSecretTest, InlineSecretsAreCheckedAtParse) {
  EXPECT_EQ(ErrorOf("cluster.secret = \"short\"\n"),
            "c.toml: cluster.secret has 5 characters; at least 16 are needed");
  EXPECT_EQ(ErrorOf("cluster.secret = \"0123456789abcdef\"\ncluster.secret_file = \"/x\"\n"),
            "c.toml: cluster.secret and cluster.secret_file are both set; give one");
  ClusterConfig config = ParseOk("cluster.secret = \"0123456789abcdef\"\n");
  auto secret = ReadClusterSecret(config);
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ(secret->value, "0123456789abcdef");
  EXPECT_EQ(ReadClusterSecret(ParseOk(""))->value, "");  // none: no authentication
}

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rampart-secret-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& text, mode_t mode) {
    const std::string path = (dir_ / "secret").string();
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(SecretFileTest, TrailingWhitespaceIsDropped) {
  ClusterConfig config;
  config.secret_file = Write("3f9c2a7be01d44c5a8e6\n\n", 0600);
  auto secret = ReadClusterSecret(config);
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  EXPECT_EQ(secret->value, "3f9c2a7be01d44c5a8e6");
  EXPECT_EQ(secret->warning, "");
}

TEST_F(SecretFileTest, AFileOthersMayReadIsUsedWithAWarning) {
  ClusterConfig config;
  config.secret_file = Write("3f9c2a7be01d44c5a8e6", 0644);
  auto secret = ReadClusterSecret(config);
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ(secret->warning, "cluster.secret_file " + config.secret_file +
                                 " may be read by others (mode 0644); chmod 600 it");
}

TEST_F(SecretFileTest, MissingShortAndHugeFilesAreErrors) {
  ClusterConfig config;
  config.secret_file = (dir_ / "absent").string();
  EXPECT_EQ(ReadClusterSecret(config).status().code(), StatusCode::kIoError);
  EXPECT_EQ(ReadClusterSecret(config).status().message(),
            "cluster.secret_file " + config.secret_file + ": cannot read: No such file or directory");
  config.secret_file = Write("tooshort\n", 0600);
  EXPECT_EQ(ReadClusterSecret(config).status().message(),
            "cluster.secret_file " + config.secret_file +
                " holds 8 characters; a secret has at least 16 (rampart secret generate " +
                config.secret_file + " writes one)");
  config.secret_file = Write(std::string(5000, 'x'), 0600);
  EXPECT_EQ(ReadClusterSecret(config).status().message(),
            "cluster.secret_file " + config.secret_file + " is longer than 4 KiB");
}

TEST(ConfigNetDevicesTest, AutoIsLoopbackOnlyForALoopbackCluster) {
  EXPECT_EQ(EffectiveNetDevices(ParseOk("")), "lo");
  EXPECT_EQ(EffectiveNetDevices(ParseOk(kTwoHosts)), "");  // UCX's choice: RDMA devices too
  ClusterConfig config = ParseOk("proxy.host = \"10.0.0.9\"\n");  // one host not loopback
  EXPECT_EQ(EffectiveNetDevices(config), "");
  config = ParseOk("transport.ucx.net_devices = \"all\"\n");
  EXPECT_EQ(EffectiveNetDevices(config), "");
  config = ParseOk("transport.ucx.net_devices = \"eth1,mlx5_0:1\"\n" + std::string(kTwoHosts));
  EXPECT_EQ(EffectiveNetDevices(config), "eth1,mlx5_0:1");
}

}  // namespace
}  // namespace rampart

namespace rampart {
namespace {

using config_test::ParseOk;

ClusterConfig NodesOn(const std::string& host, int nodes) {
  std::string text;
  for (int i = 0; i < nodes; ++i) {
    text += StrCat("[[nodes]]\nid = ", i, "\nhost = \"", host, "\"\nport = ", 7000 + 10 * i, "\n");
  }
  text += StrCat("[proxy]\nhost = \"", host, "\"\n");
  return ParseOk(text);
}

TEST(ConfigAutoPartitionsTest, OnOneMachineHalfTheCoresOverTheNodes) {
  const ClusterConfig four = NodesOn("127.0.0.1", 4);
  EXPECT_EQ(AutoPartitionsPerNode(four, 1), 1u);
  EXPECT_EQ(AutoPartitionsPerNode(four, 2), 1u);  // this laptop-sized VM
  EXPECT_EQ(AutoPartitionsPerNode(four, 16), 2u);
  EXPECT_EQ(AutoPartitionsPerNode(four, 512), kMaxAutoPartitions);
  EXPECT_EQ(AutoPartitionsPerNode(NodesOn("localhost", 1), 8), 4u);
}

// proxy.workers = 0: a quarter of the cores on one machine (the partitions
// and the clients share them), one per core on a proxy host of a cluster over
// several machines; a number as written.
TEST(ConfigAutoWorkersTest, AQuarterOfTheCoresOnOneMachineOnePerCoreAcross) {
  const ClusterConfig local = NodesOn("127.0.0.1", 4);
  EXPECT_EQ(EffectiveProxyWorkers(local, 1), 1u);
  EXPECT_EQ(EffectiveProxyWorkers(local, 2), 1u);  // this laptop-sized VM
  EXPECT_EQ(EffectiveProxyWorkers(local, 8), 2u);
  EXPECT_EQ(EffectiveProxyWorkers(local, 64), 16u);
  const ClusterConfig remote = NodesOn("10.0.0.5", 2);
  EXPECT_EQ(EffectiveProxyWorkers(remote, 2), 2u);
  EXPECT_EQ(EffectiveProxyWorkers(remote, 64), 64u);
  ClusterConfig set = local;
  set.proxy.workers = 3;
  EXPECT_EQ(EffectiveProxyWorkers(set, 64), 3u);
}

TEST(ConfigAutoPartitionsTest, AcrossMachinesTheSameEverywhere) {
  const ClusterConfig remote = NodesOn("10.0.0.5", 2);
  EXPECT_EQ(AutoPartitionsPerNode(remote, 2), kAcrossHostsPartitions);
  EXPECT_EQ(AutoPartitionsPerNode(remote, 64), kAcrossHostsPartitions);
}

TEST(ConfigAutoPartitionsTest, ResolvedForTheFilesOwnNodes) {
  // The embedded default's 4 nodes do not decide a file with 1 node.
  const ClusterConfig one = NodesOn("127.0.0.1", 1);
  EXPECT_EQ(one.kv.partitions_per_node, AutoPartitionsPerNode(one, UsableCores()));
  EXPECT_EQ(NodesOn("10.0.0.5", 1).kv.partitions_per_node, kAcrossHostsPartitions);
  // A number stays as written.
  EXPECT_EQ(ParseOk("kv.partitions_per_node = 3\n").kv.partitions_per_node, 3u);
  // `config show` prints the number, which reads back the same.
  EXPECT_EQ(ParseOk(FormatClusterConfig(one)), one);
}

}  // namespace
}  // namespace rampart
