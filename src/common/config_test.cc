#include "common/config.h"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "common/config_test_util.h"

namespace rampart {
namespace {

using config_test::ErrorOf;
using config_test::ParseOk;

std::filesystem::path SourceRoot() {
  // __FILE__ is absolute under CMake: <root>/src/common/config_test.cc.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

// ---------------------------------------------------------------------------
// The default

TEST(ConfigTest, DefaultParses) {
  Result<ClusterConfig> config = LoadClusterConfig("");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->origin, "<default>");
  EXPECT_EQ(config->name, "local");
  EXPECT_EQ(config->transport.backend, "ucx");
  EXPECT_EQ(config->transport.max_message_size, 64 * kMiB);
  EXPECT_EQ(config->transport.spin_us, TransportConfig::kSpinAuto);
  EXPECT_EQ(config->transport.connect_timeout_ms, 5000u);
  EXPECT_EQ(config->transport.ring_bytes, kMiB);
  EXPECT_EQ(config->transport.registration_cache_bytes, 256 * kMiB);
  EXPECT_EQ(config->transport.ucx.net_devices, "auto");
  EXPECT_EQ(config->transport.ucx.tls, "");
  ASSERT_EQ(config->nodes.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(config->nodes[i].id, i);
    EXPECT_EQ(config->nodes[i].host, "127.0.0.1");
    EXPECT_EQ(config->nodes[i].port, 7000 + 10 * i);
  }
  EXPECT_EQ(config->nodes[2].address(), "127.0.0.1:7020");
  ASSERT_NE(config->FindNode(3), nullptr);
  EXPECT_EQ(config->FindNode(3)->port, 7030);
  EXPECT_EQ(config->FindNode(4), nullptr);
  const ProxyConfig& proxy = config->proxy;
  EXPECT_TRUE(proxy.enabled);
  EXPECT_EQ(proxy.host, "127.0.0.1");
  EXPECT_EQ(proxy.port, 6380);
  EXPECT_EQ(proxy.workers, 0u);
  EXPECT_TRUE(proxy.aggregate);
  EXPECT_EQ(proxy.batch_max_commands, 1024u);
  EXPECT_EQ(proxy.batch_wait_us, 0u);
  EXPECT_EQ(proxy.replicas, 1u);
  EXPECT_EQ(proxy.vnodes, 160u);
  EXPECT_EQ(proxy.isolation, "ramp");
  EXPECT_EQ(proxy.requirepass, "");
  EXPECT_EQ(proxy.max_bulk_bytes, 512 * kMiB);
  EXPECT_EQ(proxy.max_array_elements, 1048576u);
  EXPECT_EQ(proxy.max_inline_bytes, 64 * kKiB);
  EXPECT_EQ(proxy.max_clients, 10000u);
  EXPECT_EQ(proxy.timeout_ms, 5000u);
}

TEST(ConfigTest, StructDefaultsMatchDefaultToml) {
  Result<ClusterConfig> config = LoadClusterConfig("");
  ASSERT_TRUE(config.ok());
  ClusterConfig defaults;
  // "auto" is loaded as what it resolves to on this machine.
  EXPECT_EQ(defaults.kv.partitions_per_node, KvConfig::kPartitionsAuto);
  defaults.kv.partitions_per_node = AutoPartitionsPerNode(*config, UsableCores());
  EXPECT_EQ(config->name, defaults.name);
  EXPECT_EQ(config->transport, defaults.transport)
      << "a field default in config.h differs from config/default.toml";
  EXPECT_EQ(config->kv, defaults.kv) << "a [kv] default in config.h differs from default.toml";
  EXPECT_EQ(config->client, defaults.client)
      << "a [client] default in config.h differs from default.toml";
  EXPECT_EQ(config->proxy, defaults.proxy)
      << "a [proxy] default in config.h differs from default.toml";
}

TEST(ConfigTest, DefaultTomlSpellsOutEverySetting) {
  const toml::table root = toml::parse(DefaultClusterConfigText());
  for (const SettingDoc& s : DescribeClusterSettings()) {
    // List entries: the default has nodes and, commented out, storage nodes
    // and proxies; no volumes.
    if (s.key.starts_with("nodes[]") || s.key.starts_with("storage_nodes[]") ||
        s.key.starts_with("volumes[]") || s.key.starts_with("proxies[]")) {
      continue;
    }
    EXPECT_TRUE(root.at_path(s.key).is_value()) << s.key << " is missing from config/default.toml";
  }
}

TEST(ConfigTest, EmbeddedTextIsTheFile) {
  std::ifstream in(SourceRoot() / "config/default.toml");
  ASSERT_TRUE(in) << "cannot open config/default.toml";
  std::stringstream file;
  file << in.rdbuf();
  EXPECT_EQ(file.str(), DefaultClusterConfigText());
}

TEST(ConfigTest, ParsingTheDefaultTextGivesTheDefault) {
  EXPECT_EQ(ParseOk(DefaultClusterConfigText()), *LoadClusterConfig(""));
}

// ---------------------------------------------------------------------------
// Overrides

TEST(ConfigTest, EmptyFileIsTheDefault) {
  ClusterConfig config = ParseOk("");
  EXPECT_EQ(config, *LoadClusterConfig(""));
  EXPECT_EQ(config.origin, "c.toml");
}

TEST(ConfigTest, KeysLeftOutKeepTheirDefault) {
  ClusterConfig config = ParseOk("[transport]\nbackend = \"tcp\"\n");
  EXPECT_EQ(config.transport.backend, "tcp");
  EXPECT_EQ(config.transport.ring_bytes, kMiB);
  EXPECT_EQ(config.transport.ucx.net_devices, "auto");
  EXPECT_EQ(config.nodes.size(), 4u);
}

TEST(ConfigTest, DottedKeysAndInlineTablesWork) {
  ClusterConfig config = ParseOk(
      "transport.spin_us = 0\n"
      "transport.ucx = { tls = \"shm,tcp\" }\n"
      "cluster = { name = \"bench-1\" }\n");
  EXPECT_EQ(config.transport.spin_us, 0u);
  EXPECT_EQ(config.transport.ucx.tls, "shm,tcp");
  EXPECT_EQ(config.transport.ucx.net_devices, "auto");
  EXPECT_EQ(config.name, "bench-1");
}

TEST(ConfigTest, NodesReplaceTheDefaultNodes) {
  ClusterConfig config = ParseOk(
      "[[nodes]]\nid = 7\nhost = \"10.0.0.1\"\nport = 9000\n"
      "[[nodes]]\nid = 2\nhost = \"10.0.0.2\"\nport = 9000\n");
  ASSERT_EQ(config.nodes.size(), 2u);
  EXPECT_EQ(config.nodes[0], (NodeConfig{7, "10.0.0.1", 9000}));
  EXPECT_EQ(config.nodes[1], (NodeConfig{2, "10.0.0.2", 9000}));
  EXPECT_EQ(config.transport.backend, "ucx");
}

TEST(ConfigTest, SameHostDifferentPortsAndSamePortDifferentHostsAreFine) {
  // One port per node (kv.partitions_per_node = 1), so ports 1 and 2 do not overlap.
  ClusterConfig config = ParseOk(
      "kv.partitions_per_node = 1\n"
      "nodes = [ { id = 0, host = \"a\", port = 1 }, { id = 1, host = \"a\", port = 2 },"
      "          { id = 2, host = \"b\", port = 1 } ]\n");
  EXPECT_EQ(config.nodes.size(), 3u);
}

TEST(ConfigTest, RangeBoundsAreInclusive) {
  ClusterConfig config = ParseOk(
      "[transport]\nspin_us = 1000000\nconnect_timeout_ms = 1\nring_bytes = \"4KiB\"\n"
      "max_message_size = \"1GiB\"\nregistration_cache_bytes = 0\n"
      "[kv]\npartitions_per_node = 1\n"
      "[[nodes]]\nid = 65535\nhost = \"h\"\nport = 65535\n");
  EXPECT_EQ(config.transport.spin_us, 1'000'000u);
  EXPECT_EQ(config.transport.connect_timeout_ms, 1u);
  EXPECT_EQ(config.transport.ring_bytes, 4 * kKiB);
  EXPECT_EQ(config.transport.max_message_size, kGiB);
  EXPECT_EQ(config.transport.registration_cache_bytes, 0u);
  EXPECT_EQ(config.nodes[0].id, 65535u);
  EXPECT_EQ(config.nodes[0].port, 65535);
  EXPECT_EQ(ParseOk("transport.ring_bytes = \"1GiB\"").transport.ring_bytes, kGiB);
}

TEST(ConfigTest, ProxySectionParses) {
  ClusterConfig config = ParseOk(
      "[proxy]\n"
      "enabled = false\nhost = \"0.0.0.0\"\nport = 7379\nworkers = 3\naggregate = false\n"
      "batch_max_commands = 64\nbatch_wait_us = 250\nreplicas = 3\nvnodes = 32\n"
      "isolation = \"none\"\nrequirepass = \"s3cret pass\"\nmax_bulk_bytes = \"1MiB\"\n"
      "max_array_elements = 100\nmax_inline_bytes = 2048\nmax_clients = 5\n"
      "timeout_ms = 250\n");
  const ProxyConfig& p = config.proxy;
  EXPECT_FALSE(p.enabled);
  EXPECT_EQ(p.host, "0.0.0.0");
  EXPECT_EQ(p.port, 7379);
  EXPECT_EQ(p.workers, 3u);
  EXPECT_FALSE(p.aggregate);
  EXPECT_EQ(p.batch_max_commands, 64u);
  EXPECT_EQ(p.batch_wait_us, 250u);
  EXPECT_EQ(p.replicas, 3u);
  EXPECT_EQ(p.vnodes, 32u);
  EXPECT_EQ(p.isolation, "none");
  EXPECT_EQ(p.requirepass, "s3cret pass");
  EXPECT_EQ(p.max_bulk_bytes, kMiB);
  EXPECT_EQ(p.max_array_elements, 100u);
  EXPECT_EQ(p.max_inline_bytes, 2 * kKiB);
  EXPECT_EQ(p.max_clients, 5u);
  EXPECT_EQ(p.timeout_ms, 250u);
  EXPECT_NE(config, *LoadClusterConfig(""));  // operator== sees [proxy]
  // Keys left out keep their default; booleans go both ways.
  ClusterConfig one = ParseOk("proxy.aggregate = false\n");
  EXPECT_FALSE(one.proxy.aggregate);
  EXPECT_TRUE(one.proxy.enabled);
  EXPECT_EQ(one.proxy.port, 6380);
  EXPECT_TRUE(ParseOk("proxy = { aggregate = true }").proxy.aggregate);
}

TEST(ConfigTest, ProxyRangeBoundsAreInclusive) {
  const std::string eight_nodes = [] {
    std::string out;
    for (int i = 0; i < 8; ++i) {
      out += "[[nodes]]\nid = " + std::to_string(i) + "\nhost = \"h\"\nport = " +
             std::to_string(7000 + 10 * i) + "\n";
    }
    return out;
  }();
  ClusterConfig low = ParseOk(
      "[proxy]\nport = 1\nworkers = 0\nbatch_max_commands = 1\nbatch_wait_us = 0\n"
      "replicas = 1\nvnodes = 1\nmax_bulk_bytes = \"1B\"\nmax_array_elements = 1\n"
      "max_inline_bytes = \"1KiB\"\nmax_clients = 1\ntimeout_ms = 1\n");
  EXPECT_EQ(low.proxy.port, 1);
  EXPECT_EQ(low.proxy.vnodes, 1u);
  EXPECT_EQ(low.proxy.max_bulk_bytes, 1u);
  EXPECT_EQ(low.proxy.max_inline_bytes, kKiB);
  ClusterConfig high = ParseOk(
      "[proxy]\nport = 65535\nworkers = 64\nbatch_max_commands = 1000000\n"
      "batch_wait_us = 1000000\nreplicas = 8\nvnodes = 4096\nmax_bulk_bytes = \"4GiB\"\n"
      "max_array_elements = 2147483647\nmax_inline_bytes = \"1GiB\"\nmax_clients = 1000000\n"
      "timeout_ms = 3600000\n" +
      eight_nodes);
  EXPECT_EQ(high.proxy.port, 65535);
  EXPECT_EQ(high.proxy.workers, 64u);
  EXPECT_EQ(high.proxy.batch_max_commands, 1'000'000u);
  EXPECT_EQ(high.proxy.batch_wait_us, 1'000'000u);
  EXPECT_EQ(high.proxy.replicas, 8u);
  EXPECT_EQ(high.proxy.vnodes, 4096u);
  EXPECT_EQ(high.proxy.max_bulk_bytes, 4 * kGiB);
  EXPECT_EQ(high.proxy.max_array_elements, 2'147'483'647u);
  EXPECT_EQ(high.proxy.max_inline_bytes, kGiB);
  EXPECT_EQ(high.proxy.max_clients, 1'000'000u);
  EXPECT_EQ(high.proxy.timeout_ms, 3'600'000u);
}

// ---------------------------------------------------------------------------
// Sizes in the file

TEST(ConfigTest, SizesAcceptBytesAndUnits) {
  EXPECT_EQ(ParseOk("transport.max_message_size = 4096").transport.max_message_size, 4096u);
  EXPECT_EQ(ParseOk("transport.max_message_size = \"4096\"").transport.max_message_size, 4096u);
  EXPECT_EQ(ParseOk("transport.max_message_size = \"2MiB\"").transport.max_message_size,
            2 * kMiB);
  EXPECT_EQ(ParseOk("transport.max_message_size = \"2MB\"").transport.max_message_size,
            2'000'000u);
  EXPECT_EQ(ParseOk("transport.max_message_size = \"8 KiB\"").transport.max_message_size,
            8 * kKiB);
  EXPECT_EQ(ParseOk("transport.registration_cache_bytes = \"1GB\"")
                .transport.registration_cache_bytes,
            1'000'000'000u);
  EXPECT_EQ(ParseOk("transport.ring_bytes = 65536").transport.ring_bytes, 64 * kKiB);
}

// ---------------------------------------------------------------------------
// Every validation error, one line naming file, position, key and problem

TEST(ConfigErrorTest, UnknownKeysSuggestTheNearestKnownOne) {
  EXPECT_EQ(ErrorOf("[transport]\nbacknd = \"tcp\"\n"),
            "c.toml:2:1: unknown key transport.backnd (did you mean transport.backend?)");
  EXPECT_EQ(ErrorOf("[transprt]\n"), "c.toml:1:2: unknown key transprt (did you mean transport?)");
  EXPECT_EQ(ErrorOf("backend = \"tcp\"\n"),
            "c.toml:1:1: unknown key backend (did you mean transport.backend?)");
  EXPECT_EQ(ErrorOf("[transport.ucx]\ntsl = \"\"\n"),
            "c.toml:2:1: unknown key transport.ucx.tsl (did you mean transport.ucx.tls?)");
  EXPECT_EQ(ErrorOf("[storge]\nx = 1\n"), "c.toml:1:2: unknown key storge (did you mean storage?)");
  EXPECT_EQ(ErrorOf("[storage]\nx = 1\n"), "c.toml:2:1: unknown key storage.x");
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 0\nhost = \"a\"\nprot = 1\n"),
            "c.toml:4:1: unknown key nodes[0].prot (did you mean nodes[0].port?)");
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 0\nhost = \"a\"\nport = 1\nweight = 2\n"),
            "c.toml:5:1: unknown key nodes[0].weight");
}

