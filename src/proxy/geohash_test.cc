// The GEO geometry against what redis-server 7.0.15 answered for the same
// positions (scores, GEOHASH, GEOPOS, GEODIST, captured with redis-cli), and
// the search's promise: every member inside the shape lies in one of the
// score ranges it scans. tests/test_proxy_geo.py compares the commands with
// a running redis-server.
#include "proxy/geohash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace rampart::proxy::geo {
namespace {

constexpr LonLat kPalermo{13.361389, 38.115556};
constexpr LonLat kCatania{15.087269, 37.502669};

TEST(Geohash, ScoresAreRedisScores) {
  EXPECT_EQ(ScoreOf(kPalermo), 3479099956230698ULL);
  EXPECT_EQ(ScoreOf(kCatania), 3479447370796909ULL);
  EXPECT_EQ(ScoreOf({0, 0}), 3377699720527872ULL);
  EXPECT_EQ(ScoreOf({kLonMin, kLatMin}), 0ULL);
  // At the maxima the offsets reach 1.0 and carry into bits 52 and 53, as in Redis.
  EXPECT_EQ(ScoreOf({kLonMax, kLatMax}), 13510798882111488ULL);
}

TEST(Geohash, ValidRange) {
  EXPECT_TRUE(Valid({180, 85.05112878}));
  EXPECT_TRUE(Valid({-180, -85.05112878}));
  EXPECT_FALSE(Valid({180.000001, 0}));
  EXPECT_FALSE(Valid({0, 85.0511288}));
  EXPECT_FALSE(Valid({0, -90}));
}

TEST(Geohash, PositionsAreCellCentres) {
  const LonLat p = PositionOf(3479099956230698.0);
  EXPECT_EQ(p.lon, 13.36138933897018433);
  EXPECT_EQ(p.lat, 38.11555639549629859);
  const LonLat corner = PositionOf(13510798882111488.0);  // clamped into the range
  EXPECT_EQ(corner.lon, 180);
  EXPECT_EQ(corner.lat, 85.0511287799999991);
  const LonLat sw = PositionOf(0);
  EXPECT_EQ(sw.lon, -179.99999731779098511);
  EXPECT_EQ(sw.lat, -85.05112751263942528);
}

TEST(Geohash, StandardGeohashes) {
  EXPECT_EQ(StandardGeohash(3479099956230698.0), "sqc8b49rny0");
  EXPECT_EQ(StandardGeohash(3479447370796909.0), "sqdtr74hyu0");
  EXPECT_EQ(StandardGeohash(3377699720527872.0), "s0000000000");
  EXPECT_EQ(StandardGeohash(13510798882111488.0), "bp05b5048p0");
  EXPECT_EQ(StandardGeohash(0), "00bh0hbj200");
}

std::string Fixed4(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", d);
  return buf;
}

TEST(Geohash, DistancesAreRedisDistances) {
  const LonLat palermo = PositionOf(3479099956230698.0), catania = PositionOf(3479447370796909.0);
  EXPECT_EQ(Fixed4(Distance(palermo, catania)), "166274.1516");
  EXPECT_EQ(Fixed4(Distance(palermo, catania) / 1000), "166.2742");
  EXPECT_EQ(Fixed4(Distance({15, 37}, catania) / 1000), "56.4413");
  EXPECT_EQ(Fixed4(Distance({15, 37}, palermo) / 1000), "190.4424");
  EXPECT_EQ(Distance(palermo, palermo), 0);
}

TEST(Geohash, ShapesContainWhatTheyShould) {
  const LonLat catania = PositionOf(3479447370796909.0);
  Shape circle{.center = {15, 37}, .radius = 100, .to_meters = 1000};
  EXPECT_EQ(Fixed4(DistanceIfWithin(circle, catania) / 1000), "56.4413");
  circle.radius = 56;
  EXPECT_LT(DistanceIfWithin(circle, catania), 0);
  // Catania is about 7.7 km east and 55.9 km north of (15, 37).
  Shape box{.center = {15, 37}, .box = true, .width = 20, .height = 120, .to_meters = 1000};
  EXPECT_GE(DistanceIfWithin(box, catania), 0);
  box.height = 100;
  EXPECT_LT(DistanceIfWithin(box, catania), 0);
  box.height = 120;
  box.width = 15.3;  // 7.70 km east: half of 15.3 km is not enough
  EXPECT_LT(DistanceIfWithin(box, catania), 0);
  box.width = 15.5;
  EXPECT_EQ(Fixed4(DistanceIfWithin(box, catania) / 1000), "56.4413");
}

bool Covered(const std::vector<ScoreRange>& ranges, uint64_t score) {
  for (const ScoreRange& r : ranges) {
    if (score >= r.min && score < r.max) return true;
  }
  return false;
}

// Random centres, radii from a meter to 2,000 km, boxes of any aspect, and
// points around them: a point inside the shape is always in a scanned range
// — for shapes that stay clear of the poles and the antimeridian (there
// Redis's cells do not cover everything either: a search that reaches past
// latitude 85 or across longitude 180 misses what lies beyond).
TEST(Geohash, SearchRangesCoverTheShape) {
  std::mt19937_64 rng(20261128);
  std::uniform_real_distribution<double> lon(-170, 170), lat(-70, 70), unit(0, 1);
  int inside = 0;
  for (int round = 0; round < 4000; ++round) {
    Shape s;
    s.center = {lon(rng), lat(rng)};
    s.box = round % 2 == 1;
    const double size_m = std::pow(10, unit(rng) * 6.3);  // 1 m .. 2,000 km
    s.radius = size_m;
    s.width = size_m * (0.2 + 2 * unit(rng));
    s.height = size_m * (0.2 + 2 * unit(rng));
    const double reach = 2.5 * std::max({s.radius, s.width, s.height}) / 111195.0;  // degrees, generously
    if (std::fabs(s.center.lat) + reach > 80 ||
        std::fabs(s.center.lon) + reach / std::cos((std::fabs(s.center.lat) + reach) * M_PI / 180) > 179) {
      continue;
    }
    const std::vector<ScoreRange> ranges = SearchRanges(s);
    ASSERT_FALSE(ranges.empty());
    ASSERT_LE(ranges.size(), 9u);
    const double lon_m = 111195.0 * std::cos(s.center.lat * M_PI / 180);  // meters a degree east
    for (int n = 0; n < 50; ++n) {
      // Half anywhere within about twice the size, half near the shape's
      // edge (a circle's rim, a box's corners), where cells run out first.
      double east_m, north_m;
      if (n % 2 == 0) {
        east_m = (unit(rng) * 2 - 1) * 2 * size_m;
        north_m = (unit(rng) * 2 - 1) * 2 * size_m;
      } else if (!s.box) {
        const double bearing = unit(rng) * 2 * M_PI, d = s.radius * (0.97 + 0.03 * unit(rng));
        east_m = d * std::sin(bearing);
        north_m = d * std::cos(bearing);
      } else {
        east_m = (unit(rng) < 0.5 ? -1 : 1) * s.width / 2 * (0.97 + 0.03 * unit(rng));
        north_m = (unit(rng) < 0.5 ? -1 : 1) * s.height / 2 * (0.97 + 0.03 * unit(rng));
      }
      const LonLat p{std::clamp(s.center.lon + east_m / lon_m, -180.0, 180.0),
                     std::clamp(s.center.lat + north_m / 111195.0, kLatMin, kLatMax)};
      const uint64_t score = ScoreOf(p);
      if (DistanceIfWithin(s, PositionOf(static_cast<double>(score))) < 0) continue;
      ++inside;
      ASSERT_TRUE(Covered(ranges, score)) << "round " << round << " centre " << s.center.lon << "," << s.center.lat
                                          << " size " << size_m << " point " << p.lon << "," << p.lat;
    }
  }
  EXPECT_GT(inside, 5000);  // the check ran on many points
}

}  // namespace
}  // namespace rampart::proxy::geo
