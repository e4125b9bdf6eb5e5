// [[volumes]]: parsing, the checks against [[storage_nodes]], formatting.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/config_test_util.h"

namespace rampart {
namespace {

using config_test::ErrorOf;
using config_test::ParseOk;

// Four 64 MiB RAM storage nodes with ids 0..3, then `volumes` (TOML text).
std::string WithStorageNodes(std::string_view volumes) {
  std::string text;
  for (int id = 0; id < 4; ++id) {
    text += "[[storage_nodes]]\nid = " + std::to_string(id) +
            "\nhost = \"127.0.0.1\"\nport = " + std::to_string(7100 + id) +
            "\npath = \"ram\"\nsize = \"64MiB\"\n";
  }
  return text + std::string(volumes);
}

TEST(ConfigVolumeTest, VolumesParse) {
  const ClusterConfig config = ParseOk(WithStorageNodes(
      "[[volumes]]\nname = \"data\"\nsize = \"40MiB\"\nnodes = [3, 1, 2, 0]\n"
      "[[volumes]]\nname = \"log.1\"\nsize = 100000\ncell_bytes = \"4KiB\"\nnodes = [0, 1, 2]\n"
      "node_offset = \"48MiB\"\n"));
  ASSERT_EQ(config.volumes.size(), 2u);
  const VolumeConfig* data = config.FindVolume("data");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->size, 40 * kMiB);
  EXPECT_EQ(data->cell_bytes, 16 * kKiB);  // the default
  EXPECT_EQ(data->nodes, (std::vector<uint32_t>{3, 1, 2, 0}));
  EXPECT_EQ(data->node_offset, 0u);
  EXPECT_EQ(data->data_cells(), 3u);
  // 40 MiB in stripes of 3 x 16 KiB: 853.33 -> 854 stripes.
  EXPECT_EQ(data->stripes(), 854u);
  EXPECT_EQ(data->area_bytes(), kVolumeMetadataBytes + 854 * 16 * kKiB);
  const VolumeConfig* log = config.FindVolume("log.1");
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->node_offset, 48 * kMiB);
  EXPECT_EQ(log->stripes(), 13u);  // 100000 / 8192 = 12.2
  EXPECT_EQ(config.FindVolume("nope"), nullptr);
  EXPECT_TRUE(ParseOk("").volumes.empty()) << "the default has no volumes";
}

TEST(ConfigVolumeTest, AreasMayShareNodesWhenTheyDoNotOverlap) {
  // "a" is one stripe of 2 x 16 KiB: it uses [0, 1MiB + 16KiB) of nodes 0..2;
  // "b" starts right after it.
  EXPECT_EQ(ErrorOf(WithStorageNodes(
                "[[volumes]]\nname = \"a\"\nsize = \"32KiB\"\nnodes = [0, 1, 2]\n"
                "[[volumes]]\nname = \"b\"\nsize = \"32KiB\"\nnodes = [1, 2, 3]\n"
                "node_offset = \"1040KiB\"\n")),
            "OK");
  // The same offsets on nodes they do not share.
  EXPECT_EQ(ErrorOf(WithStorageNodes(
                "[[storage_nodes]]\nid = 8\nhost = \"h\"\nport = 1\npath = \"ram\"\nsize = \"8MiB\"\n"
                "[[storage_nodes]]\nid = 9\nhost = \"h\"\nport = 2\npath = \"ram\"\nsize = \"8MiB\"\n"
                "[[volumes]]\nname = \"a\"\nsize = \"32KiB\"\nnodes = [0, 1, 2]\n"
                "[[volumes]]\nname = \"b\"\nsize = \"32KiB\"\nnodes = [3, 8, 9]\n")),
            "OK");
}

TEST(ConfigVolumeErrorTest, UnknownNode) {
  EXPECT_EQ(ErrorOf(WithStorageNodes("[[volumes]]\nname = \"v\"\nsize = \"1MiB\"\nnodes = [0, 1, 7]\n")),
            "c.toml: volumes[0] (\"v\").nodes[2] is 7, which is not the id of any "
            "[[storage_nodes]] entry");
}