TEST(ConfigErrorTest, TheFirstProblemInTheFileIsReported) {
  EXPECT_EQ(ErrorOf("[transport]\nzzz = 1\naaa = 2\n"), "c.toml:2:1: unknown key transport.zzz");
  // [transport.ucx] belongs to the [transport] table that starts first, but
  // its problem is further down than the one in [cluster].
  EXPECT_EQ(ErrorOf("[transport]\nspin_us = 1\n[cluster]\nname = \"\"\n[transport.ucx]\ntsl = \"\"\n"),
            "c.toml:4:8: cluster.name must not be empty, got \"\"");
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 0\nhost = \"a\"\nport = 1\n[cluster]\nname = 5\n"
                    "[[nodes]]\nid = 0\nhost = \"a\"\nport = 2\n"),
            "c.toml:6:8: cluster.name must be a string, got integer 5");
}

TEST(ConfigErrorTest, WrongTypes) {
  EXPECT_EQ(ErrorOf("[transport]\nspin_us = \"50\"\n"),
            "c.toml:2:11: transport.spin_us must be an integer or \"auto\", got string \"50\"");
  EXPECT_EQ(ErrorOf("[transport]\nspin_us = \"Auto\"\n"),
            "c.toml:2:11: transport.spin_us must be an integer or \"auto\", got string \"Auto\"");
  EXPECT_EQ(ErrorOf("[transport]\nconnect_timeout_ms = \"auto\"\n"),
            "c.toml:2:22: transport.connect_timeout_ms must be an integer, got string \"auto\"");
  EXPECT_EQ(ErrorOf("[transport]\nbackend = 1\n"),
            "c.toml:2:11: transport.backend must be a string, got integer 1");
  EXPECT_EQ(ErrorOf("[transport]\nmax_message_size = 1.5\n"),
            "c.toml:2:20: transport.max_message_size must be a size (integer bytes or a string "
            "like \"64MiB\"), got float 1.5");
  EXPECT_EQ(ErrorOf("[transport]\nring_bytes = true\n"),
            "c.toml:2:14: transport.ring_bytes must be a size (integer bytes or a string like "
            "\"64MiB\"), got boolean true");
  EXPECT_EQ(ErrorOf("transport = 5\n"), "c.toml:1:13: transport must be a table, got integer 5");
  EXPECT_EQ(ErrorOf("cluster = [1]\n"), "c.toml:1:11: cluster must be a table, got an array");
  EXPECT_EQ(ErrorOf("nodes = 3\n"),
            "c.toml:1:9: nodes must be an array of tables ([[nodes]]), got integer 3");
  EXPECT_EQ(ErrorOf("nodes = [3]\n"), "c.toml:1:10: nodes[0] must be a table, got integer 3");
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = \"0\"\n"),
            "c.toml:2:6: nodes[0].id must be an integer, got string \"0\"");
}

