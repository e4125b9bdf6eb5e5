#include "proxy/geohash.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rampart::proxy::geo {
namespace {

constexpr int kMaxStep = 26;
// Half the Earth's circumference in Web Mercator meters: the widest range a
// one-bit cell covers.
constexpr double kMercatorMax = 20037726.37;
constexpr double kDegToRad = std::numbers::pi / 180.0;
constexpr char kBase32[] = "0123456789bcdefghjkmnpqrstuvwxyz";

struct Range {
  double min = 0;
  double max = 0;
};
constexpr Range kLonRange{kLonMin, kLonMax};
constexpr Range kLatRange{kLatMin, kLatMax};

// A geohash of `step` bits per coordinate: latitude on the even bits,
// longitude on the odd ones. step 0 with no bits: none (a neighbour left out).
struct Cell {
  uint64_t bits = 0;
  int step = 0;
  bool none() const { return bits == 0 && step == 0; }
};

struct Area {
  Range lon, lat;
};

double DegRad(double degrees) { return degrees * kDegToRad; }
double RadDeg(double radians) { return radians / kDegToRad; }

// The 32 bits of v on the even bits of the result.
uint64_t Spread(uint32_t v) {
  uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x << 2)) & 0x3333333333333333ULL;
  x = (x | (x << 1)) & 0x5555555555555555ULL;
  return x;
}

// The even bits of x, packed.
uint32_t Gather(uint64_t x) {
  x &= 0x5555555555555555ULL;
  x = (x | (x >> 1)) & 0x3333333333333333ULL;
  x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x >> 4)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x >> 16)) & 0x00000000FFFFFFFFULL;
  return static_cast<uint32_t>(x);
}

// The cell of `step` bits holding p, over the ranges given (Redis's
// geohashEncode: an offset of exactly 1.0 — a coordinate at the range's
// maximum — keeps its carry bit). Outside them: bits 0.
Cell Encode(Range lon_range, Range lat_range, LonLat p, int step) {
  if (p.lon < lon_range.min || p.lon > lon_range.max || p.lat < lat_range.min || p.lat > lat_range.max) {
    return Cell{0, step};
  }
  double lat_offset = (p.lat - lat_range.min) / (lat_range.max - lat_range.min);
  double lon_offset = (p.lon - lon_range.min) / (lon_range.max - lon_range.min);
  lat_offset *= static_cast<double>(1ULL << step);
  lon_offset *= static_cast<double>(1ULL << step);
  return Cell{Spread(static_cast<uint32_t>(lat_offset)) | (Spread(static_cast<uint32_t>(lon_offset)) << 1), step};
}

Area Decode(Cell cell) {
  const uint32_t lat_cells = Gather(cell.bits);
  const uint32_t lon_cells = Gather(cell.bits >> 1);
  // x / 2^step and x * 2^-step are the same double (a power of two), the
  // multiplication four times cheaper.
  const double per_cell = 1.0 / static_cast<double>(1ULL << cell.step);
  const double lat_scale = kLatRange.max - kLatRange.min;
  const double lon_scale = kLonRange.max - kLonRange.min;
  Area a;
  a.lat.min = kLatRange.min + (lat_cells * per_cell) * lat_scale;
  a.lat.max = kLatRange.min + ((lat_cells + 1u) * per_cell) * lat_scale;  // wraps as in Redis
  a.lon.min = kLonRange.min + (lon_cells * per_cell) * lon_scale;
  a.lon.max = kLonRange.min + ((lon_cells + 1u) * per_cell) * lon_scale;
  return a;
}

uint64_t Align52(Cell cell) { return cell.bits << (52 - cell.step * 2); }

// The cell `dx` cells east (1) or west (-1) and `dy` north or south of
// `cell`, wrapping around (Redis's geohash_move_x / _y).
Cell Moved(Cell cell, int dx, int dy) {
  const int shift = 64 - cell.step * 2;
  uint64_t lon = cell.bits & 0xAAAAAAAAAAAAAAAAULL;
  uint64_t lat = cell.bits & 0x5555555555555555ULL;
  if (dx != 0) {
    const uint64_t fill = 0x5555555555555555ULL >> shift;  // carries through the other coordinate's bits
    lon = dx > 0 ? lon + (fill + 1) : (lon | fill) - (fill + 1);
    lon &= 0xAAAAAAAAAAAAAAAAULL >> shift;
  }
  if (dy != 0) {
    const uint64_t fill = 0xAAAAAAAAAAAAAAAAULL >> shift;
    lat = dy > 0 ? lat + (fill + 1) : (lat | fill) - (fill + 1);
    lat &= 0x5555555555555555ULL >> shift;
  }
  return Cell{lon | lat, cell.step};
}

