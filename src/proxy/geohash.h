// The geometry of Redis's GEO commands: a position is a member of a sorted
// set whose score is a 52-bit geohash — 26 bits of latitude (over
// -85.05112878..85.05112878, the Web Mercator range) and 26 of longitude
// (-180..180), interleaved, latitude on the even bits. Searches scan the
// score ranges of the geohash cell around the centre and its eight
// neighbours, at a precision chosen from the radius, and keep the members
// inside the shape. Distances are great-circle (haversine) distances on a
// sphere of Redis's Earth radius. Every number here is the one redis-server
// 7.0 computes, in the same order of operations, so that replies, distances
// and search results agree with it to the last digit (docs/proxy.md, "GEO").
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rampart::proxy::geo {

inline constexpr double kLonMin = -180;
inline constexpr double kLonMax = 180;
inline constexpr double kLatMin = -85.05112878;
inline constexpr double kLatMax = 85.05112878;
inline constexpr double kEarthRadiusMeters = 6372797.560856;

struct LonLat {
  double lon = 0;
  double lat = 0;
};

// Whether GEOADD and the searches take the position.
bool Valid(LonLat p);

// The sorted-set score of a position. REQUIRES: Valid(p).
uint64_t ScoreOf(LonLat p);
// The centre of the cell a score names, within the valid range.
LonLat PositionOf(double score);
// GEOHASH's reply: the position's standard 11-character geohash (latitude
// over -90..90), the last character always '0' (a score has 52 bits).
std::string StandardGeohash(double score);

// Meters between two positions along the sphere.
double Distance(LonLat a, LonLat b);

// What a search covers: a circle of `radius`, or a box `width` x `height`
// (east-west x north-south), centred at `center`, in units of `to_meters`
// meters each (m 1, km 1000, ft 0.3048, mi 1609.34).
struct Shape {
  LonLat center;
  bool box = false;
  double radius = 0;
  double width = 0;
  double height = 0;
  double to_meters = 1;
};

// The score ranges [min, max) a search scans, in Redis's order (the centre's
// cell, then north, south, east, west, north-east, north-west, south-east,
// south-west), without the neighbours the shape cannot reach and without a
// neighbour equal to the one scanned before it.
struct ScoreRange {
  uint64_t min = 0;
  uint64_t max = 0;
};
std::vector<ScoreRange> SearchRanges(const Shape& shape);

// Whether `p` (a member's PositionOf) lies in the shape: then its distance
// from the centre in meters, else a negative number.
double DistanceIfWithin(const Shape& shape, LonLat p);

}  // namespace rampart::proxy::geo
