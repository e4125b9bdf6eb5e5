#include "storage/volume_layout.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

namespace rampart::storage {
namespace {

constexpr uint64_t kCell = 4 * kKiB;

VolumeConfig Volume(uint32_t nodes, uint64_t size, uint64_t cell = kCell, uint64_t offset = 0) {
  VolumeConfig v;
  v.name = "v";
  v.size = size;
  v.cell_bytes = cell;
  v.node_offset = offset;
  for (uint32_t i = 0; i < nodes; ++i) v.nodes.push_back(100 + i);
  return v;
}

VolumeLayout Layout(const VolumeConfig& v) {
  Result<VolumeLayout> layout = VolumeLayout::Create(v);
  EXPECT_TRUE(layout.ok()) << layout.status().ToString();
  return std::move(layout).value();
}

std::vector<Piece> MapOk(const VolumeLayout& layout, uint64_t offset, uint64_t length) {
  Result<std::vector<Piece>> pieces = layout.Map(offset, length);
  EXPECT_TRUE(pieces.ok()) << pieces.status().ToString();
  return pieces.ok() ? *pieces : std::vector<Piece>{};
}

TEST(VolumeLayoutTest, CreateChecksTheConfig) {
  EXPECT_TRUE(VolumeLayout::Create(Volume(3, 1)).ok());
  EXPECT_EQ(VolumeLayout::Create(Volume(2, kMiB)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(VolumeLayout::Create(Volume(3, 0)).ok());
  EXPECT_FALSE(VolumeLayout::Create(Volume(3, kMiB, 3 * kKiB)).ok());
  EXPECT_FALSE(VolumeLayout::Create(Volume(3, kMiB, 2 * kKiB)).ok());
  EXPECT_FALSE(VolumeLayout::Create(Volume(3, kMiB, 2 * kMiB)).ok());
  EXPECT_FALSE(VolumeLayout::Create(Volume(3, kMiB, 16 * kKiB, 8 * kKiB)).ok());
  EXPECT_TRUE(VolumeLayout::Create(Volume(3, kMiB, 16 * kKiB, 32 * kKiB)).ok());
}

TEST(VolumeLayoutTest, Geometry) {
  // 4 nodes, k = 3, 16 KiB cells: 1 MiB + 1 byte is 21.33 -> 22 stripes.
  const VolumeLayout l = Layout(Volume(4, kMiB + 1, 16 * kKiB, 64 * kMiB));
  EXPECT_EQ(l.size(), kMiB + 1);
  EXPECT_EQ(l.data_cells(), 3u);
  EXPECT_EQ(l.node_count(), 4u);
  EXPECT_EQ(l.stripe_data_bytes(), 48 * kKiB);
  EXPECT_EQ(l.stripes(), 22u);
  EXPECT_EQ(l.node_id(0), 100u);
  EXPECT_EQ(l.node_id(3), 103u);
  EXPECT_EQ(l.area_offset(), 64 * kMiB);
  EXPECT_EQ(l.metadata_offset(), 64 * kMiB);
  EXPECT_EQ(l.metadata_bytes(), kMiB);
  EXPECT_EQ(l.data_offset(), 65 * kMiB);
  EXPECT_EQ(l.area_bytes(), kMiB + 22 * 16 * kKiB);
  EXPECT_EQ(l.area_bytes(), Volume(4, kMiB + 1, 16 * kKiB, 64 * kMiB).area_bytes());
  EXPECT_EQ(l.StripeOffset(0), 65 * kMiB);
  EXPECT_EQ(l.StripeOffset(21), 65 * kMiB + 21 * 16 * kKiB);
}

// md's left-symmetric RAID-5 over 4 disks (P = parity, Dn = data cell n):
//   stripe 0:  D0 D1 D2 P
//   stripe 1:  D1 D2 P  D0
//   stripe 2:  D2 P  D0 D1
//   stripe 3:  P  D0 D1 D2
TEST(VolumeLayoutTest, ParityRotatesLeftSymmetric) {
  const VolumeLayout l = Layout(Volume(4, 8 * 3 * kCell));
  const char* expected[] = {"012P", "12P0", "2P01", "P012", "012P", "12P0", "2P01", "P012"};
  for (uint64_t s = 0; s < 8; ++s) {
    std::string row;
    for (uint32_t n = 0; n < 4; ++n) {
      const std::optional<uint32_t> cell = l.DataCellOnNode(s, n);
      row += cell ? static_cast<char>('0' + *cell) : 'P';
      if (cell) {
        EXPECT_EQ(l.DataCell(s, *cell), (CellLocation{n, l.StripeOffset(s)}));
      }
    }
    EXPECT_EQ(row, expected[s]) << "stripe " << s;
    EXPECT_EQ(l.Parity(s), (CellLocation{l.ParityNode(s), l.StripeOffset(s)}));
  }
}

// For 3..7 nodes: over whole rounds of k + 1 stripes every node holds the
// parity equally often; every cell of every stripe, parity included, has its
// own (node, offset); each node holds exactly one cell per stripe.
TEST(VolumeLayoutTest, CellsNeverCollideAndParityIsEven) {
  for (uint32_t nodes = 3; nodes <= 7; ++nodes) {
    const uint32_t k = nodes - 1;
    const uint64_t stripes = 5 * nodes;
    const VolumeLayout l = Layout(Volume(nodes, stripes * k * kCell, kCell, 2 * kMiB));
    ASSERT_EQ(l.stripes(), stripes);
    std::set<std::pair<uint32_t, uint64_t>> used;
    std::map<uint32_t, int> parity_count;
    for (uint64_t s = 0; s < stripes; ++s) {
      std::set<uint32_t> nodes_of_stripe;
      for (uint32_t c = 0; c < k; ++c) {
        const CellLocation at = l.DataCell(s, c);
        EXPECT_TRUE(used.insert({at.node_index, at.node_offset}).second);
        nodes_of_stripe.insert(at.node_index);
      }
      const CellLocation p = l.Parity(s);
      EXPECT_TRUE(used.insert({p.node_index, p.node_offset}).second);
      nodes_of_stripe.insert(p.node_index);
      EXPECT_EQ(nodes_of_stripe.size(), nodes) << "stripe " << s << " skips a node";
      ++parity_count[p.node_index];
    }
    ASSERT_EQ(parity_count.size(), nodes);
    for (const auto& [node, count] : parity_count) EXPECT_EQ(count, 5) << "node " << node;
  }
}

// Every byte of small volumes (including ones whose last stripe is partial)
// maps to exactly one (node, offset), inside the node's data area, never on
// its stripe's parity; one-byte Maps agree with the whole-volume Map.
TEST(VolumeLayoutTest, EveryByteMapsToExactlyOnePlace) {
  for (uint32_t nodes = 3; nodes <= 6; ++nodes) {
    for (uint64_t size : {uint64_t{1}, kCell - 1, kCell + 7, 3 * nodes * kCell + 5}) {
      const VolumeLayout l = Layout(Volume(nodes, size, kCell, kMiB));
      const std::vector<Piece> all = MapOk(l, 0, size);
      // node index -> one flag per byte of its data area
      std::vector<std::vector<bool>> taken(nodes, std::vector<bool>(l.stripes() * kCell));
      uint64_t v = 0;
      for (const Piece& p : all) {
        ASSERT_EQ(p.buffer_offset, v);
        ASSERT_GE(p.node_offset, l.data_offset());
        EXPECT_NE(p.node_index, l.ParityNode(p.stripe));
        for (uint32_t i = 0; i < p.length; ++i, ++v) {
          const uint64_t at = p.node_offset - l.data_offset() + i;
          ASSERT_LT(at, l.stripes() * kCell);
          ASSERT_FALSE(taken[p.node_index][at]) << "byte " << v << " collides";
          taken[p.node_index][at] = true;
          if (v % 997 == 0) {
            const std::vector<Piece> one = MapOk(l, v, 1);
            ASSERT_EQ(one.size(), 1u);
            EXPECT_EQ(one[0].node_index, p.node_index);
            EXPECT_EQ(one[0].node_offset, p.node_offset + i);
            EXPECT_EQ(one[0].buffer_offset, 0u);
          }
        }
      }
      EXPECT_EQ(v, size);
    }
  }
}

TEST(VolumeLayoutTest, RangesCrossCellsAndStripes) {
  // 3 nodes, k = 2, 4 KiB cells: a stripe holds 8 KiB of data.
  const VolumeLayout l = Layout(Volume(3, 10 * 8 * kKiB));
  const uint64_t d = l.data_offset();
  // Inside one cell.
  EXPECT_EQ(MapOk(l, 100, 200), (std::vector<Piece>{{0, 0, 0, d + 100, 200, 0}}));
  // Across the two cells of stripe 0 (parity on node 2, data on 0 and 1).
  EXPECT_EQ(MapOk(l, 4000, 200), (std::vector<Piece>{{0, 0, 0, d + 4000, 96, 0},
                                                     {0, 1, 1, d + 0, 104, 96}}));
  // From stripe 0's last cell over stripe 1 (parity on node 1, data on 2, 0)
  // into stripe 2 (parity on node 0, data on 1, 2).
  EXPECT_EQ(MapOk(l, 8 * kKiB - 10, 8 * kKiB + 20),
            (std::vector<Piece>{{0, 1, 1, d + kCell - 10, 10, 0},
                                {1, 0, 2, d + kCell, 4096, 10},
                                {1, 1, 0, d + kCell, 4096, 4106},
                                {2, 0, 1, d + 2 * kCell, 10, 8202}}));
  // Whole cells.
  EXPECT_EQ(MapOk(l, 3 * kCell, 2 * kCell),
            (std::vector<Piece>{{1, 1, 0, d + kCell, 4096, 0}, {2, 0, 1, d + 2 * kCell, 4096, 4096}}));
}

TEST(VolumeLayoutTest, RangesOutsideTheVolumeAreRefused) {
  const VolumeLayout l = Layout(Volume(3, 1000));
  EXPECT_TRUE(MapOk(l, 0, 0).empty());
  EXPECT_TRUE(MapOk(l, 1000, 0).empty());
  EXPECT_EQ(MapOk(l, 999, 1).size(), 1u);
  EXPECT_EQ(l.Map(999, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Map(1001, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Map(1, UINT64_MAX).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Map(UINT64_MAX, 2).status().message(),
            "2 bytes at volume offset 18446744073709551615 are not inside the volume's 1000 bytes");
}

}  // namespace
}  // namespace rampart::storage