// The coarsest precision whose cells are still small enough for a search of
// `range_meters` around latitude `lat` (Redis's geohashEstimateStepsByRadius).
int StepsFor(double range_meters, double lat) {
  if (range_meters == 0) return kMaxStep;
  int step = 1;
  while (range_meters < kMercatorMax) {
    range_meters *= 2;
    step++;
  }
  step -= 2;  // so that the range lies within the cell and its neighbours in most cases
  if (lat > 66 || lat < -66) {  // meridians converge toward the poles
    step--;
    if (lat > 80 || lat < -80) step--;
  }
  return std::clamp(step, 1, kMaxStep);
}

// Meters between two latitudes along a meridian.
double LatDistance(double lat1, double lat2) {
  return kEarthRadiusMeters * std::fabs(DegRad(lat2) - DegRad(lat1));
}

// The search's bounding box: min lon, min lat, max lon, max lat.
struct Bounds {
  double min_lon, min_lat, max_lon, max_lat;
};

Bounds BoundsOf(const Shape& s) {
  const double height = s.to_meters * (s.box ? s.height / 2 : s.radius);
  const double width = s.to_meters * (s.box ? s.width / 2 : s.radius);
  const double lat_delta = RadDeg(height / kEarthRadiusMeters);
  const double lon_delta_top = RadDeg(width / kEarthRadiusMeters / std::cos(DegRad(s.center.lat + lat_delta)));
  const double lon_delta_bottom = RadDeg(width / kEarthRadiusMeters / std::cos(DegRad(s.center.lat - lat_delta)));
  // The box is widest at the edge nearer the equator.
  const double lon_delta = s.center.lat < 0 ? lon_delta_bottom : lon_delta_top;
  return Bounds{s.center.lon - lon_delta, s.center.lat - lat_delta, s.center.lon + lon_delta,
                s.center.lat + lat_delta};
}

}  // namespace

bool Valid(LonLat p) { return !(p.lon < kLonMin || p.lon > kLonMax || p.lat < kLatMin || p.lat > kLatMax); }

uint64_t ScoreOf(LonLat p) { return Align52(Encode(kLonRange, kLatRange, p, kMaxStep)); }

namespace {

// A score as redis-server on x86-64 turns it into bits (a C cast, which
// there truncates through a signed conversion): a negative score wraps
// around, one of 2^64 or more (or +inf) becomes 0, -inf and those below
// -2^63 become 2^63. Only scores ZADD wrote, not GEOADD, are any of these.
uint64_t BitsOf(double score) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (score >= kTwo63) {
    return score - kTwo63 >= kTwo63 ? 0 : static_cast<uint64_t>(static_cast<int64_t>(score - kTwo63)) ^ (1ULL << 63);
  }
  if (!(score > -kTwo63)) return 1ULL << 63;  // -inf, far below, NaN
  return static_cast<uint64_t>(static_cast<int64_t>(score));
}

}  // namespace

LonLat PositionOf(double score) {
  const Area a = Decode(Cell{BitsOf(score), kMaxStep});
  return LonLat{std::clamp((a.lon.min + a.lon.max) / 2, kLonMin, kLonMax),
                std::clamp((a.lat.min + a.lat.max) / 2, kLatMin, kLatMax)};
}

std::string StandardGeohash(double score) {
  const Cell cell = Encode(Range{-180, 180}, Range{-90, 90}, PositionOf(score), kMaxStep);
  std::string out(11, '0');
  for (int i = 0; i < 10; ++i) out[i] = kBase32[(cell.bits >> (52 - (i + 1) * 5)) & 0x1F];
  return out;  // the 11th character: 55 bits asked, 52 there, the rest zero
}

