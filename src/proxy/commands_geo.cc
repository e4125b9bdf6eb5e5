// GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEOSEARCHSTORE, GEORADIUS,
// GEORADIUSBYMEMBER and their _RO forms: positions as members of a sorted
// set scored by their geohash (proxy/geohash.h), with Redis 7.0's options,
// replies and error texts, in the order Redis checks them.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "proxy/commands_internal.h"
#include "proxy/geohash.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {

using geo::LonLat;
using geo::Shape;

// m, km, ft, mi (any case) in meters.
Result<double> ParseUnit(std::string_view unit) {
  if (EqualsNoCase(unit, "m")) return 1.0;
  if (EqualsNoCase(unit, "km")) return 1000.0;
  if (EqualsNoCase(unit, "ft")) return 0.3048;
  if (EqualsNoCase(unit, "mi")) return 1609.34;
  return InvalidArgument("ERR unsupported unit provided. please use M, KM, FT, MI");
}

// A float, with `error` for anything else (Redis's getDoubleFromObjectOrReply).
Result<double> ParseNumber(std::string_view s, std::string_view error) {
  auto v = ParseScore(s);
  if (!v.ok()) return InvalidArgument(error);
  return *v;
}

Result<LonLat> ParseLonLat(std::string_view lon, std::string_view lat) {
  RAMPART_ASSIGN_OR_RETURN(double x, ParseScore(lon));
  RAMPART_ASSIGN_OR_RETURN(double y, ParseScore(lat));
  const LonLat p{x, y};
  if (!geo::Valid(p)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "ERR invalid longitude,latitude pair %f,%f", x, y);
    return InvalidArgument(buf);
  }
  return p;
}

// "radius unit" into the shape.
Status ParseRadius(std::string_view radius, std::string_view unit, Shape& shape) {
  RAMPART_ASSIGN_OR_RETURN(shape.radius, ParseNumber(radius, "ERR need numeric radius"));
  if (shape.radius < 0) return InvalidArgument("ERR radius cannot be negative");
  RAMPART_ASSIGN_OR_RETURN(shape.to_meters, ParseUnit(unit));
  shape.box = false;
  return Status::Ok();
}

// "width height unit" into the shape.
Status ParseBox(std::string_view width, std::string_view height, std::string_view unit, Shape& shape) {
  RAMPART_ASSIGN_OR_RETURN(shape.width, ParseNumber(width, "ERR need numeric width"));
  RAMPART_ASSIGN_OR_RETURN(shape.height, ParseNumber(height, "ERR need numeric height"));
  if (shape.width < 0 || shape.height < 0) return InvalidArgument("ERR height or width cannot be negative");
  RAMPART_ASSIGN_OR_RETURN(shape.to_meters, ParseUnit(unit));
  shape.box = true;
  return Status::Ok();
}

// A distance as Redis 7.0 replies it: four decimals of d * 10^4 rounded to
// an integer (llrint: ties to even), which can differ from "%.4f" in the
// last digit.
void ReplyDistance(resp::Writer& out, double d) {
  const long long scaled = std::llrint(d * 10000.0);
  const unsigned long long magnitude = scaled < 0 ? 0ULL - static_cast<unsigned long long>(scaled)
                                                  : static_cast<unsigned long long>(scaled);
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%s%llu.%04llu", scaled < 0 ? "-" : "", magnitude / 10000,
                              magnitude % 10000);
  out.Bulk(std::string_view(buf, static_cast<size_t>(n)));
}

// A coordinate as Redis replies it: a RESP3 double or a bulk string, in
// ld2string's human form ("13.36138933897018433").
void ReplyCoordinate(resp::Writer& out, double v) { out.DoubleText(FormatLongDouble(v)); }

// A member's position, nullopt when it is not in the set.
Result<std::optional<LonLat>> PositionOfMember(Zset& z, std::string_view member) {
  RAMPART_ASSIGN_OR_RETURN(std::optional<double> score, z.Score(member));
  if (!score.has_value()) return std::optional<LonLat>();
  return std::optional<LonLat>(geo::PositionOf(*score));
}

// The sorted set at `key`, nullopt when there is none (WRONGTYPE for
// another type).
Result<std::optional<Zset>> OpenIfExists(DataView& data, std::string_view key) {
  RAMPART_ASSIGN_OR_RETURN(Zset z, Zset::Open(data, key));
  if (!z.exists()) return std::optional<Zset>();
  return std::optional<Zset>(std::move(z));
}

