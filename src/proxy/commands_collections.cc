// Hash and sorted-set commands over a DataView (see commands.h). A hash or
// sorted set is one stored value, rewritten whole by every change
// (docs/proxy.md: fine for the sizes YCSB uses, not for huge collections).
#include <cctype>

#include "proxy/commands_internal.h"

namespace rampart::proxy::internal {
namespace {

// A collection stored at a key (empty when absent) and its expiry; errors as
// Redis text. Decode is DecodeHash or SortedSet::Decode.
template <typename T>
struct Loaded {
  T value;
  uint64_t expire_at_ms = 0;
};
template <typename T, typename Decode>
Result<Loaded<T>> LoadCollection(DataView& data, std::string_view key, ValueType type,
                                 Decode decode, std::string_view what) {
  RAMPART_ASSIGN_OR_RETURN(auto v, data.FindTyped(key, type));
  Loaded<T> loaded;
  if (!v.has_value()) return loaded;
  auto decoded = decode(v->payload);
  if (!decoded.ok()) {
    return Corruption("ERR ", what, " \"", key, "\" is damaged: ", decoded.status().message());
  }
  loaded.value = std::move(*decoded);
  loaded.expire_at_ms = v->expire_at_ms;
  return loaded;
}

Result<Loaded<HashFields>> LoadHash(DataView& data, std::string_view key) {
  return LoadCollection<HashFields>(data, key, ValueType::kHash, DecodeHash, "hash");
}
Result<Loaded<SortedSet>> LoadZset(DataView& data, std::string_view key) {
  return LoadCollection<SortedSet>(data, key, ValueType::kZset, SortedSet::Decode, "sorted set");
}

}  // namespace

void HSet(Args args, DataView& data, resp::Writer& out) {
  if ((args.size() - 2) % 2 != 0) {
    out.Error(StrCat("ERR wrong number of arguments for '", EqualsNoCase(args[0], "hmset") ? "hmset" : "hset",
                     "' command"));
    return;
  }
  auto h = LoadHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  int64_t added = 0;
  for (size_t n = 2; n + 1 < args.size(); n += 2) {
    auto [it, fresh] = h->value.insert_or_assign(std::string(args[n]), std::string(args[n + 1]));
    added += fresh;
  }
  data.Put(args[1], EncodeHash(h->value, h->expire_at_ms));
  if (EqualsNoCase(args[0], "hmset")) {
    out.Simple("OK");
  } else {
    out.Integer(added);
  }
}

void HGet(Args args, DataView& data, resp::Writer& out) {
  auto h = LoadHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  auto it = h->value.find(args[2]);
  if (it == h->value.end()) return out.Null();
  out.Bulk(it->second);
}

void HMGet(Args args, DataView& data, resp::Writer& out) {
  auto h = LoadHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  out.Array(args.size() - 2);
  for (size_t n = 2; n < args.size(); ++n) {
    auto it = h->value.find(args[n]);
    if (it == h->value.end()) {
      out.Null();
    } else {
      out.Bulk(it->second);
    }
  }
}

void HGetAll(Args args, DataView& data, resp::Writer& out) {
  auto h = LoadHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  out.Map(h->value.size());
  for (const auto& [field, value] : h->value) {
    out.Bulk(field);
    out.Bulk(value);
  }
}

void HDel(Args args, DataView& data, resp::Writer& out) {
  auto h = LoadHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  int64_t removed = 0;
  for (size_t n = 2; n < args.size(); ++n) {
    auto it = h->value.find(args[n]);
    if (it == h->value.end()) continue;
    h->value.erase(it);
    ++removed;
  }
  if (removed > 0) {
    if (h->value.empty()) {
      data.Delete(args[1]);  // Redis removes an empty hash
    } else {
      data.Put(args[1], EncodeHash(h->value, h->expire_at_ms));
    }
  }
  out.Integer(removed);
}

void HLen(Args args, DataView& data, resp::Writer& out) {
  auto h = LoadHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  out.Integer(static_cast<int64_t>(h->value.size()));
}

void HExists(Args args, DataView& data, resp::Writer& out) {
  auto h = LoadHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  out.Integer(h->value.count(args[2]) > 0 ? 1 : 0);
}

void ZAdd(Args args, DataView& data, resp::Writer& out) {
  bool nx = false, xx = false, ch = false;
  size_t n = 2;
  for (; n < args.size(); ++n) {
    if (EqualsNoCase(args[n], "nx")) {
      nx = true;
    } else if (EqualsNoCase(args[n], "xx")) {
      xx = true;
    } else if (EqualsNoCase(args[n], "ch")) {
      ch = true;
    } else {
      break;
    }
  }
  if (nx && xx) return out.Error("ERR XX and NX options at the same time are not compatible");
  if (n >= args.size() || (args.size() - n) % 2 != 0) return out.Error("ERR syntax error");
  std::vector<double> scores;
  for (size_t s = n; s < args.size(); s += 2) {
    auto score = ParseScore(args[s]);
    if (ReplyIfError(score.status(), out)) return;
    scores.push_back(*score);
  }
  auto z = LoadZset(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  int64_t added = 0, changed = 0;
  for (size_t s = n, k = 0; s < args.size(); s += 2, ++k) {
    const std::string_view member = args[s + 1];
    const std::optional<double> old = z->value.Score(member);
    if ((nx && old.has_value()) || (xx && !old.has_value())) continue;
    z->value.Add(member, scores[k]);
    added += !old.has_value();
    changed += !old.has_value() || *old != scores[k];
  }
  if (changed > 0) data.Put(args[1], z->value.Encode(z->expire_at_ms));
  out.Integer(ch ? changed : added);
}

void ZRem(Args args, DataView& data, resp::Writer& out) {
  auto z = LoadZset(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  int64_t removed = 0;
  for (size_t n = 2; n < args.size(); ++n) removed += z->value.Remove(args[n]);
  if (removed > 0) {
    if (z->value.size() == 0) {
      data.Delete(args[1]);
    } else {
      data.Put(args[1], z->value.Encode(z->expire_at_ms));
    }
  }
  out.Integer(removed);
}

void ZScore(Args args, DataView& data, resp::Writer& out) {
  auto z = LoadZset(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  const std::optional<double> score = z->value.Score(args[2]);
  if (!score.has_value()) return out.Null();
  if (out.protocol() >= 3) return out.Double(*score);
  out.Bulk(FormatScore(*score));
}

void ZCard(Args args, DataView& data, resp::Writer& out) {
  auto z = LoadZset(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  out.Integer(static_cast<int64_t>(z->value.size()));
}

void ZRangeByScore(Args args, DataView& data, resp::Writer& out) {
  auto min = ParseScoreBound(args[2]);
  if (ReplyIfError(min.status(), out)) return;
  auto max = ParseScoreBound(args[3]);
  if (ReplyIfError(max.status(), out)) return;
  bool with_scores = false;
  int64_t offset = 0, count = -1;
  for (size_t n = 4; n < args.size(); ++n) {
    if (EqualsNoCase(args[n], "withscores")) {
      with_scores = true;
    } else if (EqualsNoCase(args[n], "limit") && n + 2 < args.size()) {
      auto o = ParseInt64(args[n + 1]);
      if (ReplyIfError(o.status(), out)) return;
      auto c = ParseInt64(args[n + 2]);
      if (ReplyIfError(c.status(), out)) return;
      offset = *o;
      count = *c;
      n += 2;
    } else {
      return out.Error("ERR syntax error");
    }
  }
  auto z = LoadZset(data, args[1]);
  if (ReplyIfError(z.status(), out)) return;
  const auto range = z->value.RangeByScore(*min, *max, offset, count);
  if (with_scores && out.protocol() >= 3) {
    out.Array(range.size());
    for (const auto& [member, score] : range) {
      out.Array(2);
      out.Bulk(member);
      out.Double(score);
    }
    return;
  }
  out.Array(range.size() * (with_scores ? 2 : 1));
  for (const auto& [member, score] : range) {
    out.Bulk(member);
    if (with_scores) out.Bulk(FormatScore(score));
  }
}

}  // namespace rampart::proxy::internal
