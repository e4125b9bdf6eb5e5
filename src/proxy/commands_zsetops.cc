// Sorted-set algebra: ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE and their reply
// forms ZUNION, ZINTER, ZDIFF, and ZINTERCARD. Inputs are sorted sets or
// sets (every member scored 1), a missing key an empty input; each input is
// read whole (Prefetch), as Redis walks each whole.
#include <cmath>
#include <map>

#include "proxy/commands_internal.h"
#include "proxy/notify.h"
#include "proxy/zset.h"

namespace rampart::proxy::internal {
namespace {

enum class Op { kUnion, kInter, kDiff };
enum class Aggregate { kSum, kMin, kMax };

struct AlgebraQuery {
  Op op = Op::kUnion;
  std::vector<std::string_view> keys;
  std::vector<double> weights;
  Aggregate aggregate = Aggregate::kSum;
  bool with_scores = false;
};

using ScoreMap = std::map<std::string, double, std::less<>>;

Result<int64_t> ParseNumKeys(Args args, size_t at) {
  auto n = ParseInt64(args[at]);
  if (!n.ok()) return n.status();
  if (*n < 1) {
    return InvalidArgument("ERR at least 1 input key is needed for '", CommandName(args), "' command");
  }
  if (static_cast<uint64_t>(*n) > args.size() - at - 1) return InvalidArgument("ERR syntax error");
  return *n;
}

// [dst] numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
Result<AlgebraQuery> ParseAlgebra(Args args, Op op, bool store) {
  AlgebraQuery q;
  q.op = op;
  const size_t at = store ? 2 : 1;
  RAMPART_ASSIGN_OR_RETURN(int64_t n, ParseNumKeys(args, at));
  for (int64_t k = 0; k < n; ++k) q.keys.push_back(args[at + 1 + static_cast<size_t>(k)]);
  q.weights.assign(q.keys.size(), 1.0);
  for (size_t i = at + 1 + q.keys.size(); i < args.size(); ++i) {
    const std::string_view a = args[i];
    const size_t left = args.size() - i - 1;
    if (op != Op::kDiff && EqualsNoCase(a, "weights") && left >= q.keys.size()) {
      for (double& w : q.weights) {
        auto v = ParseScore(args[++i]);
        if (!v.ok()) return InvalidArgument("ERR weight value is not a float");
        w = *v;
      }
    } else if (op != Op::kDiff && EqualsNoCase(a, "aggregate") && left >= 1) {
      const std::string_view how = args[++i];
      if (EqualsNoCase(how, "sum")) {
        q.aggregate = Aggregate::kSum;
      } else if (EqualsNoCase(how, "min")) {
        q.aggregate = Aggregate::kMin;
      } else if (EqualsNoCase(how, "max")) {
        q.aggregate = Aggregate::kMax;
      } else {
        return InvalidArgument("ERR syntax error");
      }
    } else if (!store && EqualsNoCase(a, "withscores")) {
      q.with_scores = true;
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  return q;
}

// A sorted set's or a set's members with their scores (a set's are 1).
Result<ScoreMap> LoadScored(DataView& data, std::string_view key) {
  RAMPART_ASSIGN_OR_RETURN(auto found, data.FindStored(key));  // a string is refused unread
  ScoreMap out;
  if (!found.has_value()) return out;
  if (RedisTypeOf(found->type) == ValueType::kPagedSet) {
    RAMPART_ASSIGN_OR_RETURN(Collection set, Collection::Open(data, key, ValueType::kPagedSet));
    RAMPART_RETURN_IF_ERROR(set.tree().Prefetch(0, set.size()));
    RAMPART_RETURN_IF_ERROR(set.tree().ForEach(0, false, [&](uint64_t, const TreeEntryRef& e) {
      out.emplace_hint(out.end(), e.key, 1.0);
      return true;
    }));
    return out;
  }
  RAMPART_ASSIGN_OR_RETURN(Zset z, Zset::Open(data, key));
  RAMPART_ASSIGN_OR_RETURN(Zset::Scored all, z.LexOrderRange(RankRange{0, z.size()}, false));
  for (auto& [member, score] : all) out.emplace_hint(out.end(), std::move(member), score);
  return out;
}

// Redis's zunionInterAggregate: a NaN sum (inf + -inf) counts as 0.
double Combine(Aggregate how, double a, double b) {
  switch (how) {
    case Aggregate::kSum: {
      const double sum = a + b;
      return std::isnan(sum) ? 0.0 : sum;
    }
    case Aggregate::kMin: return std::min(a, b);
    case Aggregate::kMax: return std::max(a, b);
  }
  return a;
}

double Weighted(double score, double weight) {
  const double v = score * weight;
  return std::isnan(v) ? 0.0 : v;  // inf * 0
}

Result<ScoreMap> Compute(DataView& data, const AlgebraQuery& q) {
  std::vector<ScoreMap> inputs;
  for (std::string_view key : q.keys) {
    RAMPART_ASSIGN_OR_RETURN(ScoreMap m, LoadScored(data, key));
    inputs.push_back(std::move(m));
  }
  ScoreMap result;
  for (const auto& [member, score] : inputs[0]) result.emplace(member, Weighted(score, q.weights[0]));
  for (size_t i = 1; i < inputs.size(); ++i) {
    const ScoreMap& in = inputs[i];
    if (q.op == Op::kUnion) {
      for (const auto& [member, score] : in) {
        const double w = Weighted(score, q.weights[i]);
        auto [it, fresh] = result.emplace(member, w);
        if (!fresh) it->second = Combine(q.aggregate, it->second, w);
      }
      continue;
    }
    for (auto it = result.begin(); it != result.end();) {
      auto found = in.find(it->first);
      const bool keep = (q.op == Op::kInter) == (found != in.end());
      if (!keep) {
        it = result.erase(it);
        continue;
      }
      if (q.op == Op::kInter) it->second = Combine(q.aggregate, it->second, Weighted(found->second, q.weights[i]));
      ++it;
    }
  }
  return result;
}

// `event`: the command's notification when it stores members.
void AlgebraStore(Args args, DataView& data, resp::Writer& out, Op op, std::string_view event) {
  auto q = ParseAlgebra(args, op, /*store=*/true);
  if (ReplyIfError(q.status(), out)) return;
  auto result = Compute(data, *q);
  if (ReplyIfError(result.status(), out)) return;
  for (std::string_view key : q->keys) {  // Redis reads the sources as a read command does
    if (!HoldsValue(data, key)) NotifyKeyMiss(data, key);
  }
  const bool existed = HoldsValue(data, args[1]);
  const auto stored = static_cast<int64_t>(result->size());
  Zset dst = Zset::Create(data, args[1]);
  dst.Fill(Zset::Scored(result->begin(), result->end()));
  if (ReplyIfError(dst.Save(), out)) return;
  NotifyStored(data, notify::kZset, event, args[1], stored > 0, existed);
  out.Integer(stored);
}

void AlgebraReply(Args args, DataView& data, resp::Writer& out, Op op) {
  auto q = ParseAlgebra(args, op, /*store=*/false);
  if (ReplyIfError(q.status(), out)) return;
  auto result = Compute(data, *q);
  if (ReplyIfError(result.status(), out)) return;
  Zset::Scored items(result->begin(), result->end());
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  ReplyScored(out, items, q->with_scores);
}

}  // namespace

std::vector<std::string_view> NumKeysKeys(Args args, size_t at) {
  std::vector<std::string_view> keys;
  if (args.size() <= at) return keys;
  auto n = ParseInt64(args[at]);
  if (!n.ok() || *n < 1) return keys;
  for (size_t i = at + 1; i < args.size() && i <= at + static_cast<size_t>(*n); ++i) keys.push_back(args[i]);
  return keys;
}

std::vector<std::string_view> StoreAlgebraKeys(Args args) {
  std::vector<std::string_view> keys = NumKeysKeys(args, 2);
  if (args.size() > 1) keys.insert(keys.begin(), args[1]);  // the destination
  return keys;
}
std::vector<std::string_view> ReplyAlgebraKeys(Args args) { return NumKeysKeys(args, 1); }

void ZUnionStore(Args args, DataView& data, resp::Writer& out) {
  AlgebraStore(args, data, out, Op::kUnion, "zunionstore");
}
void ZInterStore(Args args, DataView& data, resp::Writer& out) {
  AlgebraStore(args, data, out, Op::kInter, "zinterstore");
}
void ZDiffStore(Args args, DataView& data, resp::Writer& out) {
  AlgebraStore(args, data, out, Op::kDiff, "zdiffstore");
}
void ZUnion(Args args, DataView& data, resp::Writer& out) { AlgebraReply(args, data, out, Op::kUnion); }
void ZInter(Args args, DataView& data, resp::Writer& out) { AlgebraReply(args, data, out, Op::kInter); }
void ZDiff(Args args, DataView& data, resp::Writer& out) { AlgebraReply(args, data, out, Op::kDiff); }

// ZINTERCARD numkeys key... [LIMIT limit]
void ZInterCard(Args args, DataView& data, resp::Writer& out) {
  auto n = ParseNumKeys(args, 1);  // zunionInterDiffGenericCommand's errors
  if (ReplyIfError(n.status(), out)) return;
  int64_t limit = 0;
  for (size_t i = 2 + static_cast<size_t>(*n); i < args.size(); ++i) {
    if (EqualsNoCase(args[i], "limit") && i + 1 < args.size()) {
      auto l = ParseInt64(args[++i]);
      if (!l.ok()) return out.Error("ERR LIMIT can't be negative");
      if (*l < 0) return out.Error("ERR LIMIT can't be negative");
      limit = *l;
    } else {
      return out.Error("ERR syntax error");
    }
  }
  AlgebraQuery q;
  q.op = Op::kInter;
  for (int64_t k = 0; k < *n; ++k) q.keys.push_back(args[2 + static_cast<size_t>(k)]);
  q.weights.assign(q.keys.size(), 1.0);
  auto result = Compute(data, q);
  if (ReplyIfError(result.status(), out)) return;
  const auto size = static_cast<int64_t>(result->size());
  out.Integer(limit > 0 ? std::min(limit, size) : size);
}

}  // namespace rampart::proxy::internal