// ---- Searches --------------------------------------------------------------

enum class Form { kRadius, kRadiusByMember, kSearch, kSearchStore };

struct Search {
  Shape shape;
  bool with_dist = false, with_hash = false, with_coord = false;
  bool any = false;
  int64_t count = 0;  // 0: all
  enum class Sort { kNone, kAsc, kDesc } sort = Sort::kNone;
  std::optional<std::string_view> store;  // the destination key
  bool store_dist = false;
  bool from = false, by = false;  // GEOSEARCH: FROMMEMBER/FROMLONLAT, BYRADIUS/BYBOX seen
};

struct Found {
  std::string member;
  double score = 0;
  double meters = 0;
  LonLat at;
};

// The options after the fixed arguments, in Redis's order of checks. `src`:
// the source set, nullopt when there is none (FROMMEMBER then only parses).
Status ParseOptions(Args args, size_t first, Form form, std::optional<Zset>& src, Search& q) {
  const bool search = form == Form::kSearch || form == Form::kSearchStore;
  const bool may_store = !search && (CommandName(args) == "georadius" || CommandName(args) == "georadiusbymember");
  bool from_member = false, from_lonlat = false, by_radius = false, by_box = false;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const size_t left = args.size() - i - 1;  // arguments after this one
    if (EqualsNoCase(arg, "withdist")) {
      q.with_dist = true;
    } else if (EqualsNoCase(arg, "withhash")) {
      q.with_hash = true;
    } else if (EqualsNoCase(arg, "withcoord")) {
      q.with_coord = true;
    } else if (EqualsNoCase(arg, "any")) {
      q.any = true;
    } else if (EqualsNoCase(arg, "asc")) {
      q.sort = Search::Sort::kAsc;
    } else if (EqualsNoCase(arg, "desc")) {
      q.sort = Search::Sort::kDesc;
    } else if (EqualsNoCase(arg, "count") && left >= 1) {
      RAMPART_ASSIGN_OR_RETURN(q.count, ParseInt64(args[i + 1]));
      if (q.count <= 0) return InvalidArgument("ERR COUNT must be > 0");
      ++i;
    } else if ((EqualsNoCase(arg, "store") || EqualsNoCase(arg, "storedist")) && left >= 1 && may_store) {
      q.store = args[i + 1];
      q.store_dist = EqualsNoCase(arg, "storedist");
      ++i;
    } else if (EqualsNoCase(arg, "storedist") && form == Form::kSearchStore) {
      q.store_dist = true;
    } else if (EqualsNoCase(arg, "frommember") && left >= 1 && search && !from_lonlat) {
      if (src.has_value()) {
        RAMPART_ASSIGN_OR_RETURN(std::optional<LonLat> at, PositionOfMember(*src, args[i + 1]));
        if (!at.has_value()) return InvalidArgument("ERR could not decode requested zset member");
        q.shape.center = *at;
      }
      from_member = true;
      ++i;
    } else if (EqualsNoCase(arg, "fromlonlat") && left >= 2 && search && !from_member) {
      RAMPART_ASSIGN_OR_RETURN(q.shape.center, ParseLonLat(args[i + 1], args[i + 2]));
      from_lonlat = true;
      i += 2;
    } else if (EqualsNoCase(arg, "byradius") && left >= 2 && search && !by_box) {
      RAMPART_RETURN_IF_ERROR(ParseRadius(args[i + 1], args[i + 2], q.shape));
      by_radius = true;
      i += 2;
    } else if (EqualsNoCase(arg, "bybox") && left >= 3 && search && !by_radius) {
      RAMPART_RETURN_IF_ERROR(ParseBox(args[i + 1], args[i + 2], args[i + 3], q.shape));
      by_box = true;
      i += 3;
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  if (q.store.has_value() && (q.with_dist || q.with_hash || q.with_coord)) {
    return InvalidArgument(StrCat("ERR ", search ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS",
                                  " is not compatible with WITHDIST, WITHHASH and WITHCOORD options"));
  }
  if (search && !(from_member || from_lonlat)) {
    return InvalidArgument(StrCat("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for ", args[0]));
  }
  if (search && !(by_radius || by_box)) {
    return InvalidArgument(StrCat("ERR exactly one of BYRADIUS and BYBOX can be specified for ", args[0]));
  }
  if (q.any && q.count == 0) return InvalidArgument("ERR the ANY argument requires COUNT argument");
  return Status::Ok();
}

// The ranks of each cell's members in the by-score tree.
Result<std::vector<RankRange>> CellRanks(Zset& z, const Search& q) {
  std::vector<RankRange> ranks;
  Gather pages;  // every cell's path in one read round
  for (const geo::ScoreRange& cell : geo::SearchRanges(q.shape)) {
    auto r = ScoreRanks(z.by_score(), ScoreBound{static_cast<double>(cell.min), false},
                        ScoreBound{static_cast<double>(cell.max), true});
    if (pages.Add(r.status())) ranks.push_back(*r);
  }
  RAMPART_RETURN_IF_ERROR(pages.status());
  return ranks;
}

// The members inside the shape among the first `budget` members of the
// cells in scan order (nullopt: all), in that order (by cell, then score,
// then member); with ANY at most `count`.
Result<std::vector<Found>> MembersWithin(Zset& z, const Search& q, const std::vector<RankRange>& ranks,
                                         std::optional<uint64_t> budget) {
  std::vector<Zset::Scored> members;
  Gather pages;  // every cell's leaves in one read round
  for (RankRange r : ranks) {
    if (budget.has_value()) {
      if (*budget == 0) break;
      r.last = std::min(r.last, r.first + *budget);
      *budget -= r.size();
    }
    auto items = z.ScoreOrderRange(r, /*reverse=*/false);
    if (pages.Add(items.status())) members.push_back(std::move(*items));
  }
  RAMPART_RETURN_IF_ERROR(pages.status());
  std::vector<Found> found;
  const size_t limit = q.any ? static_cast<size_t>(q.count) : 0;
  for (Zset::Scored& cell : members) {
    for (auto& [member, score] : cell) {
      if (limit != 0 && found.size() >= limit) return found;
      const LonLat at = geo::PositionOf(score);
      const double meters = geo::DistanceIfWithin(q.shape, at);
      if (meters < 0) continue;
      found.push_back(Found{std::move(member), score, meters, at});
    }
  }
  return found;
}

// What the search finds. With ANY, the first members in scan order are read
// first and all of them only if those held too few matches, so that ANY
// COUNT 1 over a continent reads a few pages (Redis stops at the count).
Result<std::vector<Found>> Find(Zset& z, const Search& q) {
  RAMPART_ASSIGN_OR_RETURN(std::vector<RankRange> ranks, CellRanks(z, q));
  if (q.any) {
    uint64_t total = 0;
    for (const RankRange& r : ranks) total += r.size();
    const uint64_t first = std::max<uint64_t>(256, 4 * static_cast<uint64_t>(q.count));
    if (first < total) {
      RAMPART_ASSIGN_OR_RETURN(std::vector<Found> found, MembersWithin(z, q, ranks, first));
      if (found.size() >= static_cast<size_t>(q.count)) return found;
    }
  }
  return MembersWithin(z, q, ranks, std::nullopt);
}

void ReplyFound(resp::Writer& out, const Search& q, const std::vector<Found>& found, size_t n) {
  const size_t extras = q.with_dist + q.with_hash + q.with_coord;
  out.Array(n);
  for (size_t i = 0; i < n; ++i) {
    const Found& f = found[i];
    if (extras > 0) out.Array(extras + 1);
    out.Bulk(f.member);
    if (q.with_dist) ReplyDistance(out, f.meters / q.shape.to_meters);
    if (q.with_hash) out.Integer(static_cast<int64_t>(f.score));
    if (q.with_coord) {
      out.Array(2);
      ReplyCoordinate(out, f.at.lon);
      ReplyCoordinate(out, f.at.lat);
    }
  }
}

// Stores the first n found at q.store, with Redis's notification: `event`
// when there are any, else "del" when the destination held a value.
Status StoreFound(DataView& data, const Search& q, const std::vector<Found>& found, size_t n,
                  std::string_view event) {
  const bool existed = HoldsValue(data, *q.store);
  Zset::Scored items;
  items.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    items.emplace_back(found[i].member, q.store_dist ? found[i].meters / q.shape.to_meters : found[i].score);
  }
  Zset dst = Zset::Create(data, *q.store);
  dst.Fill(std::move(items));  // none: the destination is deleted
  RAMPART_RETURN_IF_ERROR(dst.Save());
  NotifyStored(data, notify::kZset, event, *q.store, n > 0, existed);
  return Status::Ok();
}

