// Hash commands over a paged Collection (collection.h): one tree by field,
// the field's value as the entry's value. A command about some fields reads
// the pages on their paths (PrefetchKeys), one about all of them the whole
// tree (Prefetch); a change rewrites the pages it touched and the header.
#include <cmath>
#include <limits>

#include "proxy/collection.h"
#include "proxy/commands_internal.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {

Result<Collection> OpenHash(DataView& data, std::string_view key) {
  return Collection::Open(data, key, ValueType::kPagedHash);
}

// args[from], args[from + step], ...
std::vector<std::string_view> EveryNth(Args args, size_t from, size_t step) {
  std::vector<std::string_view> out;
  for (size_t n = from; n < args.size(); n += step) out.push_back(args[n]);
  return out;
}

// Replies the fields, the values, or both (a map) of the whole hash.
void ReplyAll(Args args, DataView& data, resp::Writer& out, bool fields, bool values) {
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  PageTree& tree = h->tree();
  if (ReplyIfError(tree.Prefetch(0, tree.size()), out)) return;
  std::string reply;
  resp::Writer all(&reply);
  all.SetProtocol(out.protocol());
  if (fields && values) {
    all.Map(tree.size());
  } else {
    all.Array(tree.size());
  }
  const Status s = tree.ForEach(0, false, [&](uint64_t, const TreeEntryRef& e) {
    if (fields) all.Bulk(e.key);
    if (values) all.Bulk(e.value);
    return true;
  });
  if (ReplyIfError(s, out)) return;
  out.out()->append(reply);
}

}  // namespace

void HSet(Args args, DataView& data, resp::Writer& out) {
  const bool hmset = EqualsNoCase(args[0], "hmset");
  if ((args.size() - 2) % 2 != 0) {
    out.Error(StrCat("ERR wrong number of arguments for '", hmset ? "hmset" : "hset", "' command"));
    return;
  }
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  if (ReplyIfError(h->tree().PrefetchKeys(EveryNth(args, 2, 2)), out)) return;
  int64_t added = 0;
  for (size_t n = 2; n + 1 < args.size(); n += 2) {
    auto fresh = h->tree().Put(args[n], args[n + 1]);
    if (ReplyIfError(fresh.status(), out)) return;
    added += *fresh;
  }
  if (ReplyIfError(h->Save(), out)) return;
  data.Notify(notify::kHash, "hset", args[1]);  // HMSET's too, and when nothing changed
  if (hmset) {
    out.Simple("OK");
  } else {
    out.Integer(added);
  }
}

void HSetNx(Args args, DataView& data, resp::Writer& out) {
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  auto v = h->tree().Get(args[2]);
  if (ReplyIfError(v.status(), out)) return;
  if (v->has_value()) return out.Integer(0);
  if (ReplyIfError(h->tree().Put(args[2], args[3]).status(), out)) return;
  if (ReplyIfError(h->Save(), out)) return;
  data.Notify(notify::kHash, "hset", args[1]);
  out.Integer(1);
}