TEST(ConfigErrorTest, OutOfRange) {
  EXPECT_EQ(ErrorOf("[transport]\nspin_us = -1\n"),
            "c.toml:2:11: transport.spin_us must be between 0 and 1000000, got -1");
  EXPECT_EQ(ErrorOf("[transport]\nconnect_timeout_ms = 0\n"),
            "c.toml:2:22: transport.connect_timeout_ms must be between 1 and 3600000, got 0");
  EXPECT_EQ(ErrorOf("[transport]\nmax_message_size = \"2GiB\"\n"),
            "c.toml:2:20: transport.max_message_size must be between 1KiB and 1GiB, got 2GiB");
  EXPECT_EQ(ErrorOf("[transport]\nring_bytes = 2048\n"),
            "c.toml:2:14: transport.ring_bytes must be between 4KiB and 1GiB, got 2KiB");
  EXPECT_EQ(ErrorOf("[transport]\nring_bytes = -4096\n"),
            "c.toml:2:14: transport.ring_bytes must not be negative, got -4096");
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 0\nhost = \"a\"\nport = 0\n"),
            "c.toml:4:8: nodes[0].port must be between 1 and 65535, got 0");
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 65536\nhost = \"a\"\nport = 1\n"),
            "c.toml:2:6: nodes[0].id must be between 0 and 65535, got 65536");
}

