// Sorted-set range commands: ZRANGE (by index, BYSCORE, BYLEX, REV, LIMIT,
// WITHSCORES) and its older forms ZRANGEBYSCORE, ZREVRANGE,
// ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX; ZRANGESTORE; ZCOUNT,
// ZLEXCOUNT; ZREMRANGEBYSCORE, ZREMRANGEBYRANK, ZREMRANGEBYLEX. A range is a
// rank interval of one of the Zset's trees (zset.h): scores and indexes in
// kByScore, lex bounds in kByMember (Redis leaves lex ranges over members of
// different scores undefined; here they follow member order).
#include "proxy/commands_internal.h"
#include "proxy/notify.h"
#include "proxy/zset.h"

namespace rampart::proxy::internal {
namespace {

enum class RangeBy { kIndex, kScore, kLex };

struct RangeQuery {
  RangeBy by = RangeBy::kIndex;
  bool rev = false;
  bool with_scores = false;
  bool limit = false;
  int64_t offset = 0;
  int64_t count = -1;
  std::string_view min, max;  // as given, REV's swap undone
};

// Options from args[from] on, as Redis's zrangeGenericCommand reads them;
// `by`/`rev` preset by the older command forms (nullopt: ZRANGE's options
// choose).
Result<RangeQuery> ParseRange(Args args, size_t first_bound, std::optional<RangeBy> by,
                              std::optional<bool> rev, bool store) {
  RangeQuery q;
  for (size_t n = first_bound + 2; n < args.size(); ++n) {
    const std::string_view a = args[n];
    const size_t left = args.size() - n - 1;
    if (!store && EqualsNoCase(a, "withscores")) {
      q.with_scores = true;
    } else if (EqualsNoCase(a, "limit") && left >= 2) {
      RAMPART_ASSIGN_OR_RETURN(q.offset, ParseInt64(args[n + 1]));
      RAMPART_ASSIGN_OR_RETURN(q.count, ParseInt64(args[n + 2]));
      q.limit = true;
      n += 2;
    } else if (!rev.has_value() && EqualsNoCase(a, "rev")) {
      rev = true;
    } else if (!by.has_value() && EqualsNoCase(a, "bylex")) {
      by = RangeBy::kLex;
    } else if (!by.has_value() && EqualsNoCase(a, "byscore")) {
      by = RangeBy::kScore;
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  q.by = by.value_or(RangeBy::kIndex);
  q.rev = rev.value_or(false);
  if (q.limit && q.by == RangeBy::kIndex) {
    return InvalidArgument("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
  }
  if (q.with_scores && q.by == RangeBy::kLex) {
    return InvalidArgument("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
  }
  q.min = args[first_bound];
  q.max = args[first_bound + 1];
  if (q.rev && q.by != RangeBy::kIndex) std::swap(q.min, q.max);
  return q;
}

// The ascending ranks the query's bounds select (before LIMIT).
Result<RankRange> BoundRanks(Zset& z, const RangeQuery& q) {
  switch (q.by) {
    case RangeBy::kIndex: {
      RAMPART_ASSIGN_OR_RETURN(int64_t start, ParseInt64(q.min));
      RAMPART_ASSIGN_OR_RETURN(int64_t stop, ParseInt64(q.max));
      const RankRange r = IndexRanks(start, stop, z.size());
      if (!q.rev) return r;
      return RankRange{z.size() - r.last, z.size() - r.first};
    }
    case RangeBy::kScore: {
      RAMPART_ASSIGN_OR_RETURN(ScoreBound min, ParseScoreBound(q.min));
      RAMPART_ASSIGN_OR_RETURN(ScoreBound max, ParseScoreBound(q.max));
      return ScoreRanks(z.by_score(), min, max);
    }
    case RangeBy::kLex: {
      RAMPART_ASSIGN_OR_RETURN(LexBound min, ParseLexBound(q.min));
      RAMPART_ASSIGN_OR_RETURN(LexBound max, ParseLexBound(q.max));
      return LexRanks(z.by_member(), min, max);
    }
  }
  return RankRange{};
}

// The bounds are checked before the key is looked at (Redis's order of
// errors): an unparsable bound is an error even on a missing key.
Status CheckBounds(const RangeQuery& q) {
  switch (q.by) {
    case RangeBy::kIndex:
      RAMPART_RETURN_IF_ERROR(ParseInt64(q.min).status());
      return ParseInt64(q.max).status();
    case RangeBy::kScore:
      RAMPART_RETURN_IF_ERROR(ParseScoreBound(q.min).status());
      return ParseScoreBound(q.max).status();
    case RangeBy::kLex:
      RAMPART_RETURN_IF_ERROR(ParseLexBound(q.min).status());
      return ParseLexBound(q.max).status();
  }
  return Status::Ok();
}

// The members (and scores) the query selects, in reply order.
Result<Zset::Scored> Select(Zset& z, const RangeQuery& q) {
  RAMPART_ASSIGN_OR_RETURN(RankRange r, BoundRanks(z, q));
  const uint64_t n = r.size();
  if (q.offset < 0) return Zset::Scored{};
  const uint64_t skip = std::min<uint64_t>(static_cast<uint64_t>(q.offset), n);
  const uint64_t take = q.count < 0 ? n - skip : std::min<uint64_t>(static_cast<uint64_t>(q.count), n - skip);
  const RankRange picked = q.rev ? RankRange{r.last - skip - take, r.last - skip}
                                 : RankRange{r.first + skip, r.first + skip + take};
  return q.by == RangeBy::kLex ? z.LexOrderRange(picked, q.rev) : z.ScoreOrderRange(picked, q.rev);
}

void RangeCommand(Args args, DataView& data, resp::Writer& out, std::optional<RangeBy> by,
                  std::optional<bool> rev) {
  auto q = ParseRange(args, 2, by, rev, /*store=*/false);
  if (ReplyIfError(q.status(), out)) return;
  if (ReplyIfError(CheckBounds(*q), out)) return;
  auto z = Zset::Open(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  auto items = Select(*z, *q);
  if (ReplyIfError(items.status(), out)) return;
  ReplyScored(out, *items, q->with_scores);
}

// The sorted set at args[1] and the ascending ranks of its members within
// args[2]..args[3] (ZCOUNT, ZLEXCOUNT, ZREMRANGEBY*), bounds checked first.
struct OpenedRange {
  Zset z;
  RankRange ranks;
};
Result<OpenedRange> OpenRange(Args args, DataView& data, RangeBy by) {
  RangeQuery q;
  q.by = by;
  q.min = args[2];
  q.max = args[3];
  RAMPART_RETURN_IF_ERROR(CheckBounds(q));
  RAMPART_ASSIGN_OR_RETURN(Zset z, Zset::Open(data, args[1]));
  RAMPART_ASSIGN_OR_RETURN(RankRange ranks, BoundRanks(z, q));
  return OpenedRange{std::move(z), ranks};
}

// ZREMRANGEBY* key min max; `event` is the command's notification.
void RemoveRange(Args args, DataView& data, resp::Writer& out, RangeBy by, std::string_view event) {
  auto range = OpenRange(args, data, by);
  if (ReplyIfError(range.status(), out)) return;
  Zset& z = range->z;
  const RankRange r = range->ranks;
  if (r.size() == 0) return out.Integer(0);
  const bool lex = by == RangeBy::kLex;
  auto items = lex ? z.LexOrderRange(r, false) : z.ScoreOrderRange(r, false);
  if (ReplyIfError(items.status(), out)) return;
  const Status erased = lex ? z.EraseLexOrderRange(r, *items) : z.EraseScoreOrderRange(r, *items);
  if (ReplyIfError(erased, out)) return;
  if (ReplyIfError(z.Save(), out)) return;
  data.Notify(notify::kZset, event, args[1]);
  if (z.size() == 0) data.Notify(notify::kGeneric, "del", args[1]);
  out.Integer(static_cast<int64_t>(items->size()));
}

// ZCOUNT / ZLEXCOUNT key min max
void CountRange(Args args, DataView& data, resp::Writer& out, RangeBy by) {
  auto range = OpenRange(args, data, by);
  if (ReplyIfError(range.status(), out)) return;
  out.Integer(static_cast<int64_t>(range->ranks.size()));
}

}  // namespace

void ZRange(Args args, DataView& data, resp::Writer& out) { RangeCommand(args, data, out, {}, {}); }
void ZRangeByScore(Args args, DataView& data, resp::Writer& out) {
  RangeCommand(args, data, out, RangeBy::kScore, false);
}
void ZRevRangeByScore(Args args, DataView& data, resp::Writer& out) {
  RangeCommand(args, data, out, RangeBy::kScore, true);
}
void ZRangeByLex(Args args, DataView& data, resp::Writer& out) {
  RangeCommand(args, data, out, RangeBy::kLex, false);
}
void ZRevRangeByLex(Args args, DataView& data, resp::Writer& out) {
  RangeCommand(args, data, out, RangeBy::kLex, true);
}
void ZRevRange(Args args, DataView& data, resp::Writer& out) {
  RangeCommand(args, data, out, RangeBy::kIndex, true);
}

// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
void ZRangeStore(Args args, DataView& data, resp::Writer& out) {
  auto q = ParseRange(args, 3, {}, {}, /*store=*/true);
  if (ReplyIfError(q.status(), out)) return;
  if (ReplyIfError(CheckBounds(*q), out)) return;
  auto src = Zset::Open(data, args[2]);
  if (ReplyIfError(src.status(), out)) return;
  if (!src->exists()) NotifyKeyMiss(data, args[2]);  // Redis reads the source as a read command does
  auto items = Select(*src, *q);
  if (ReplyIfError(items.status(), out)) return;
  const bool existed = HoldsValue(data, args[1]);
  const auto stored = static_cast<int64_t>(items->size());
  Zset dst = Zset::Create(data, args[1]);
  dst.Fill(std::move(*items));
  if (ReplyIfError(dst.Save(), out)) return;
  NotifyStored(data, notify::kZset, "zrangestore", args[1], stored > 0, existed);
  out.Integer(stored);
}

void ZCount(Args args, DataView& data, resp::Writer& out) { CountRange(args, data, out, RangeBy::kScore); }
void ZLexCount(Args args, DataView& data, resp::Writer& out) { CountRange(args, data, out, RangeBy::kLex); }
void ZRemRangeByScore(Args args, DataView& data, resp::Writer& out) {
  RemoveRange(args, data, out, RangeBy::kScore, "zremrangebyscore");
}
void ZRemRangeByRank(Args args, DataView& data, resp::Writer& out) {
  RemoveRange(args, data, out, RangeBy::kIndex, "zremrangebyrank");
}
void ZRemRangeByLex(Args args, DataView& data, resp::Writer& out) {
  RemoveRange(args, data, out, RangeBy::kLex, "zremrangebylex");
}

}  // namespace rampart::proxy::internal