TEST(ConfigVolumeErrorTest, DuplicateNode) {
  EXPECT_EQ(ErrorOf(WithStorageNodes("[[volumes]]\nname = \"v\"\nsize = \"1MiB\"\nnodes = [0, 1, 0]\n")),
            "c.toml: volumes[0] (\"v\").nodes lists storage node 0 twice (volumes[0] (\"v\").nodes[0] "
            "and [2])");
}

TEST(ConfigVolumeErrorTest, FewerThanThreeNodes) {
  EXPECT_EQ(ErrorOf(WithStorageNodes("[[volumes]]\nname = \"v\"\nsize = \"1MiB\"\nnodes = [0, 1]\n")),
            "c.toml: volumes[0] (\"v\").nodes lists 2 storage nodes; a volume needs at least 3 "
            "(k >= 2 data cells and one parity cell per stripe)");
  EXPECT_EQ(ErrorOf(WithStorageNodes("[[volumes]]\nname = \"v\"\nsize = \"1MiB\"\nnodes = []\n")),
            "c.toml: volumes[0] (\"v\").nodes lists 0 storage nodes; a volume needs at least 3 "
            "(k >= 2 data cells and one parity cell per stripe)");
}

TEST(ConfigVolumeErrorTest, AreaMustFitEveryNode) {
  // 3 data cells: 63 MiB of data is 1344 stripes of 16 KiB = 21 MiB per node,
  // plus 1 MiB of metadata from node_offset 42 MiB: 64 MiB, just fits.
  EXPECT_EQ(ErrorOf(WithStorageNodes("[[volumes]]\nname = \"v\"\nsize = \"63MiB\"\n"
                                     "nodes = [0, 1, 2, 3]\nnode_offset = \"42MiB\"\n")),
            "OK");
  EXPECT_EQ(ErrorOf(WithStorageNodes("[[volumes]]\nname = \"v\"\nsize = \"63MiB\"\n"
                                     "nodes = [0, 1, 2, 3]\nnode_offset = \"43MiB\"\n")),
            "c.toml: volumes[0] (\"v\") needs bytes [45088768, 68157440) of each of its nodes "
            "(node_offset, then 1MiB of metadata and 1344 stripes of 16KiB) but storage node 0 "
            "has only 64MiB");
  // The metadata area counts: 3 x 64 MiB of data alone would fit.
  EXPECT_NE(ErrorOf(WithStorageNodes("[[volumes]]\nname = \"v\"\nsize = \"192MiB\"\n"
                                     "nodes = [0, 1, 2, 3]\n"))
                .find("but storage node 0 has only 64MiB"),
            std::string::npos);
}

TEST(ConfigVolumeErrorTest, AreasMustNotOverlap) {
  EXPECT_EQ(ErrorOf(WithStorageNodes(
                "[[volumes]]\nname = \"a\"\nsize = \"32KiB\"\nnodes = [0, 1, 2]\n"
                "[[volumes]]\nname = \"b\"\nsize = \"32KiB\"\nnodes = [3, 2, 1]\n"
                "node_offset = \"1024KiB\"\n")),
            "c.toml: volumes[1] (\"b\") bytes [1048576, 2113536) overlap volumes[0] (\"a\") bytes "
            "[0, 1064960) on storage node 2 (give one of them another node_offset)");
}

TEST(ConfigVolumeErrorTest, Alignment) {
  EXPECT_EQ(ErrorOf(WithStorageNodes("[[volumes]]\nname = \"v\"\nsize = \"1MiB\"\nnodes = [0, 1, 2]\n"
                                     "node_offset = \"8KiB\"\n")),
            "c.toml: volumes[0] (\"v\").node_offset 8KiB is not a multiple of cell_bytes 16KiB");
  EXPECT_EQ(ErrorOf(WithStorageNodes("[storage]\nblock_bytes = \"64KiB\"\n[[volumes]]\nname = \"v\"\n"
                                     "size = \"1MiB\"\nnodes = [0, 1, 2]\n")),
            "c.toml: volumes[0] (\"v\").cell_bytes 16KiB is smaller than storage.block_bytes 64KiB "
            "(a cell must be whole blocks)");
}