TEST(ConfigErrorTest, ProxyOutOfRange) {
  const std::pair<const char*, const char*> cases[] = {
      {"port = 0", "proxy.port must be between 1 and 65535, got 0"},
      {"port = 65536", "proxy.port must be between 1 and 65535, got 65536"},
      {"workers = 65", "proxy.workers must be between 0 and 64, got 65"},
      {"batch_max_commands = 0", "proxy.batch_max_commands must be between 1 and 1000000, got 0"},
      {"batch_max_commands = 1000001",
       "proxy.batch_max_commands must be between 1 and 1000000, got 1000001"},
      {"batch_wait_us = 1000001", "proxy.batch_wait_us must be between 0 and 1000000, got 1000001"},
      {"batch_wait_us = -1", "proxy.batch_wait_us must be between 0 and 1000000, got -1"},
      {"replicas = 0", "proxy.replicas must be between 1 and 8, got 0"},
      {"replicas = 9", "proxy.replicas must be between 1 and 8, got 9"},
      {"vnodes = 0", "proxy.vnodes must be between 1 and 4096, got 0"},
      {"vnodes = 4097", "proxy.vnodes must be between 1 and 4096, got 4097"},
      {"max_bulk_bytes = 0", "proxy.max_bulk_bytes must be between 1B and 4GiB, got 0B"},
      {"max_bulk_bytes = \"5GiB\"", "proxy.max_bulk_bytes must be between 1B and 4GiB, got 5GiB"},
      {"max_array_elements = 0",
       "proxy.max_array_elements must be between 1 and 2147483647, got 0"},
      {"max_array_elements = 2147483648",
       "proxy.max_array_elements must be between 1 and 2147483647, got 2147483648"},
      {"max_inline_bytes = 1023",
       "proxy.max_inline_bytes must be between 1KiB and 1GiB, got 1023B"},
      {"max_inline_bytes = \"2GiB\"",
       "proxy.max_inline_bytes must be between 1KiB and 1GiB, got 2GiB"},
      {"max_clients = 0", "proxy.max_clients must be between 1 and 1000000, got 0"},
      {"max_clients = 1000001", "proxy.max_clients must be between 1 and 1000000, got 1000001"},
      {"timeout_ms = 0", "proxy.timeout_ms must be between 1 and 3600000, got 0"},
      {"timeout_ms = 3600001", "proxy.timeout_ms must be between 1 and 3600000, got 3600001"},
  };
  for (const auto& [line, error] : cases) {
    const std::string text = std::string("[proxy]\n") + line + "\n";
    const std::string column = std::to_string(std::string_view(line).find('=') + 3);
    EXPECT_EQ(ErrorOf(text), "c.toml:2:" + column + ": " + error) << line;
  }
}