// Everything before the options: the source and the fixed arguments of
// GEORADIUS (lon lat radius unit) and GEORADIUSBYMEMBER (member radius
// unit); the index of the first option.
Result<size_t> ParseFixed(Args args, Form form, std::optional<Zset>& src, Search& q) {
  switch (form) {
    case Form::kRadius: {
      RAMPART_ASSIGN_OR_RETURN(q.shape.center, ParseLonLat(args[2], args[3]));
      RAMPART_RETURN_IF_ERROR(ParseRadius(args[4], args[5], q.shape));
      return size_t{6};
    }
    case Form::kRadiusByMember: {
      if (src.has_value()) {  // without a set, Redis checks nothing more here
        RAMPART_ASSIGN_OR_RETURN(std::optional<LonLat> at, PositionOfMember(*src, args[2]));
        if (!at.has_value()) return InvalidArgument("ERR could not decode requested zset member");
        q.shape.center = *at;
        RAMPART_RETURN_IF_ERROR(ParseRadius(args[3], args[4], q.shape));
      }
      return size_t{5};
    }
    case Form::kSearch:
      return size_t{2};
    case Form::kSearchStore:
      q.store = args[1];
      return size_t{3};
  }
  return size_t{2};
}

void GeoSearchGeneric(Args args, DataView& data, resp::Writer& out, Form form) {
  const std::string_view source = args[form == Form::kSearchStore ? 2 : 1];
  auto src = OpenIfExists(data, source);
  if (ReplyIfError(src.status(), out)) return;
  // Redis looks the source up as a read command does before it parses the
  // rest (the read forms' "keymiss" is the worker's).
  if (!src->has_value() && FindCommand(args[0])->kind == CommandKind::kWrite) NotifyKeyMiss(data, source);
  Search q;
  auto first = ParseFixed(args, form, *src, q);
  if (ReplyIfError(first.status(), out)) return;
  if (ReplyIfError(ParseOptions(args, *first, form, *src, q), out)) return;
  const std::string_view stored_event = form == Form::kSearchStore ? "geosearchstore" : "georadiusstore";
  if (!src->has_value()) {
    if (!q.store.has_value()) return out.Array(0);
    if (ReplyIfError(StoreFound(data, q, {}, 0, stored_event), out)) return;
    return out.Integer(0);
  }
  // COUNT without ANY keeps the nearest: sorted.
  if (q.count != 0 && q.sort == Search::Sort::kNone && !q.any) q.sort = Search::Sort::kAsc;
  auto found = Find(**src, q);
  if (ReplyIfError(found.status(), out)) return;
  if (q.sort != Search::Sort::kNone) {
    const bool asc = q.sort == Search::Sort::kAsc;
    std::stable_sort(found->begin(), found->end(), [asc](const Found& a, const Found& b) {
      return asc ? a.meters < b.meters : a.meters > b.meters;
    });
  }
  const size_t n = q.count == 0 ? found->size() : std::min(found->size(), static_cast<size_t>(q.count));
  if (!q.store.has_value()) return ReplyFound(out, q, *found, n);
  if (ReplyIfError(StoreFound(data, q, *found, n, stored_event), out)) return;
  out.Integer(static_cast<int64_t>(n));
}

}  // namespace

