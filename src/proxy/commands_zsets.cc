// Sorted-set commands about members: ZADD, ZINCRBY, ZREM, ZSCORE, ZMSCORE,
// ZCARD, ZRANK, ZREVRANK, ZPOPMIN, ZPOPMAX, ZRANDMEMBER, ZSCAN — over a Zset
// (zset.h). Ranges are in commands_zranges.cc, the set algebra in
// commands_zsetops.cc.
#include <cmath>

#include "proxy/commands_internal.h"
#include "proxy/notify.h"
#include "proxy/zset.h"

namespace rampart::proxy::internal {
namespace {

struct ZaddOptions {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
  size_t first_pair = 2;  // index of the first score
};

Result<ZaddOptions> ParseZaddOptions(Args args) {
  ZaddOptions o;
  size_t& n = o.first_pair;
  for (; n < args.size(); ++n) {
    const std::string_view a = args[n];
    if (EqualsNoCase(a, "nx")) {
      o.nx = true;
    } else if (EqualsNoCase(a, "xx")) {
      o.xx = true;
    } else if (EqualsNoCase(a, "gt")) {
      o.gt = true;
    } else if (EqualsNoCase(a, "lt")) {
      o.lt = true;
    } else if (EqualsNoCase(a, "ch")) {
      o.ch = true;
    } else if (EqualsNoCase(a, "incr")) {
      o.incr = true;
    } else {
      break;
    }
  }
  const size_t rest = args.size() - n;
  if (rest == 0 || rest % 2 != 0) return InvalidArgument("ERR syntax error");
  if (o.nx && o.xx) return InvalidArgument("ERR XX and NX options at the same time are not compatible");
  if ((o.gt && o.nx) || (o.lt && o.nx) || (o.gt && o.lt)) {
    return InvalidArgument("ERR GT, LT, and/or NX options at the same time are not compatible");
  }
  if (o.incr && rest > 2) return InvalidArgument("ERR INCR option supports a single increment-element pair");
  return o;
}

// The members of args[from], args[from + step], ...
std::vector<std::string_view> Members(Args args, size_t from, size_t step) {
  std::vector<std::string_view> out;
  for (size_t n = from; n < args.size(); n += step) out.push_back(args[n]);
  return out;
}

// Reads what setting these members' scores touches: their by-member pages
// and, in the same rounds when `scores_known` (the pairs hold the new scores,
// not increments), the by-score pages of the new scores; then the by-score
// pages of their old scores. (A ZADD of new members thus needs no round more
// than a lookup: Worker::Predict sees both trees' paths at once.)
Status PrefetchForUpdate(Zset& z, const std::vector<std::pair<double, std::string_view>>& updates,
                         bool scores_known) {
  std::vector<std::string_view> members;
  for (const auto& u : updates) members.push_back(u.second);
  const Status members_read = z.PrefetchMembers(members);
  const Status new_scores_read = scores_known ? z.PrefetchScores(updates) : Status::Ok();
  RAMPART_RETURN_IF_ERROR(members_read);
  RAMPART_RETURN_IF_ERROR(new_scores_read);
  std::vector<std::pair<double, std::string_view>> keys = updates;
  for (std::string_view m : members) {
    RAMPART_ASSIGN_OR_RETURN(auto old, z.Score(m));
    if (old.has_value()) keys.emplace_back(*old, m);
  }
  return z.PrefetchScores(keys);
}

// ZADD's rules for one member. Returns the new score, or nullopt when the
// options leave the member as it is.
std::optional<double> ZaddScore(const ZaddOptions& o, std::optional<double> old, double score) {
  if ((o.nx && old.has_value()) || (o.xx && !old.has_value())) return std::nullopt;
  const double next = o.incr && old.has_value() ? *old + score : score;
  if (old.has_value() && ((o.gt && next <= *old) || (o.lt && next >= *old))) return std::nullopt;
  return next;
}

// Redis's notifications of a removal of members from the sorted set at
// `key`: `event`, then "del" when it emptied (and so was deleted).
void NotifyRemoved(DataView& data, const Zset& z, std::string_view event, std::string_view key) {
  data.Notify(notify::kZset, event, key);
  if (z.size() == 0) data.Notify(notify::kGeneric, "del", key);
}

}  // namespace

void ZAdd(Args args, DataView& data, resp::Writer& out) {
  auto o = ParseZaddOptions(args);
  if (ReplyIfError(o.status(), out)) return;
  std::vector<std::pair<double, std::string_view>> updates;
  for (size_t n = o->first_pair; n < args.size(); n += 2) {
    auto score = ParseScore(args[n]);
    if (ReplyIfError(score.status(), out)) return;
    updates.emplace_back(*score, args[n + 1]);
  }
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  if (ReplyIfError(PrefetchForUpdate(*z, updates, /*scores_known=*/!o->incr), out)) return;
  int64_t added = 0, changed = 0;
  std::optional<double> last;
  for (const auto& [score, member] : updates) {
    auto old = z->Score(member);
    if (ReplyIfError(old.status(), out)) return;
    last = ZaddScore(*o, *old, score);
    if (!last.has_value()) continue;
    if (std::isnan(*last)) return out.Error("ERR resulting score is not a number (NaN)");
    if (ReplyIfError(z->Set(member, *last, *old), out)) return;
    added += !old->has_value();
    changed += !old->has_value() || **old != *last;
  }
  if (changed > 0) {  // Redis notifies only when a member was added or its score changed
    if (ReplyIfError(z->Save(), out)) return;
    data.Notify(notify::kZset, o->incr ? "zincr" : "zadd", args[1]);
  }
  if (o->incr) {
    if (!last.has_value()) return out.Null();
    return ReplyScore(out, *last);
  }
  out.Integer(o->ch ? changed : added);
}

void ZIncrBy(Args args, DataView& data, resp::Writer& out) {
  auto by = ParseScore(args[2]);
  if (ReplyIfError(by.status(), out)) return;
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  if (ReplyIfError(PrefetchForUpdate(*z, {{*by, args[3]}}, /*scores_known=*/false), out)) return;
  auto old = z->Score(args[3]);
  if (ReplyIfError(old.status(), out)) return;
  const double next = old->value_or(0) + *by;
  if (std::isnan(next)) return out.Error("ERR resulting score is not a number (NaN)");
  if (ReplyIfError(z->Set(args[3], next, *old), out)) return;
  if (ReplyIfError(z->Save(), out)) return;
  // As ZADD INCR: no event when the score stays (an increment of 0).
  if (!old->has_value() || **old != next) data.Notify(notify::kZset, "zincr", args[1]);
  ReplyScore(out, next);
}

void ZRem(Args args, DataView& data, resp::Writer& out) {
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  const std::vector<std::string_view> members = Members(args, 2, 1);
  if (ReplyIfError(z->PrefetchMembers(members), out)) return;
  std::vector<std::pair<double, std::string_view>> present;
  for (std::string_view m : members) {
    auto score = z->Score(m);
    if (ReplyIfError(score.status(), out)) return;
    if (score->has_value()) present.emplace_back(**score, m);
  }
  if (ReplyIfError(z->PrefetchScores(present), out)) return;
  int64_t removed = 0;
  for (std::string_view m : members) {
    auto score = z->Score(m);  // again: a member may be named twice
    if (ReplyIfError(score.status(), out)) return;
    if (!score->has_value()) continue;
    if (ReplyIfError(z->Remove(m, **score), out)) return;
    ++removed;
  }
  if (removed > 0) {
    if (ReplyIfError(z->Save(), out)) return;
    NotifyRemoved(data, *z, "zrem", args[1]);
  }
  out.Integer(removed);
}

void ZScore(Args args, DataView& data, resp::Writer& out) {
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  auto score = z->Score(args[2]);
  if (ReplyIfError(score.status(), out)) return;
  if (!score->has_value()) return out.Null();
  ReplyScore(out, **score);
}

void ZMScore(Args args, DataView& data, resp::Writer& out) {
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  const std::vector<std::string_view> members = Members(args, 2, 1);
  if (ReplyIfError(z->PrefetchMembers(members), out)) return;
  std::vector<std::optional<double>> scores;
  for (std::string_view m : members) {
    auto score = z->Score(m);
    if (ReplyIfError(score.status(), out)) return;
    scores.push_back(*score);
  }
  out.Array(scores.size());
  for (const auto& s : scores) {
    if (s.has_value()) {
      ReplyScore(out, *s);
    } else {
      out.Null();
    }
  }
}

void ZCard(Args args, DataView& data, resp::Writer& out) {
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  out.Integer(static_cast<int64_t>(z->size()));
}

// ZRANK / ZREVRANK key member
void ZRank(Args args, DataView& data, resp::Writer& out) {
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  auto score = z->Score(args[2]);
  if (ReplyIfError(score.status(), out)) return;
  if (!score->has_value()) return out.Null();
  auto rank = z->by_score().LowerRank(ScoreKey(**score, args[2]));
  if (ReplyIfError(rank.status(), out)) return;
  const bool rev = EqualsNoCase(args[0], "zrevrank");
  out.Integer(static_cast<int64_t>(rev ? z->size() - 1 - *rank : *rank));
}

// Records what Redis's genericZpopCommand notifies: "zpopmin" or "zpopmax"
// once when anything was popped, then "del" when the set emptied.
Result<std::optional<Zset::Scored>> PopScored(DataView& data, std::string_view key, bool max,
                                              uint64_t count) {
  RAMPART_ASSIGN_OR_RETURN(Zset z, Zset::Open(data, key));
  if (!z.exists()) return std::optional<Zset::Scored>();
  const uint64_t n = std::min(count, z.size());
  const uint64_t first = max ? z.size() - n : 0;
  const RankRange range{first, first + n};
  RAMPART_ASSIGN_OR_RETURN(Zset::Scored popped, z.ScoreOrderRange(range, max));
  if (n > 0) {
    RAMPART_RETURN_IF_ERROR(z.EraseScoreOrderRange(range, popped));
    RAMPART_RETURN_IF_ERROR(z.Save());
    NotifyRemoved(data, z, max ? "zpopmax" : "zpopmin", key);
  }
  return std::optional<Zset::Scored>(std::move(popped));
}

// ZPOPMIN / ZPOPMAX key [count]
void ZPop(Args args, DataView& data, resp::Writer& out) {
  int64_t count = 1;
  if (args.size() == 3) {
    auto c = ParseInt64(args[2]);
    if (ReplyIfError(c.status(), out)) return;
    if (*c < 0) return out.Error("ERR value is out of range, must be positive");
    count = *c;
  }
  const bool max = EqualsNoCase(args[0], "zpopmax");
  auto found = PopScored(data, args[1], max, static_cast<uint64_t>(count));
  if (ReplyIfError(found.status(), out)) return;
  const Zset::Scored popped = std::move(*found).value_or(Zset::Scored());
  // RESP3 gives a count's pops as pairs, a single pop flat.
  if (args.size() == 3 || out.protocol() < 3) return ReplyScored(out, popped, true);
  out.Array(popped.empty() ? 0 : 2);
  if (popped.empty()) return;
  out.Bulk(popped.front().first);
  ReplyScore(out, popped.front().second);
}

// ZRANDMEMBER key [count [WITHSCORES]]
void ZRandMember(Args args, DataView& data, resp::Writer& out) {
  int64_t count = 1;
  const bool with_count = args.size() >= 3;
  const bool with_scores = args.size() == 4 && EqualsNoCase(args[3], "withscores");
  if (with_count) {
    auto c = ParseRandomCount(args[2]);
    if (ReplyIfError(c.status(), out)) return;
    count = *c;
    if (args.size() > 4 || (args.size() == 4 && !with_scores)) return out.Error("ERR syntax error");
  }
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  if (!with_count && z->size() == 0) return out.Null();
  const std::vector<uint64_t> ranks = RandomRanks(data, z->size(), count);
  if (ReplyIfError(z->by_member().PrefetchRanks(ranks), out)) return;
  std::vector<std::pair<std::string, double>> picked;
  for (uint64_t r : ranks) {
    auto e = z->by_member().At(r);
    if (ReplyIfError(e.status(), out)) return;
    picked.emplace_back(std::move(e->key), ScoreOfValue(e->value));
  }
  if (!with_count) return out.Bulk(picked[0].first);
  ReplyScored(out, picked, with_scores);
}

void ZScan(Args args, DataView& data, resp::Writer& out) {
  ScanCollection(
      args, out, [&] { return Zset::Open(data, args[1]); }, [](Zset& z) -> PageTree& { return z.by_member(); },
      2, [](const TreeEntry& e, resp::Writer& w) {
        w.Bulk(e.key);
        w.Bulk(FormatScanScore(ScoreOfValue(e.value)));
      });
}

}  // namespace rampart::proxy::internal