TEST(ConfigErrorTest, ProxyTypesChoicesAndStrings) {
  EXPECT_EQ(ErrorOf("[proxy]\naggregate = \"yes\"\n"),
            "c.toml:2:13: proxy.aggregate must be a boolean, got string \"yes\"");
  EXPECT_EQ(ErrorOf("[proxy]\nenabled = 1\n"),
            "c.toml:2:11: proxy.enabled must be a boolean, got integer 1");
  EXPECT_EQ(ErrorOf("[proxy]\nenabled = \"true\"\n"),
            "c.toml:2:11: proxy.enabled must be a boolean, got string \"true\"");
  EXPECT_EQ(ErrorOf("[proxy]\nworkers = true\n"),
            "c.toml:2:11: proxy.workers must be an integer, got boolean true");
  EXPECT_EQ(ErrorOf("[proxy]\nmax_bulk_bytes = false\n"),
            "c.toml:2:18: proxy.max_bulk_bytes must be a size (integer bytes or a string like "
            "\"64MiB\"), got boolean false");
  EXPECT_EQ(ErrorOf("[proxy]\nrequirepass = false\n"),
            "c.toml:2:15: proxy.requirepass must be a string, got boolean false");
  EXPECT_EQ(ErrorOf("[proxy]\nnotify_keyspace_events = \"KEQ\"\n"),
            "c.toml:2:26: proxy.notify_keyspace_events may contain only the event class characters of "
            "Redis's notify-keyspace-events: Ag$lshzxeKEtmdn, got \"KEQ\"");
  EXPECT_EQ(ErrorOf("[proxy]\nisolation = \"s2pl\"\n"),
            "c.toml:2:13: proxy.isolation must be \"ramp\" or \"none\", got \"s2pl\"");
  EXPECT_EQ(ErrorOf("[proxy]\nhost = \"\"\n"),
            "c.toml:2:8: proxy.host must not be empty, got \"\"");
  EXPECT_EQ(ErrorOf("[proxy]\nhost = \"a b\"\n"),
            "c.toml:2:8: proxy.host must not contain whitespace, got \"a b\"");
  EXPECT_EQ(ErrorOf("[proxy]\nagregate = true\n"),
            "c.toml:2:1: unknown key proxy.agregate (did you mean proxy.aggregate?)");
  EXPECT_EQ(ErrorOf("proxy = 1\n"), "c.toml:1:9: proxy must be a table, got integer 1");
}

TEST(ConfigErrorTest, ProxyReplicasAtMostTheNodes) {
  EXPECT_EQ(ErrorOf("proxy.replicas = 5\n"),
            "c.toml: proxy.replicas is 5 but the cluster has 4 nodes (every key is kept on "
            "proxy.replicas distinct nodes)");
  EXPECT_EQ(ErrorOf("proxy.replicas = 4\n"), "OK");
  EXPECT_EQ(ErrorOf("proxy.replicas = 2\n[[nodes]]\nid = 0\nhost = \"h\"\nport = 7000\n"),
            "c.toml: proxy.replicas is 2 but the cluster has 1 node (every key is kept on "
            "proxy.replicas distinct nodes)");
}

