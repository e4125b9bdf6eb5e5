// The hot-node rule of volume_steering.h, on made-up loads.
#include "storage/volume_steering.h"

#include <gtest/gtest.h>

#include <vector>

namespace rampart::storage {
namespace {

std::vector<NodeLoad> Latencies(std::vector<double> us) {
  std::vector<NodeLoad> loads;
  for (double l : us) loads.push_back(NodeLoad{true, 0, l});
  return loads;
}

TEST(SteeringMedian, OddEvenAndEmpty) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
}

TEST(HotNodeTracker, ANodeWellAboveTheOthersIsHotAndCoolsWithHysteresis) {
  HotNodeTracker t;  // hot > 2x median + 200 us, cool <= 1.5x median + 200 us
  t.Update(Latencies({1000, 1000, 1000, 1000}));
  EXPECT_FALSE(t.hot());
  t.Update(Latencies({1000, 2100, 1000, 1000}));  // 2100 < 2200: not yet
  EXPECT_FALSE(t.hot());
  t.Update(Latencies({1000, 2300, 1000, 1000}));
  EXPECT_EQ(t.hot(), 1u);
  t.Update(Latencies({1000, 1800, 1000, 1000}));  // below 2x, above 1.5x + 200: stays
  EXPECT_EQ(t.hot(), 1u);
  t.Update(Latencies({1000, 1650, 1000, 1000}));  // <= 1700: cools
  EXPECT_FALSE(t.hot());
  t.Update(Latencies({1000, 1800, 1000, 1000}));  // and does not come back below 2x
  EXPECT_FALSE(t.hot());
}

TEST(HotNodeTracker, TheMinimumKeepsFastNodesFromFlapping) {
  HotNodeTracker t;
  t.Update(Latencies({20, 150, 20}));  // 7x, but only 130 us more
  EXPECT_FALSE(t.hot());
}

TEST(HotNodeTracker, OutstandingIoAloneMakesANodeHot) {
  HotNodeTracker t;  // hot > 2x median + 8
  std::vector<NodeLoad> loads = {{true, 4, 0}, {true, 4, 0}, {true, 17, 0}};
  t.Update(loads);
  EXPECT_EQ(t.hot(), 2u);
  loads[2].outstanding = 16;  // cool <= 1.5 * 4 + 8 = 14: stays
  t.Update(loads);
  EXPECT_EQ(t.hot(), 2u);
  loads[2].outstanding = 14;
  t.Update(loads);
  EXPECT_FALSE(t.hot());
}

TEST(HotNodeTracker, OnlyTheWorstNodeIsHot) {
  HotNodeTracker t;
  t.Update(Latencies({5000, 100, 100, 9000, 100}));
  EXPECT_EQ(t.hot(), 3u);
}

TEST(HotNodeTracker, NothingIsHotWithFewerThanThreeUsableNodesOrNoSamples) {
  HotNodeTracker t;
  std::vector<NodeLoad> loads = Latencies({100, 5000, 100});
  loads[0].usable = false;
  t.Update(loads);
  EXPECT_FALSE(t.hot());
  t.Update(Latencies({0, 5000, 0}));  // the others not read yet
  EXPECT_FALSE(t.hot());
  t.Update(Latencies({100, 5000, 100}));
  EXPECT_EQ(t.hot(), 1u);
  loads = Latencies({100, 5000, 100, 100});
  loads[1].usable = false;  // a hot node going down is no longer hot
  t.Update(loads);
  EXPECT_FALSE(t.hot());
}

TEST(HotNodeTracker, OneReadInProbeEveryGoesToTheHotNode) {
  HotNodeTracker t(SteeringRule{.probe_every = 4});
  EXPECT_FALSE(t.TakeSteer());  // nothing hot
  t.Update(Latencies({100, 5000, 100}));
  std::vector<bool> steered;
  for (int i = 0; i < 8; ++i) steered.push_back(t.TakeSteer());
  EXPECT_EQ(steered, (std::vector<bool>{true, true, true, false, true, true, true, false}));
  HotNodeTracker never(SteeringRule{.probe_every = 0});
  never.Update(Latencies({100, 5000, 100}));
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(never.TakeSteer());
}

}  // namespace
}  // namespace rampart::storage