void HGet(Args args, DataView& data, resp::Writer& out) {
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  auto v = h->tree().Get(args[2]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Null();
  out.Bulk(**v);
}

void HMGet(Args args, DataView& data, resp::Writer& out) {
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  if (ReplyIfError(h->tree().PrefetchKeys(EveryNth(args, 2, 1)), out)) return;
  std::vector<std::optional<std::string>> values;
  for (size_t n = 2; n < args.size(); ++n) {
    auto v = h->tree().Get(args[n]);
    if (ReplyIfError(v.status(), out)) return;
    values.push_back(std::move(*v));
  }
  out.Array(values.size());
  for (const auto& v : values) {
    if (v.has_value()) {
      out.Bulk(*v);
    } else {
      out.Null();
    }
  }
}

void HGetAll(Args args, DataView& data, resp::Writer& out) { ReplyAll(args, data, out, true, true); }
void HKeys(Args args, DataView& data, resp::Writer& out) { ReplyAll(args, data, out, true, false); }
void HVals(Args args, DataView& data, resp::Writer& out) { ReplyAll(args, data, out, false, true); }

void HDel(Args args, DataView& data, resp::Writer& out) {
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  if (ReplyIfError(h->tree().PrefetchKeys(EveryNth(args, 2, 1)), out)) return;
  int64_t removed = 0;
  for (size_t n = 2; n < args.size(); ++n) {
    auto erased = h->tree().Erase(args[n]);
    if (ReplyIfError(erased.status(), out)) return;
    removed += *erased;
  }
  if (removed > 0) {
    if (ReplyIfError(h->Save(), out)) return;
    data.Notify(notify::kHash, "hdel", args[1]);
    if (h->size() == 0) data.Notify(notify::kGeneric, "del", args[1]);
  }
  out.Integer(removed);
}

void HLen(Args args, DataView& data, resp::Writer& out) {
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  out.Integer(static_cast<int64_t>(h->size()));
}

void HExists(Args args, DataView& data, resp::Writer& out) {
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  auto v = h->tree().Get(args[2]);
  if (ReplyIfError(v.status(), out)) return;
  out.Integer(v->has_value() ? 1 : 0);
}

void HStrLen(Args args, DataView& data, resp::Writer& out) {
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  auto v = h->tree().Get(args[2]);
  if (ReplyIfError(v.status(), out)) return;
  out.Integer(v->has_value() ? static_cast<int64_t>((*v)->size()) : 0);
}

void HIncrBy(Args args, DataView& data, resp::Writer& out) {
  auto by = ParseInt64(args[3]);
  if (ReplyIfError(by.status(), out)) return;
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  auto v = h->tree().Get(args[2]);
  if (ReplyIfError(v.status(), out)) return;
  int64_t current = 0;
  if (v->has_value()) {
    auto parsed = ParseInt64(**v);
    if (!parsed.ok()) return out.Error("ERR hash value is not an integer");
    current = *parsed;
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(current, *by, &sum)) {
    return out.Error("ERR increment or decrement would overflow");
  }
  if (ReplyIfError(h->tree().Put(args[2], std::to_string(sum)).status(), out)) return;
  if (ReplyIfError(h->Save(), out)) return;
  data.Notify(notify::kHash, "hincrby", args[1]);
  out.Integer(sum);
}

void HIncrByFloat(Args args, DataView& data, resp::Writer& out) {
  auto by = ParseLongDouble(args[3]);
  if (!by.ok()) return out.Error("ERR value is not a valid float");
  if (std::isnan(*by) || std::isinf(*by)) return out.Error("ERR value is NaN or Infinity");
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  auto v = h->tree().Get(args[2]);
  if (ReplyIfError(v.status(), out)) return;
  long double current = 0;
  if (v->has_value()) {
    auto parsed = ParseLongDouble(**v);
    if (!parsed.ok()) return out.Error("ERR hash value is not a float");
    current = *parsed;
  }
  const long double sum = current + *by;
  if (std::isnan(sum) || std::isinf(sum)) return out.Error("ERR increment would produce NaN or Infinity");
  const std::string text = FormatLongDouble(sum);
  if (ReplyIfError(h->tree().Put(args[2], text).status(), out)) return;
  if (ReplyIfError(h->Save(), out)) return;
  data.Notify(notify::kHash, "hincrbyfloat", args[1]);
  out.Bulk(text);
}

// HRANDFIELD key [count [WITHVALUES]]
void HRandField(Args args, DataView& data, resp::Writer& out) {
  int64_t count = 1;
  const bool with_count = args.size() >= 3;
  const bool with_values = args.size() == 4 && EqualsNoCase(args[3], "withvalues");
  if (with_count) {
    auto c = ParseRandomCount(args[2]);
    if (ReplyIfError(c.status(), out)) return;
    count = *c;
    if (args.size() > 4 || (args.size() == 4 && !with_values)) return out.Error("ERR syntax error");
  }
  auto h = OpenHash(data, args[1]);
  if (ReplyIfError(h.status(), out)) return;
  if (!with_count && h->size() == 0) return out.Null();
  const std::vector<uint64_t> ranks = RandomRanks(data, h->size(), count);
  PageTree& tree = h->tree();
  if (ReplyIfError(tree.PrefetchRanks(ranks), out)) return;
  std::vector<TreeEntry> picked;
  for (uint64_t r : ranks) {
    auto e = tree.At(r);
    if (ReplyIfError(e.status(), out)) return;
    picked.push_back(std::move(*e));
  }
  if (!with_count) return out.Bulk(picked[0].key);
  const bool pairs = with_values && out.protocol() == 3;
  out.Array(with_values && !pairs ? picked.size() * 2 : picked.size());
  for (const TreeEntry& e : picked) {
    if (pairs) out.Array(2);
    out.Bulk(e.key);
    if (with_values) out.Bulk(e.value);
  }
}

void HScan(Args args, DataView& data, resp::Writer& out) {
  ScanCollection(
      args, out, [&] { return OpenHash(data, args[1]); }, [](Collection& h) -> PageTree& { return h.tree(); }, 2,
      [](const TreeEntry& e, resp::Writer& w) {
        w.Bulk(e.key);
        w.Bulk(e.value);
      });
}

}  // namespace rampart::proxy::internal