TEST(ConfigErrorTest, ProxyPortIsNotANodesPort) {
  // Default nodes: 127.0.0.1 ports 7000..7001, 7010..7011, 7020..7021, 7030..7031
  // with 2 partitions each.
  EXPECT_EQ(ErrorOf("proxy.port = 7000\nkv.partitions_per_node = 2\n"),
            "c.toml: proxy.host:proxy.port 127.0.0.1:7000 is one of nodes[0] ports 7000..7001 on "
            "127.0.0.1 (each node uses kv.partitions_per_node = 2 ports from its port)");
  EXPECT_EQ(ErrorOf("proxy.port = 7031\nkv.partitions_per_node = 2\n"),
            "c.toml: proxy.host:proxy.port 127.0.0.1:7031 is one of nodes[3] ports 7030..7031 on "
            "127.0.0.1 (each node uses kv.partitions_per_node = 2 ports from its port)");
  EXPECT_EQ(ErrorOf("proxy.port = 7002\nkv.partitions_per_node = 2\n"), "OK");  // between
  EXPECT_EQ(ErrorOf("proxy.port = 7032\nkv.partitions_per_node = 2\n"), "OK");
  EXPECT_EQ(ErrorOf("proxy.port = 7001\nkv.partitions_per_node = 1\n"), "OK");
  EXPECT_EQ(ErrorOf("proxy.port = 7013\nkv.partitions_per_node = 4\n"),
            "c.toml: proxy.host:proxy.port 127.0.0.1:7013 is one of nodes[1] ports 7010..7013 on "
            "127.0.0.1 (each node uses kv.partitions_per_node = 4 ports from its port)");
  // Another host may use the port.
  EXPECT_EQ(ErrorOf("proxy = { host = \"10.0.0.9\", port = 7000 }\n"), "OK");
  EXPECT_EQ(ErrorOf("proxy.port = 7000\n"
                    "[[nodes]]\nid = 0\nhost = \"10.0.0.1\"\nport = 7000\n"),
            "OK");
}

TEST(ConfigErrorTest, BadSizes) {
  EXPECT_EQ(ErrorOf("transport.ring_bytes = \"1XB\""),
            "c.toml:1:24: transport.ring_bytes must be a size: \"1XB\": unknown unit \"XB\" (use "
            "B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
  EXPECT_EQ(ErrorOf("transport.ring_bytes = \"1.5MiB\""),
            "c.toml:1:24: transport.ring_bytes must be a size: \"1.5MiB\": fractions are not "
            "supported; use a smaller unit (e.g. 1536KiB)");
}

TEST(ConfigErrorTest, RingBytesMustBeAPowerOfTwo) {
  EXPECT_EQ(ErrorOf("[transport]\nring_bytes = \"1000KiB\"\n"),
            "c.toml:2:14: transport.ring_bytes must be a power of two, got 1000KiB (1024000 "
            "bytes; nearest: 512KiB or 1MiB)");
  EXPECT_EQ(ErrorOf("[transport]\nring_bytes = \"1MB\"\n"),
            "c.toml:2:14: transport.ring_bytes must be a power of two, got 1MB (1000000 bytes; "
            "nearest: 512KiB or 1MiB)");
}

TEST(ConfigErrorTest, BadBackend) {
  EXPECT_EQ(ErrorOf("[transport]\nbackend = \"rdma\"\n"),
            "c.toml:2:11: transport.backend must be \"ucx\" or \"tcp\", got \"rdma\"");
  EXPECT_EQ(ErrorOf("[transport]\nbackend = \"UCX\"\n"),
            "c.toml:2:11: transport.backend must be \"ucx\" or \"tcp\", got \"UCX\"");
}

TEST(ConfigErrorTest, BadStrings) {
  EXPECT_EQ(ErrorOf("[cluster]\nname = \"\"\n"),
            "c.toml:2:8: cluster.name must not be empty, got \"\"");
  EXPECT_EQ(ErrorOf("[cluster]\nname = \"my cluster\"\n"),
            "c.toml:2:8: cluster.name may contain only letters, digits, '.', '_' and '-', got "
            "\"my cluster\"");
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 0\nhost = \"\"\nport = 1\n"),
            "c.toml:3:8: nodes[0].host must not be empty, got \"\"");
}

TEST(ConfigErrorTest, Nodes) {
  EXPECT_EQ(ErrorOf("nodes = []\n"), "c.toml:1:9: nodes must list at least one node");
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 0\nhost = \"a\"\n"),
            "c.toml:1:1: nodes[0].port is missing (every [[nodes]] entry needs id, host and "
            "port)");
  EXPECT_EQ(ErrorOf("[[nodes]]\nhost = \"a\"\nport = 1\n"),
            "c.toml:1:1: nodes[0].id is missing (every [[nodes]] entry needs id, host and port)");
}

TEST(ConfigErrorTest, DuplicateNodeIds) {
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 0\nhost = \"a\"\nport = 1\n"
                    "[[nodes]]\nid = 1\nhost = \"a\"\nport = 2\n"
                    "[[nodes]]\nid = 0\nhost = \"a\"\nport = 3\n"),
            "c.toml:10:6: nodes[2].id 0 is already the id of nodes[0]");
}

TEST(ConfigErrorTest, PartitionPortsMustNotOverlapOrOverflow) {
  Result<ClusterConfig> r = ParseClusterConfig(
      "[[nodes]]\nid = 0\nhost = \"h\"\nport = 7000\n"
      "[[nodes]]\nid = 1\nhost = \"h\"\nport = 7001\n",
      "c.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nodes[1] ports 7001..7002 overlap nodes[0] ports 7000..7001"),
            std::string_view::npos)
      << r.status().ToString();
  r = ParseClusterConfig("[[nodes]]\nid = 0\nhost = \"h\"\nport = 65535\n", "c.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceed 65535"), std::string_view::npos);
  // Different hosts may use the same ports.
  EXPECT_TRUE(ParseClusterConfig("[[nodes]]\nid = 0\nhost = \"a\"\nport = 7000\n"
                                 "[[nodes]]\nid = 1\nhost = \"b\"\nport = 7000\n",
                                 "c.toml")
                  .ok());
}