double Distance(LonLat a, LonLat b) {
  const double lon1 = DegRad(a.lon), lon2 = DegRad(b.lon);
  const double v = std::sin((lon2 - lon1) / 2);
  if (v == 0.0) return LatDistance(a.lat, b.lat);  // one meridian: no trigonometry needed
  const double lat1 = DegRad(a.lat), lat2 = DegRad(b.lat);
  const double u = std::sin((lat2 - lat1) / 2);
  const double h = u * u + std::cos(lat1) * std::cos(lat2) * v * v;
  return 2.0 * kEarthRadiusMeters * std::asin(std::sqrt(h));
}

std::vector<ScoreRange> SearchRanges(const Shape& shape) {
  const Bounds b = BoundsOf(shape);
  double radius_meters = shape.box ? std::sqrt((shape.width / 2) * (shape.width / 2) +
                                               (shape.height / 2) * (shape.height / 2))
                                   : shape.radius;
  radius_meters *= shape.to_meters;
  int steps = StepsFor(radius_meters, shape.center.lat);
  Cell center = Encode(kLonRange, kLatRange, shape.center, steps);
  // The estimate may leave the box sticking out of the neighbours: one
  // step coarser then (cells twice as large each way).
  const bool too_fine = Decode(Moved(center, 0, 1)).lat.max < b.max_lat ||
                        Decode(Moved(center, 0, -1)).lat.min > b.min_lat ||
                        Decode(Moved(center, 1, 0)).lon.max < b.max_lon ||
                        Decode(Moved(center, -1, 0)).lon.min > b.min_lon;
  if (steps > 1 && too_fine) {
    steps--;
    center = Encode(kLonRange, kLatRange, shape.center, steps);
  }
  const Area area = Decode(center);
  // Redis's order: centre, N, S, E, W, NE, NW, SE, SW.
  Cell cells[9] = {center,
                   Moved(center, 0, 1),  Moved(center, 0, -1), Moved(center, 1, 0), Moved(center, -1, 0),
                   Moved(center, 1, 1),  Moved(center, -1, 1), Moved(center, 1, -1), Moved(center, -1, -1)};
  enum { kN = 1, kS, kE, kW, kNE, kNW, kSE, kSW };
  if (steps >= 2) {  // leave out the neighbours the box does not reach
    auto drop = [&](std::initializer_list<int> which) {
      for (int i : which) cells[i] = Cell{};
    };
    if (area.lat.min < b.min_lat) drop({kS, kSW, kSE});
    if (area.lat.max > b.max_lat) drop({kN, kNE, kNW});
    if (area.lon.min < b.min_lon) drop({kW, kSW, kNW});
    if (area.lon.max > b.max_lon) drop({kE, kSE, kNE});
  }
  std::vector<ScoreRange> ranges;
  int last = 0;  // as Redis: the centre is never the "last scanned" a neighbour is compared with
  for (int i = 0; i < 9; ++i) {
    if (cells[i].none()) continue;
    // Large radii make adjacent neighbours the same cell.
    if (last != 0 && cells[i].bits == cells[last].bits && cells[i].step == cells[last].step) continue;
    Cell next = cells[i];
    next.bits++;
    ranges.push_back(ScoreRange{Align52(cells[i]), Align52(next)});
    last = i;
  }
  return ranges;
}

double DistanceIfWithin(const Shape& shape, LonLat p) {
  if (!shape.box) {
    const double radius = shape.radius * shape.to_meters;
    // A great circle is never shorter than the meridian arc between the two
    // latitudes: farther than the radius north or south (with a margin far
    // above any rounding) is outside, without the trigonometry. Within the
    // margin the test below decides, as Redis's does.
    if (LatDistance(p.lat, shape.center.lat) > radius * (1 + 1e-9) + 1e-6) return -1;
    const double d = Distance(shape.center, p);
    return d > radius ? -1 : d;
  }
  // Latitude first: the cheaper test.
  if (LatDistance(p.lat, shape.center.lat) > shape.height * shape.to_meters / 2) return -1;
  if (Distance(p, LonLat{shape.center.lon, p.lat}) > shape.width * shape.to_meters / 2) return -1;
  return Distance(shape.center, p);
}

}  // namespace rampart::proxy::geo