// GEOADD key [NX|XX] [CH] lon lat member ...: as in Redis, a ZADD of the
// members' geohashes, with every position checked before anything is added.
void GeoAdd(Args args, DataView& data, resp::Writer& out) {
  size_t first = 2;
  bool nx = false, xx = false;
  while (first < args.size() &&
         (EqualsNoCase(args[first], "nx") || EqualsNoCase(args[first], "xx") || EqualsNoCase(args[first], "ch"))) {
    nx = nx || EqualsNoCase(args[first], "nx");
    xx = xx || EqualsNoCase(args[first], "xx");
    ++first;
  }
  if ((args.size() - first) % 3 != 0 || first == args.size() || (nx && xx)) return out.Error("ERR syntax error");
  std::vector<std::string> scores;
  scores.reserve((args.size() - first) / 3);
  std::vector<std::string_view> zadd{"zadd"};
  zadd.insert(zadd.end(), args.begin() + 1, args.begin() + first);  // the key and the flags
  for (size_t n = first; n < args.size(); n += 3) {
    auto p = ParseLonLat(args[n], args[n + 1]);
    if (ReplyIfError(p.status(), out)) return;
    scores.push_back(std::to_string(geo::ScoreOf(*p)));
    zadd.push_back(scores.back());  // reserved: the views stay put
    zadd.push_back(args[n + 2]);
  }
  ZAdd(zadd, data, out);
}