TEST(ConfigErrorTest, DuplicateAddresses) {
  EXPECT_EQ(ErrorOf("[[nodes]]\nid = 0\nhost = \"a\"\nport = 1\n"
                    "[[nodes]]\nid = 1\nhost = \"a\"\nport = 1\n"),
            "c.toml:8:8: nodes[1] address a:1 is already the address of nodes[0]");
}

TEST(ConfigErrorTest, TomlSyntaxErrorsHaveLineAndColumn) {
  const std::string error = ErrorOf("[transport]\nspin_us = 5\nbackend = \n");
  EXPECT_TRUE(error.starts_with("c.toml:3:")) << error;
  EXPECT_NE(error.find("invalid TOML: "), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;

  const std::string twice = ErrorOf("[transport]\nspin_us = 5\nspin_us = 6\n");
  EXPECT_TRUE(twice.starts_with("c.toml:3:")) << twice;
}

// ---------------------------------------------------------------------------
// Files

TEST(ConfigFileTest, LoadsAFileOverTheDefault) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("rampart_config_test_" + std::to_string(getpid()) + ".toml");
  {
    std::ofstream out(path);
    out << "[transport]\nbackend = \"tcp\"\nring_bytes = \"64KiB\"\n";
  }
  Result<ClusterConfig> config = LoadClusterConfig(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->origin, path.string());
  EXPECT_EQ(config->transport.backend, "tcp");
  EXPECT_EQ(config->transport.ring_bytes, 64 * kKiB);
  EXPECT_EQ(config->nodes.size(), 4u);
}

TEST(ConfigFileTest, ErrorsNameTheFile) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("rampart_config_bad_" + std::to_string(getpid()) + ".toml");
  {
    std::ofstream out(path);
    out << "\n[transport]\nbackend = \"rdma\"\n";
  }
  Result<ClusterConfig> config = LoadClusterConfig(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            path.string() + ":3:11: transport.backend must be \"ucx\" or \"tcp\", got \"rdma\"");
}

