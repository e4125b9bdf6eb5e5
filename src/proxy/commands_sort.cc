// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
// [ALPHA] [STORE destination], and SORT_RO (no STORE), with Redis 7.0's
// semantics (its sort.c): the elements of a list, set or sorted set, sorted
// as numbers or (ALPHA) as strings, by themselves or by the values of the
// keys (or hash fields, "key_*->field") a pattern names for each element;
// LIMIT applied after the sort; the elements or, with GET, the values the GET
// patterns name ("#": the element) replied or stored as a list.
//
// The keys the patterns name are not declared (no one knows them before the
// elements are read): they are read as DataView::Raw asks for them, every
// one a run needs in the same read round, and the command runs again on the
// view that holds them (a hash named by "->" takes another round for its
// pages). They are read in the same snapshot as the source, but not locked:
// SORT ... STORE computes from that snapshot and writes under the locks of
// its source and destination only (docs/proxy.md).
//
// Known difference: ALPHA compares bytes where Redis uses strcoll() (the
// same in the C locale that Debian's redis-server runs in).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "proxy/collection.h"
#include "proxy/commands_internal.h"
#include "proxy/internal_keys.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {

// Where Redis looks for '*' and "->": up to the first NUL (strchr, strstr).
std::string_view Searchable(std::string_view pattern) { return pattern.substr(0, pattern.find('\0')); }
bool HasStar(std::string_view pattern) { return Searchable(pattern).find('*') != std::string_view::npos; }

struct SortOptions {
  bool desc = false;
  bool alpha = false;
  int64_t limit_start = 0;
  int64_t limit_count = -1;
  std::optional<std::string_view> by;
  bool dont_sort = false;  // BY without '*': no weights, no sort
  std::vector<std::string_view> gets;
  std::optional<std::string_view> store;
};