void GeoPos(Args args, DataView& data, resp::Writer& out) {
  auto z = OpenIfExists(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  std::vector<std::optional<LonLat>> at;
  if (z->has_value()) {
    const std::vector<std::string_view> members(args.begin() + 2, args.end());
    if (ReplyIfError((*z)->PrefetchMembers(members), out)) return;
    for (std::string_view m : members) {
      auto p = PositionOfMember(**z, m);
      if (ReplyIfError(p.status(), out)) return;
      at.push_back(*p);
    }
  } else {
    at.resize(args.size() - 2);
  }
  out.Array(at.size());
  for (const std::optional<LonLat>& p : at) {
    if (!p.has_value()) {
      out.NullArray();
      continue;
    }
    out.Array(2);
    ReplyCoordinate(out, p->lon);
    ReplyCoordinate(out, p->lat);
  }
}

void GeoHash(Args args, DataView& data, resp::Writer& out) {
  auto z = OpenIfExists(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  const std::vector<std::string_view> members(args.begin() + 2, args.end());
  std::vector<std::optional<double>> scores(members.size());
  if (z->has_value()) {
    if (ReplyIfError((*z)->PrefetchMembers(members), out)) return;
    for (size_t i = 0; i < members.size(); ++i) {
      auto s = (*z)->Score(members[i]);
      if (ReplyIfError(s.status(), out)) return;
      scores[i] = *s;
    }
  }
  out.Array(scores.size());
  for (const std::optional<double>& s : scores) {
    if (s.has_value()) {
      out.Bulk(geo::StandardGeohash(*s));
    } else {
      out.Null();
    }
  }
}

// GEODIST key member1 member2 [unit].
void GeoDist(Args args, DataView& data, resp::Writer& out) {
  double to_meters = 1;
  if (args.size() == 5) {
    auto unit = ParseUnit(args[4]);
    if (ReplyIfError(unit.status(), out)) return;
    to_meters = *unit;
  } else if (args.size() > 5) {
    return out.Error("ERR syntax error");
  }
  auto z = OpenIfExists(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  if (!z->has_value()) return out.Null();
  if (ReplyIfError((*z)->PrefetchMembers({args[2], args[3]}), out)) return;
  auto a = PositionOfMember(**z, args[2]);
  if (ReplyIfError(a.status(), out)) return;
  auto b = PositionOfMember(**z, args[3]);
  if (ReplyIfError(b.status(), out)) return;
  if (!a->has_value() || !b->has_value()) return out.Null();
  ReplyDistance(out, geo::Distance(**a, **b) / to_meters);
}

void GeoRadius(Args args, DataView& data, resp::Writer& out) { GeoSearchGeneric(args, data, out, Form::kRadius); }
void GeoRadiusByMember(Args args, DataView& data, resp::Writer& out) {
  GeoSearchGeneric(args, data, out, Form::kRadiusByMember);
}
void GeoSearch(Args args, DataView& data, resp::Writer& out) { GeoSearchGeneric(args, data, out, Form::kSearch); }
void GeoSearchStore(Args args, DataView& data, resp::Writer& out) {
  GeoSearchGeneric(args, data, out, Form::kSearchStore);
}

// GEORADIUS key lon lat radius unit ... and GEORADIUSBYMEMBER key member
// radius unit ...: the source, and the keys after STORE and STOREDIST,
// searched for from the sixth argument on as Redis does. Given twice, the
// last is the one written; Redis's COMMAND GETKEYS names the first only,
// rampart locks (and names) both.
std::vector<std::string_view> GeoRadiusKeys(Args args) {
  std::vector<std::string_view> keys{args[1]};
  for (size_t i = 5; i + 1 < args.size(); ++i) {
    if (EqualsNoCase(args[i], "store") || EqualsNoCase(args[i], "storedist")) keys.push_back(args[++i]);
  }
  return keys;
}

}  // namespace rampart::proxy::internal