TEST(ConfigFileTest, MissingFile) {
  Result<ClusterConfig> config = LoadClusterConfig("/nonexistent/rampart.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kIoError);
  EXPECT_EQ(config.status().message(),
            "/nonexistent/rampart.toml: cannot read: No such file or directory");
}

// ---------------------------------------------------------------------------
// Formatting and docs

TEST(ConfigFormatTest, RoundTrips) {
  ClusterConfig config = *LoadClusterConfig("");
  EXPECT_EQ(ParseOk(FormatClusterConfig(config)), config);

  config.name = "x-1";
  config.transport.backend = "tcp";
  config.transport.max_message_size = 1'000'000;
  config.transport.ring_bytes = 4 * kKiB;
  config.transport.registration_cache_bytes = 12345;
  config.transport.ucx.net_devices = "mlx5_0:1";
  config.transport.ucx.tls = "with \"quotes\" and \\ and \t";
  config.kv.partitions_per_node = 1;  // node 9's port 65535 leaves room for one
  config.kv.arena_bytes = 3 * kGiB;
  config.kv.grace_ms = 0;
  config.kv.max_key_bytes = 100;
  config.kv.max_value_bytes = 0;
  config.nodes = {{5, "host-a", 1}, {9, "host-b", 65535}};
  config.proxy.enabled = false;
  config.proxy.aggregate = false;
  config.proxy.host = "0.0.0.0";
  config.proxy.port = 1;  // host-a's port, but another host
  config.proxy.replicas = 2;
  config.proxy.isolation = "none";
  config.proxy.requirepass = "pa\"ss";
  config.proxy.max_bulk_bytes = 4 * kGiB;
  config.proxy.max_inline_bytes = 1000 * kKiB;
  const std::string text = FormatClusterConfig(config);
  EXPECT_NE(text.find("\n[proxy]\nenabled = false\n"), std::string::npos) << text;
  EXPECT_NE(text.find("aggregate = false\n"), std::string::npos) << text;
  EXPECT_NE(text.find("max_bulk_bytes = \"4GiB\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("max_message_size = \"1MB\""), std::string::npos) << text;
  EXPECT_NE(text.find("registration_cache_bytes = \"12345B\""), std::string::npos) << text;
  EXPECT_EQ(ParseOk(text), config) << text;
}

TEST(ConfigFormatTest, DescribesEverySetting) {
  const std::vector<SettingDoc> docs = DescribeClusterSettings();
  ASSERT_GE(docs.size(), 12u);
  for (const SettingDoc& d : docs) {
    EXPECT_FALSE(d.doc.empty()) << d.key;
    EXPECT_FALSE(d.type.empty()) << d.key;
    EXPECT_FALSE(d.default_value.empty()) << d.key;
  }
  EXPECT_EQ(docs[0].key, "cluster.name");
  EXPECT_EQ(docs[0].default_value, "\"local\"");
  auto ring = std::find_if(docs.begin(), docs.end(),
                           [](const SettingDoc& d) { return d.key == "transport.ring_bytes"; });
  ASSERT_NE(ring, docs.end());
  EXPECT_EQ(ring->type, "size, power of two, 4KiB..1GiB");
  EXPECT_EQ(ring->default_value, "\"1MiB\"");
  auto aggregate = std::find_if(docs.begin(), docs.end(),
                                [](const SettingDoc& d) { return d.key == "proxy.aggregate"; });
  ASSERT_NE(aggregate, docs.end());
  EXPECT_EQ(aggregate->type, "boolean");
  EXPECT_EQ(aggregate->default_value, "true");
  auto offset = std::find_if(docs.begin(), docs.end(),
                             [](const SettingDoc& d) { return d.key == "volumes[].node_offset"; });
  ASSERT_NE(offset, docs.end());
  EXPECT_EQ(offset->default_value, "\"0B\"");
  EXPECT_EQ(docs.back().key, "proxies[].port");
  EXPECT_EQ(docs.back().default_value, "required");
  auto nodes = std::find_if(docs.begin(), docs.end(),
                            [](const SettingDoc& d) { return d.key == "volumes[].nodes"; });
  ASSERT_NE(nodes, docs.end());
  EXPECT_EQ(nodes->type, "array of integers, 0..65535");
  EXPECT_EQ(nodes->default_value, "required");
}

TEST(ConfigDocsTest, ConfigurationMdHasTheCurrentSettingsTable) {
  std::ifstream in(SourceRoot() / "docs/configuration.md");
  ASSERT_TRUE(in) << "cannot open docs/configuration.md";
  std::stringstream file;
  file << in.rdbuf();
  const std::string text = file.str();
  for (const SettingDoc& d : DescribeClusterSettings()) {
    EXPECT_NE(text.find("`" + d.key + "`"), std::string::npos)
        << d.key << " is not documented in docs/configuration.md";
  }
  EXPECT_NE(text.find(ClusterSettingsMarkdown()), std::string::npos)
      << "docs/configuration.md is out of date: replace its settings table with the output of "
         "`rampart config docs`";
}

// transport.spin_us = "auto": spin only where the pollers of the busiest
// host leave a core free; a number is taken as it is.
TEST(ConfigTest, AutoSpin) {
  Result<ClusterConfig> config = ParseClusterConfig(
      "[transport]\nspin_us = \"auto\"\n[kv]\npartitions_per_node = 2\n[proxy]\nworkers = 2\n"
      "[[nodes]]\nid = 0\nhost = \"10.0.0.1\"\nport = 7000\n"
      "[[nodes]]\nid = 1\nhost = \"10.0.0.2\"\nport = 7000\n",
      "c.toml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  // Busiest host 127.0.0.1 (the proxy): 2 pollers; the nodes' hosts 2 each.
  EXPECT_EQ(EffectiveSpinMicros(*config, 2), 0u);
  EXPECT_EQ(EffectiveSpinMicros(*config, 3), kAutoSpinMicros);
  config->proxy.host = "10.0.0.1";  // now 4 pollers there
  EXPECT_EQ(EffectiveSpinMicros(*config, 4), 0u);
  EXPECT_EQ(EffectiveSpinMicros(*config, 5), kAutoSpinMicros);
  config->proxy.workers = 0;  // one per core: never leaves a core free
  EXPECT_EQ(EffectiveSpinMicros(*config, 64), 0u);
  config->proxy.enabled = false;
  EXPECT_EQ(EffectiveSpinMicros(*config, 3), kAutoSpinMicros);
  config->transport.spin_us = 7;
  EXPECT_EQ(EffectiveSpinMicros(*config, 1), 7u);
  EXPECT_NE(FormatClusterConfig(*config).find("spin_us = 7\n"), std::string::npos);
  config->transport.spin_us = TransportConfig::kSpinAuto;
  EXPECT_NE(FormatClusterConfig(*config).find("spin_us = \"auto\"\n"), std::string::npos);
  EXPECT_GE(UsableCores(), 1u);
}

// A proxy's workers spin awaiting replies when they are fewer than the cores,
// whatever the other pollers of the host; otherwise as every loop does.
TEST(ConfigTest, AutoProxySpin) {
  Result<ClusterConfig> config = ParseClusterConfig(
      "[kv]\npartitions_per_node = 1\n[proxy]\nworkers = 1\n"
      "[[nodes]]\nid = 0\nhost = \"127.0.0.1\"\nport = 7000\n"
      "[[nodes]]\nid = 1\nhost = \"127.0.0.1\"\nport = 7001\n"
      "[[nodes]]\nid = 2\nhost = \"127.0.0.1\"\nport = 7002\n",
      "c.toml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  // 4 pollers on one host of 2 cores: the partition threads do not spin, the proxy's one worker does.
  EXPECT_EQ(EffectiveSpinMicros(*config, 2), 0u);
  EXPECT_EQ(EffectiveProxySpinMicros(*config, 2), kAutoSpinMicros);
  EXPECT_EQ(EffectiveProxySpinMicros(*config, 1), 0u);  // one worker on one core
  config->proxy.workers = 2;
  EXPECT_EQ(EffectiveProxySpinMicros(*config, 2), 0u);
  EXPECT_EQ(EffectiveProxySpinMicros(*config, 8), kAutoSpinMicros);
  config->proxy.workers = 0;  // a quarter of the cores on a loopback cluster
  EXPECT_EQ(EffectiveProxySpinMicros(*config, 8), kAutoSpinMicros);
  config->transport.spin_us = 0;
  EXPECT_EQ(EffectiveProxySpinMicros(*config, 8), 0u);
  config->transport.spin_us = 9;
  EXPECT_EQ(EffectiveProxySpinMicros(*config, 1), 9u);
}


}  // namespace
}  // namespace rampart