// The options after the key, in Redis's order of checks.
Result<SortOptions> ParseSortOptions(Args args, bool read_only) {
  SortOptions o;
  for (size_t j = 2; j < args.size(); ++j) {
    const size_t left = args.size() - j - 1;
    const std::string_view a = args[j];
    if (EqualsNoCase(a, "asc")) {
      o.desc = false;
    } else if (EqualsNoCase(a, "desc")) {
      o.desc = true;
    } else if (EqualsNoCase(a, "alpha")) {
      o.alpha = true;
    } else if (EqualsNoCase(a, "limit") && left >= 2) {
      RAMPART_ASSIGN_OR_RETURN(o.limit_start, ParseInt64(args[j + 1]));
      RAMPART_ASSIGN_OR_RETURN(o.limit_count, ParseInt64(args[j + 2]));
      j += 2;
    } else if (!read_only && EqualsNoCase(a, "store") && left >= 1) {
      o.store = args[++j];
    } else if (EqualsNoCase(a, "by") && left >= 1) {
      o.by = args[++j];
      // Once constant, always (Redis sets dontsort and never clears it).
      o.dont_sort = o.dont_sort || !HasStar(*o.by);
    } else if (EqualsNoCase(a, "get") && left >= 1) {
      o.gets.push_back(args[++j]);
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  return o;
}

// What Redis's lookupKeyByPattern finds for `element`: "#" is the element;
// else the first '*' of the pattern replaced by the element names a string
// key, or with "->field" after the '*' a hash's field. nullopt: no '*', no
// such key, another type, or no such field. kUnavailable (recorded in
// data.missing()) while the key or the hash's pages are not read yet. A key
// looked up and missing is a keymiss.
Result<std::optional<std::string>> LookupByPattern(DataView& data, std::string_view pattern,
                                                   std::string_view element) {
  using Found = std::optional<std::string>;
  if (pattern == "#") return Found(std::string(element));
  const std::string_view searchable = Searchable(pattern);
  const size_t star = searchable.find('*');
  if (star == std::string_view::npos) return Found();
  size_t key_end = pattern.size();
  std::string_view field;
  if (size_t arrow = searchable.find("->", star + 1);
      arrow != std::string_view::npos && arrow + 2 < searchable.size()) {
    field = pattern.substr(arrow + 2);
    key_end = arrow;
  }
  std::string key(pattern.substr(0, star));
  key.append(element).append(pattern.substr(star + 1, key_end - star - 1));
  // A key the proxy would refuse (too long, or a collection page's) holds
  // nothing a user wrote.
  if (key.empty() || key.size() > data.max_key_bytes() || key.starts_with(kInternalPrefix)) {
    NotifyKeyMiss(data, key);
    return Found();
  }
  RAMPART_ASSIGN_OR_RETURN(auto raw, data.Raw(key));
  std::optional<StoredValue> value;
  if (raw.has_value()) {
    RAMPART_ASSIGN_OR_RETURN(value, data.Find(key));
  }
  if (!value.has_value()) {  // absent or expired
    NotifyKeyMiss(data, key);
    return Found();
  }
  if (field.empty()) {
    if (value->type != ValueType::kString) return Found();
    return Found(std::string(value->payload));
  }
  if (RedisTypeOf(value->type) != ValueType::kPagedHash) return Found();
  RAMPART_ASSIGN_OR_RETURN(Collection hash, Collection::Open(data, key, ValueType::kPagedHash));
  return hash.tree().Get(field);
}

// The elements of the list, set or sorted set at `key` in its own order
// (a set's by bytes, a sorted set's by score), and its Redis type; none
// (type kString) when there is no key.
struct Source {
  ValueType type = ValueType::kString;
  std::vector<std::string> elements;
};
Result<Source> ReadSource(DataView& data, std::string_view key) {
  Source source;
  RAMPART_ASSIGN_OR_RETURN(auto found, data.FindStored(key));  // a string is refused unread
  if (!found.has_value()) return source;
  const ValueType type = RedisTypeOf(found->type);
  if (type != ValueType::kList && type != ValueType::kPagedSet && type != ValueType::kPagedZset) {
    return InvalidArgument(kWrongType);
  }
  source.type = type;
  RAMPART_ASSIGN_OR_RETURN(Collection c, Collection::Open(data, key, type));
  PageTree& order = c.tree(type == ValueType::kPagedZset ? kByScore : 0);
  RAMPART_RETURN_IF_ERROR(order.Prefetch(0, order.size()));
  source.elements.reserve(order.size());
  RAMPART_RETURN_IF_ERROR(order.ForEach(0, false, [&](uint64_t, const TreeEntryRef& e) {
    if (type == ValueType::kList) {
      source.elements.emplace_back(e.value);
    } else if (type == ValueType::kPagedSet) {
      source.elements.emplace_back(e.key);
    } else {
      source.elements.emplace_back(MemberOfKey(e.key));
    }
    return true;
  }));
  return source;
}

// A weight as Redis's SORT reads it: strtod over the whole C string, not
// NaN, no ERANGE; else nullopt ("One or more scores can't be converted").
std::optional<double> SortScore(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || std::isnan(v)) return std::nullopt;
  return v;
}

struct Item {
  std::string element;
  double score = 0;
  std::optional<std::string> by;  // ALPHA BY: the value compared (nullopt: none, first)
};

// Sorts `items` as Redis's sortCompare orders them.
void SortItems(std::vector<Item>& items, const SortOptions& o) {
  auto compare = [&](const Item& a, const Item& b) {
    int cmp = 0;
    if (!o.alpha) {
      cmp = a.score < b.score ? -1 : a.score > b.score ? 1 : a.element.compare(b.element);
    } else if (o.by.has_value()) {
      if (!a.by.has_value() || !b.by.has_value()) {
        cmp = a.by.has_value() == b.by.has_value() ? 0 : a.by.has_value() ? 1 : -1;
      } else {
        cmp = a.by->compare(*b.by);
      }
    } else {
      cmp = a.element.compare(b.element);
    }
    return o.desc ? cmp > 0 : cmp < 0;
  };
  std::stable_sort(items.begin(), items.end(), compare);
}

// The items in output order, already cut to LIMIT's [start, end] by Redis's
// rules. kUnavailable while BY's keys are not all read (all of them, and the
// GETs' keys, asked for in this run).
Result<std::vector<Item>> SortedItems(DataView& data, std::string_view key, SortOptions& o) {
  RAMPART_ASSIGN_OR_RETURN(Source source, ReadSource(data, key));
  std::vector<std::string>& elements = source.elements;
  const bool is_set = source.type == ValueType::kPagedSet;
  if (o.dont_sort && is_set && o.store.has_value()) {  // a stored result must not depend on hash order
    o.dont_sort = false;
    o.alpha = true;
    o.by.reset();
  }
  const auto n = static_cast<int64_t>(elements.size());
  int64_t start = std::min(std::max<int64_t>(o.limit_start, 0), n);
  const int64_t count = std::min(std::max<int64_t>(o.limit_count, -1), n);
  int64_t end = count < 0 ? n - 1 : start + count - 1;
  if (start >= n) {
    start = n - 1;
    end = n - 2;
  }
  end = std::min(end, n - 1);
  std::vector<Item> items;
  items.reserve(elements.size());
  for (std::string& e : elements) items.push_back({std::move(e)});
  if (o.dont_sort) {
    if (o.desc && !is_set) std::reverse(items.begin(), items.end());
  } else {
    bool missing = false, not_number = false;
    for (Item& item : items) {
      std::optional<std::string> by;
      if (o.by.has_value()) {
        auto looked_up = LookupByPattern(data, *o.by, item.element);
        if (!looked_up.ok() && looked_up.status().code() == StatusCode::kUnavailable) {
          missing = true;
          continue;
        }
        RAMPART_RETURN_IF_ERROR(looked_up.status());
        if (!looked_up->has_value()) continue;  // score 0, or first for ALPHA
        by = std::move(*looked_up);
      }
      if (o.alpha) {
        item.by = std::move(by);
      } else if (auto score = SortScore(o.by.has_value() ? *by : item.element); score.has_value()) {
        item.score = *score;
      } else {
        not_number = true;
      }
    }
    if (missing) {
      for (const Item& item : items) {  // the GETs' keys in the same round
        for (std::string_view get : o.gets) (void)LookupByPattern(data, get, item.element);
      }
      return Unavailable("ERR rampart: SORT's BY keys not read yet");
    }
    if (not_number) return InvalidArgument("ERR One or more scores can't be converted into double");
    SortItems(items, o);
  }
  if (end < start) return std::vector<Item>();
  return std::vector<Item>(std::make_move_iterator(items.begin() + start),
                           std::make_move_iterator(items.begin() + end + 1));
}

// The output: per item, the element or each GET's value (nullopt: none).
// kUnavailable while a GET's key is not read yet (all asked for in this run).
Result<std::vector<std::optional<std::string>>> Output(DataView& data, std::vector<Item>& items,
                                                       const SortOptions& o) {
  std::vector<std::optional<std::string>> out;
  if (o.gets.empty()) {
    for (Item& item : items) out.emplace_back(std::move(item.element));
    return out;
  }
  Status first = Status::Ok();
  for (const Item& item : items) {
    for (std::string_view get : o.gets) {
      auto value = LookupByPattern(data, get, item.element);
      if (!value.ok()) {
        if (first.ok()) first = value.status();
        continue;
      }
      out.push_back(std::move(*value));
    }
  }
  RAMPART_RETURN_IF_ERROR(first);
  return out;
}

// SORT ... STORE sends "sortstore" (class l) on the destination, or "del"
// when nothing was stored and the destination held a value.
void SortCommand(Args args, DataView& data, resp::Writer& out, bool read_only) {
  auto options = ParseSortOptions(args, read_only);
  if (ReplyIfError(options.status(), out)) return;
  if (!read_only) {  // the worker notes SORT_RO's, a read command's, keymiss
    auto source = data.FindStored(args[1]);
    if (source.ok() && !source->has_value()) NotifyKeyMiss(data, args[1]);
  }
  auto items = SortedItems(data, args[1], *options);
  if (ReplyIfError(items.status(), out)) return;
  auto values = Output(data, *items, *options);
  if (ReplyIfError(values.status(), out)) return;
  if (!options->store.has_value()) {
    out.Array(values->size());
    for (const auto& v : *values) {
      if (v.has_value()) {
        out.Bulk(*v);
      } else {
        out.Null();
      }
    }
    return;
  }
  // Replaces whatever the destination holds (its expiry too); nothing stored
  // deletes it.
  const bool existed = HoldsValue(data, *options->store);
  Collection list = Collection::Create(data, *options->store, ValueType::kList);
  std::vector<TreeEntry> entries;
  entries.reserve(values->size());
  for (auto& v : *values) entries.push_back({"", v.has_value() ? std::move(*v) : ""});
  list.Rebuild(0, std::move(entries));
  if (ReplyIfError(list.Save(), out)) return;
  NotifyStored(data, notify::kList, "sortstore", *options->store, list.size() > 0, existed);
  out.Integer(static_cast<int64_t>(list.size()));
}

}  // namespace

void Sort(Args args, DataView& data, resp::Writer& out) { SortCommand(args, data, out, false); }
void SortRo(Args args, DataView& data, resp::Writer& out) { SortCommand(args, data, out, true); }

std::vector<std::string_view> SortKeys(Args args) {
  std::vector<std::string_view> keys = {args[1]};
  std::optional<std::string_view> store;
  for (size_t j = 2; j < args.size(); ++j) {
    if (EqualsNoCase(args[j], "limit")) {
      j += 2;
    } else if (EqualsNoCase(args[j], "get") || EqualsNoCase(args[j], "by")) {
      j += 1;
    } else if (EqualsNoCase(args[j], "store") && j + 1 < args.size()) {
      store = args[++j];
    }
  }
  if (store.has_value()) keys.push_back(*store);
  return keys;
}

}  // namespace rampart::proxy::internal