TEST(ConfigVolumeErrorTest, Settings) {
  const std::string nodes = WithStorageNodes("");
  const std::string head = nodes + "[[volumes]]\n";  // volumes[0] starts on line 25
  EXPECT_EQ(ErrorOf(head + "name = \"v\"\nsize = \"1MiB\"\nnodes = [0, 1, 2]\ncell_bytes = \"24KiB\"\n"),
            "c.toml:29:14: volumes[0].cell_bytes must be a power of two, got 24KiB (24576 bytes; "
            "nearest: 16KiB or 32KiB)");
  EXPECT_EQ(ErrorOf(head + "name = \"v\"\nsize = \"1MiB\"\nnodes = [0, 1, 2]\ncell_bytes = \"2MiB\"\n"),
            "c.toml:29:14: volumes[0].cell_bytes must be between 4KiB and 1MiB, got 2MiB");
  EXPECT_EQ(ErrorOf(head + "name = \"v\"\nsize = 0\nnodes = [0, 1, 2]\n"),
            "c.toml:27:8: volumes[0].size must be between 1B and 1024TiB, got 0B");
  EXPECT_EQ(ErrorOf(head + "name = \"v v\"\nsize = 1\nnodes = [0, 1, 2]\n"),
            "c.toml:26:8: volumes[0].name may contain only letters, digits, '.', '_' and '-', got "
            "\"v v\"");
  EXPECT_EQ(ErrorOf(head + "name = \"v\"\nsize = 1\nnodes = [0, \"1\", 2]\n"),
            "c.toml:28:13: volumes[0].nodes[1] must be an integer, got string \"1\"");
  EXPECT_EQ(ErrorOf(head + "name = \"v\"\nsize = 1\nnodes = [0, 1, 70000]\n"),
            "c.toml:28:16: volumes[0].nodes[2] must be between 0 and 65535, got 70000");
  EXPECT_EQ(ErrorOf(head + "name = \"v\"\nsize = 1\nnodes = 3\n"),
            "c.toml:28:9: volumes[0].nodes must be an array of integers, got integer 3");
  EXPECT_EQ(ErrorOf(head + "name = \"v\"\nsize = 1\n"),
            "c.toml:25:1: volumes[0].nodes is missing (every [[volumes]] entry needs name, size "
            "and nodes)");
  EXPECT_EQ(ErrorOf(head + "name = \"v\"\nsize = 1\nnodes = [0, 1, 2]\nnode = 1\n"),
            "c.toml:29:1: unknown key volumes[0].node (did you mean volumes[0].nodes?)");
}

TEST(ConfigVolumeErrorTest, DuplicateNames) {
  EXPECT_EQ(ErrorOf(WithStorageNodes(
                "[[volumes]]\nname = \"a\"\nsize = 1\nnodes = [0, 1, 2]\n"
                "[[volumes]]\nname = \"a\"\nsize = 1\nnodes = [0, 1, 2]\nnode_offset = \"8MiB\"\n")),
            "c.toml:30:8: volumes[1].name \"a\" is already the name of volumes[0]");
}


TEST(ConfigFormatTest, RoundTripsStorageNodesAndVolumes) {
  ClusterConfig config = *LoadClusterConfig("");
  for (uint32_t id = 0; id < 3; ++id) {
    config.storage_nodes.push_back({id, "127.0.0.1", static_cast<uint16_t>(7100 + id), "ram", kGiB});
  }
  config.volumes.push_back({"a", 5 * kMiB, 16 * kKiB, {2, 0, 1}, 0});
  config.volumes.push_back({"b", 1000, kMiB, {0, 1, 2}, 512 * kMiB});
  const std::string text = FormatClusterConfig(config);
  EXPECT_NE(text.find("\n[[volumes]]\nname = \"a\"\nsize = \"5MiB\"\ncell_bytes = \"16KiB\"\n"
                      "nodes = [2, 0, 1]\nnode_offset = \"0B\"\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(ParseOk(text), config) << text;
}

}  // namespace
}  // namespace rampart
