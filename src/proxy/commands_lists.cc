// List commands over a DataView (see commands.h). Each follows its Redis 7.0
// counterpart (t_list.c): the same checks in the same order, so the same
// error wins when several apply, and the same replies and error texts. The
// blocking pops (BLPOP, BRPOP, BLMOVE) are built on PopElements and
// MoveElement (commands_internal.h).
//
// A list is a Collection of type kList (collection.h): one tree addressed by
// rank whose entries have empty keys and the element as value. Any tree call
// may fail with kUnavailable for a page the view does not hold yet; the status
// goes back to the worker, which reads the page and runs the command again on
// a fresh view, so nothing here caches or keeps anything across calls. A range
// is prefetched before it is visited: it then costs one read round per tree
// level, not one per page.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/collection.h"
#include "proxy/commands_internal.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {

constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();
constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();
// A search (LPOS, LINSERT, LREM with a count) reads and visits this many
// elements where it starts before it reads the rest of its range.
constexpr uint64_t kSearchWindow = 1024;

Result<Collection> OpenList(DataView& data, std::string_view key) {
  return Collection::Open(data, key, ValueType::kList);
}

// The first error of statuses that were all computed — several prefetches
// that ask for their missing pages in the same read round.
Status FirstError(std::initializer_list<Status> statuses) {
  for (const Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// A non-negative integer argument (a count); any other text gets `error`, as
// Redis's getPositiveLongFromObjectOrReply answers with its message.
Result<uint64_t> ParseCount(std::string_view s, std::string_view error) {
  auto v = ParseInt64(s);
  if (!v.ok() || *v < 0) return InvalidArgument(error);
  return static_cast<uint64_t>(*v);
}

// ---- Ranks and ranges -------------------------------------------------------

// An inclusive range of ranks, first <= last.
struct Span {
  uint64_t first, last;
};

// start..stop as LRANGE and LTRIM read them for a list of `size` elements:
// negative indexes count from the end, start is clamped to 0 and stop to the
// last element; nullopt when nothing is left.
std::optional<Span> RangeOf(int64_t start, int64_t stop, uint64_t size) {
  const auto len = static_cast<int64_t>(size);
  if (start < 0) start += len;
  if (stop < 0) stop += len;
  if (start < 0) start = 0;
  if (start > stop || start >= len) return std::nullopt;
  if (stop >= len) stop = len - 1;
  return Span{static_cast<uint64_t>(start), static_cast<uint64_t>(stop)};
}

// The rank of LINDEX's and LSET's index (negative from the end); nullopt when
// outside the list.
std::optional<uint64_t> RankOfIndex(int64_t index, uint64_t size) {
  const auto len = static_cast<int64_t>(size);
  if (index < 0) index += len;
  if (index < 0 || index >= len) return std::nullopt;
  return static_cast<uint64_t>(index);
}

using ElementVisitor = std::function<bool(uint64_t rank, std::string_view element)>;

// Calls fn(rank, element) for the ranks of `span` in order (reverse: from
// span.last down to span.first) until fn returns false. The span's pages are
// prefetched first. The element views an entry of the tree: valid until the
// tree changes. REQUIRES: span.last < tree.size().
Status VisitRange(PageTree& tree, Span span, bool reverse, const ElementVisitor& fn) {
  RAMPART_RETURN_IF_ERROR(tree.Prefetch(span.first, span.last + 1));
  // Stopped at the span's end: ForEach would go on into a page not prefetched.
  const uint64_t end = reverse ? span.first : span.last;
  return tree.ForEach(reverse ? span.last : span.first, reverse,
                      [&](uint64_t rank, const TreeEntryRef& e) { return fn(rank, e.value) && rank != end; });
}

// VisitRange for a search that may stop early: the kSearchWindow elements
// where the visit starts are read and visited before the rest of the span is
// read, so that a match near the start does not read the whole list (at the
// price of the tree's depth in read rounds when it does not stop there).
Status SearchRange(PageTree& tree, Span span, bool reverse, const ElementVisitor& fn) {
  if (span.last - span.first < kSearchWindow) return VisitRange(tree, span, reverse, fn);
  const Span head = reverse ? Span{span.last - kSearchWindow + 1, span.last}
                            : Span{span.first, span.first + kSearchWindow - 1};
  const Span rest = reverse ? Span{span.first, head.first - 1} : Span{head.last + 1, span.last};
  bool stopped = false;
  RAMPART_RETURN_IF_ERROR(VisitRange(tree, head, reverse, [&](uint64_t rank, std::string_view e) {
    stopped = !fn(rank, e);
    return !stopped;
  }));
  return stopped ? Status::Ok() : VisitRange(tree, rest, reverse, fn);
}

// ---- Pushing, popping, erasing -----------------------------------------------

Status PushElement(PageTree& tree, ListEnd end, std::string_view element) {
  return tree.InsertAt(end == ListEnd::kLeft ? 0 : tree.size(), "", element);
}

// Loads the pages at `end` of the list, where a push or a pop goes, with the
// element beside the end one (a pop rebalances its page).
Status PrefetchEnd(PageTree& tree, ListEnd end) {
  const uint64_t size = tree.size();
  const uint64_t n = std::min<uint64_t>(size, 2);
  return end == ListEnd::kLeft ? tree.Prefetch(0, n) : tree.Prefetch(size - n, size);
}

// Loads what EraseRange(rank, count) reads: the interior nodes over the range,
// the leaves at its edges, and the entries beside it (EraseRange rebalances
// their pages); not the leaves wholly inside it, which it drops unread.
Status PrefetchErase(PageTree& tree, uint64_t rank, uint64_t count) {
  if (count == 0) return Status::Ok();
  const uint64_t end = rank + count;
  return FirstError({tree.Prefetch(rank, end, /*inner_leaves=*/false),
                     rank > 0 ? tree.Prefetch(rank - 1, rank) : Status::Ok(),
                     end < tree.size() ? tree.Prefetch(end, end + 1) : Status::Ok()});
}

// Removes up to `count` elements at `end` of the list and returns them in the
// order they were popped (from the tail: the last element first).
Result<std::vector<std::string>> PopFromTree(PageTree& tree, ListEnd end, uint64_t count) {
  std::vector<std::string> popped;
  const uint64_t n = std::min(count, tree.size());
  if (n == 0) return popped;
  const uint64_t first = end == ListEnd::kLeft ? 0 : tree.size() - n;
  // The popped entries and those beside them (EraseRange rebalances their
  // pages), in one go.
  RAMPART_RETURN_IF_ERROR(tree.Prefetch(first == 0 ? 0 : first - 1, std::min(first + n + 1, tree.size())));
  popped.reserve(n);
  RAMPART_RETURN_IF_ERROR(VisitRange(tree, {first, first + n - 1}, end == ListEnd::kRight,
                                     [&](uint64_t, std::string_view e) {
                                       popped.emplace_back(e);
                                       return true;
                                     }));
  RAMPART_RETURN_IF_ERROR(tree.EraseRange(first, n));
  return popped;
}

// Erases the entries of `ranks`, given in decreasing order (an erase then
// moves none of the ranks still to erase), a run of consecutive ranks at a
// time.
Status EraseRanks(PageTree& tree, const std::vector<uint64_t>& ranks) {
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i + 1;
    while (j < ranks.size() && ranks[j] + 1 == ranks[j - 1]) ++j;
    RAMPART_RETURN_IF_ERROR(tree.EraseRange(ranks[j - 1], j - i));
    i = j;
  }
  return Status::Ok();
}

// ---- Keyspace events -----------------------------------------------------------

std::string_view PushEvent(ListEnd end) { return end == ListEnd::kLeft ? "lpush" : "rpush"; }
std::string_view PopEvent(ListEnd end) { return end == ListEnd::kLeft ? "lpop" : "rpop"; }

// Records Redis's events for a change that removed elements of the list at
// `key` and was saved: `event` ("lpop", "lrem", ...), then "del" when the
// list is left empty (its Save deleted the key). REQUIRES: `event` is a
// string literal (DataView::Notify keeps it).
void NotifyRemoved(DataView& data, std::string_view key, std::string_view event, const Collection& list) {
  data.Notify(notify::kList, event, key);
  if (list.size() == 0) data.Notify(notify::kGeneric, "del", key);
}

// ---- Replies -------------------------------------------------------------------

void ReplyElements(const std::vector<std::string>& elements, resp::Writer& out) {
  out.Array(elements.size());
  for (const std::string& e : elements) out.Bulk(e);
}

void ReplyMoved(const Result<std::optional<std::string>>& moved, resp::Writer& out) {
  if (ReplyIfError(moved.status(), out)) return;
  if (!moved->has_value()) return out.Null();
  out.Bulk(**moved);
}

// ---- LPOS's options ----------------------------------------------------------------

struct LposOptions {
  bool reverse = false;           // a negative RANK: from the tail
  uint64_t skip = 0;              // matches passed over before the first answered (RANK - 1)
  std::optional<uint64_t> count;  // COUNT (0: every match); nullopt: a single answer
  uint64_t maxlen = 0;            // elements compared at most (0: all)
};

// RANK r, COUNT c, MAXLEN m in any order (the last of each counts), parsed and
// checked one after the other as Redis does, so the first bad one is the error.
Result<LposOptions> ParseLposOptions(Args args) {
  LposOptions o;
  int64_t rank = 1;
  for (size_t n = 3; n < args.size(); ++n) {
    const std::string_view option = args[n];
    const bool more = n + 1 < args.size();
    if (EqualsNoCase(option, "rank") && more) {
      RAMPART_ASSIGN_OR_RETURN(rank, ParseInt64(args[++n]));
      if (rank == 0) {
        return InvalidArgument(
            "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or "
            "use negative to start from the end of the list");
      }
    } else if (EqualsNoCase(option, "count") && more) {
      RAMPART_ASSIGN_OR_RETURN(o.count, ParseCount(args[++n], "ERR COUNT can't be negative"));
    } else if (EqualsNoCase(option, "maxlen") && more) {
      RAMPART_ASSIGN_OR_RETURN(o.maxlen, ParseCount(args[++n], "ERR MAXLEN can't be negative"));
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  o.reverse = rank < 0;
  if (rank == kMinInt64) {
    // Redis negates the rank in a long, where -LONG_MIN stays negative: every
    // match is past it, and COUNT never ends the search.
    if (o.count.has_value()) o.count = 0;
  } else {
    o.skip = static_cast<uint64_t>(rank < 0 ? -rank : rank) - 1;
  }
  return o;
}

// The list and the span of LRANGE's and LTRIM's "key start stop": the
// indexes are parsed before the key is read; the span is start..stop of the
// list by RangeOf's rules (nullopt: none, also for no list).
struct ListSpan {
  Collection list;
  std::optional<Span> span;
};
Result<ListSpan> OpenListSpan(Args args, DataView& data) {
  RAMPART_ASSIGN_OR_RETURN(const int64_t start, ParseInt64(args[2]));
  RAMPART_ASSIGN_OR_RETURN(const int64_t stop, ParseInt64(args[3]));
  RAMPART_ASSIGN_OR_RETURN(Collection list, OpenList(data, args[1]));
  const std::optional<Span> span = RangeOf(start, stop, list.size());
  return ListSpan{std::move(list), span};
}

}  // namespace

// ---- The cores the blocking pops share -----------------------------------------------
//
// PopElements and MoveElement record the keyspace events of what they change
// (Redis's listElementsRemoved and lmoveGenericCommand), so the multi-key and
// blocking pops send what LPOP / RPOP and LMOVE send.

Result<ListEnd> ParseListEnd(std::string_view word) {
  if (EqualsNoCase(word, "left")) return ListEnd::kLeft;
  if (EqualsNoCase(word, "right")) return ListEnd::kRight;
  return InvalidArgument("ERR syntax error");
}

Result<std::optional<std::vector<std::string>>> PopElements(DataView& data, std::string_view key,
                                                            ListEnd end, uint64_t count) {
  using Popped = std::optional<std::vector<std::string>>;
  RAMPART_ASSIGN_OR_RETURN(Collection list, OpenList(data, key));
  if (list.size() == 0) return Popped();
  RAMPART_ASSIGN_OR_RETURN(std::vector<std::string> popped, PopFromTree(list.tree(), end, count));
  RAMPART_RETURN_IF_ERROR(list.Save());
  if (!popped.empty()) NotifyRemoved(data, key, PopEvent(end), list);
  return Popped(std::move(popped));
}

Result<std::optional<std::string>> MoveElement(DataView& data, std::string_view source,
                                               std::string_view destination, ListEnd from, ListEnd to) {
  using Moved = std::optional<std::string>;
  RAMPART_ASSIGN_OR_RETURN(Collection src, OpenList(data, source));
  if (src.size() == 0) return Moved();
  // One Collection per key: two would each write the key's header, the
  // second over the first's change.
  std::optional<Collection> other;
  if (destination != source) {
    RAMPART_ASSIGN_OR_RETURN(Collection dst, OpenList(data, destination));
    other.emplace(std::move(dst));
  }
  PageTree& dst_tree = other.has_value() ? other->tree() : src.tree();
  RAMPART_RETURN_IF_ERROR(FirstError({PrefetchEnd(src.tree(), from), PrefetchEnd(dst_tree, to)}));
  RAMPART_ASSIGN_OR_RETURN(std::vector<std::string> popped, PopFromTree(src.tree(), from, 1));
  RAMPART_RETURN_IF_ERROR(PushElement(dst_tree, to, popped[0]));
  RAMPART_RETURN_IF_ERROR(src.Save());
  if (other.has_value()) RAMPART_RETURN_IF_ERROR(other->Save());
  // Redis's order: the push on destination (after its "new", which Save
  // recorded), then the pop on source.
  data.Notify(notify::kList, PushEvent(to), destination);
  NotifyRemoved(data, source, PopEvent(from), src);
  return Moved(std::move(popped[0]));
}

// ---- Commands ----------------------------------------------------------------------------

// LPUSH / RPUSH / LPUSHX / RPUSHX key element [element ...]: the elements
// pushed one by one at the head (L) or the tail (R) — LPUSH k a b gives b a —;
// the new length. The X forms push onto an existing list only (else 0).
void ListPush(Args args, DataView& data, resp::Writer& out) {
  const std::string_view name = CommandName(args);
  const ListEnd end = name[0] == 'l' ? ListEnd::kLeft : ListEnd::kRight;
  auto list = OpenList(data, args[1]);
  if (ReplyIfError(list.status(), out)) return;
  if (name.back() == 'x' && list->size() == 0) return out.Integer(0);
  for (size_t n = 2; n < args.size(); ++n) {
    if (ReplyIfError(PushElement(list->tree(), end, args[n]), out)) return;
  }
  if (ReplyIfError(list->Save(), out)) return;
  data.Notify(notify::kList, PushEvent(end), args[1]);
  out.Integer(static_cast<int64_t>(list->size()));
}

// LPOP / RPOP key [count]: without a count the element (nil when there is no
// list); with one an array of up to count elements (a nil array when there is
// no list, whatever the count). The count is checked before the key.
void ListPop(Args args, DataView& data, resp::Writer& out) {
  const std::string_view name = CommandName(args);
  if (args.size() > 3) return out.Error(StrCat("ERR wrong number of arguments for '", name, "' command"));
  const bool has_count = args.size() == 3;
  uint64_t count = 1;
  if (has_count) {
    auto parsed = ParseCount(args[2], "ERR value is out of range, must be positive");
    if (ReplyIfError(parsed.status(), out)) return;
    count = *parsed;
  }
  auto popped = PopElements(data, args[1], name[0] == 'l' ? ListEnd::kLeft : ListEnd::kRight, count);
  if (ReplyIfError(popped.status(), out)) return;
  if (!popped->has_value()) return has_count ? out.NullArray() : out.Null();
  if (has_count) return ReplyElements(**popped, out);
  out.Bulk((**popped)[0]);
}

void LLen(Args args, DataView& data, resp::Writer& out) {
  auto list = OpenList(data, args[1]);
  if (ReplyIfError(list.status(), out)) return;
  out.Integer(static_cast<int64_t>(list->size()));
}

// LRANGE key start stop: the elements start..stop (RangeOf's rules).
void LRange(Args args, DataView& data, resp::Writer& out) {
  auto range = OpenListSpan(args, data);
  if (ReplyIfError(range.status(), out)) return;
  std::vector<std::string> elements;
  if (const std::optional<Span>& span = range->span) {
    elements.reserve(span->last - span->first + 1);
    const Status s = VisitRange(range->list.tree(), *span, false, [&](uint64_t, std::string_view e) {
      elements.emplace_back(e);
      return true;
    });
    if (ReplyIfError(s, out)) return;
  }
  ReplyElements(elements, out);
}

// LINDEX key index: the element, nil outside the list. The key is looked at
// before the index is parsed (Redis's order).
void LIndex(Args args, DataView& data, resp::Writer& out) {
  auto list = OpenList(data, args[1]);
  if (ReplyIfError(list.status(), out)) return;
  if (list->size() == 0) return out.Null();
  auto index = ParseInt64(args[2]);
  if (ReplyIfError(index.status(), out)) return;
  const auto rank = RankOfIndex(*index, list->size());
  if (!rank.has_value()) return out.Null();
  auto entry = list->tree().At(*rank);
  if (ReplyIfError(entry.status(), out)) return;
  out.Bulk(entry->value);
}

// LSET key index element: OK; "ERR no such key" without a list (checked before
// the index), "ERR index out of range" outside it.
void LSet(Args args, DataView& data, resp::Writer& out) {
  auto list = OpenList(data, args[1]);
  if (ReplyIfError(list.status(), out)) return;
  if (list->size() == 0) return out.Error("ERR no such key");
  auto index = ParseInt64(args[2]);
  if (ReplyIfError(index.status(), out)) return;
  const auto rank = RankOfIndex(*index, list->size());
  if (!rank.has_value()) return out.Error("ERR index out of range");
  if (ReplyIfError(list->tree().SetValueAt(*rank, args[3]), out)) return;
  if (ReplyIfError(list->Save(), out)) return;
  data.Notify(notify::kList, "lset", args[1]);
  out.Simple("OK");
}

// LINSERT key BEFORE|AFTER pivot element: inserts next to the first element
// equal to pivot; the new length, -1 without such an element, 0 without a
// list.
void LInsert(Args args, DataView& data, resp::Writer& out) {
  const bool after = EqualsNoCase(args[2], "after");
  if (!after && !EqualsNoCase(args[2], "before")) return out.Error("ERR syntax error");
  auto list = OpenList(data, args[1]);
  if (ReplyIfError(list.status(), out)) return;
  if (list->size() == 0) return out.Integer(0);
  PageTree& tree = list->tree();
  std::optional<uint64_t> pivot;
  const Status s = SearchRange(tree, {0, tree.size() - 1}, false, [&](uint64_t rank, std::string_view e) {
    if (e == args[3]) pivot = rank;
    return !pivot.has_value();
  });
  if (ReplyIfError(s, out)) return;
  if (!pivot.has_value()) return out.Integer(-1);
  if (ReplyIfError(tree.InsertAt(*pivot + (after ? 1 : 0), "", args[4]), out)) return;
  if (ReplyIfError(list->Save(), out)) return;
  data.Notify(notify::kList, "linsert", args[1]);
  out.Integer(static_cast<int64_t>(list->size()));
}

// LREM key count element: removes the first count elements equal to element
// (count < 0: the last -count; 0: all of them); how many it removed.
void LRem(Args args, DataView& data, resp::Writer& out) {
  auto count = ParseInt64(args[2]);
  if (ReplyIfError(count.status(), out)) return;
  auto list = OpenList(data, args[1]);
  if (ReplyIfError(list.status(), out)) return;
  if (list->size() == 0) return out.Integer(0);
  const bool from_tail = *count < 0;
  // |count| (for INT64_MIN 2^63: as good as all); 0: all.
  const uint64_t limit = from_tail ? uint64_t{0} - static_cast<uint64_t>(*count) : static_cast<uint64_t>(*count);
  PageTree& tree = list->tree();
  std::vector<uint64_t> ranks;  // of the matches, in the order visited
  const auto visit = limit == 0 ? VisitRange : SearchRange;
  const Status s = visit(tree, {0, tree.size() - 1}, from_tail, [&](uint64_t rank, std::string_view e) {
    if (e == args[3]) ranks.push_back(rank);
    return limit == 0 || ranks.size() < limit;
  });
  if (ReplyIfError(s, out)) return;
  if (!from_tail) std::reverse(ranks.begin(), ranks.end());
  if (ReplyIfError(EraseRanks(tree, ranks), out)) return;
  if (ReplyIfError(list->Save(), out)) return;
  if (!ranks.empty()) NotifyRemoved(data, args[1], "lrem", *list);
  out.Integer(static_cast<int64_t>(ranks.size()));
}

// LTRIM key start stop: keeps the elements start..stop (RangeOf's rules),
// deleting the list when none is left; OK, also without a list. A list
// notifies "ltrim" even when nothing was trimmed, as Redis does.
void LTrim(Args args, DataView& data, resp::Writer& out) {
  auto range = OpenListSpan(args, data);
  if (ReplyIfError(range.status(), out)) return;
  Collection& list = range->list;
  PageTree& tree = list.tree();
  const uint64_t size = tree.size();
  const std::optional<Span>& keep = range->span;
  const uint64_t head = keep.has_value() ? keep->first : size;     // erased before the kept span
  const uint64_t tail = keep.has_value() ? size - keep->last - 1 : 0;  // erased after it
  // Both ranges' pages in the same read rounds.
  if (ReplyIfError(FirstError({PrefetchErase(tree, 0, head), PrefetchErase(tree, size - tail, tail)}), out)) {
    return;
  }
  if (ReplyIfError(tree.EraseRange(size - tail, tail), out)) return;
  if (ReplyIfError(tree.EraseRange(0, head), out)) return;
  if (ReplyIfError(list.Save(), out)) return;
  if (size > 0) NotifyRemoved(data, args[1], "ltrim", list);
  out.Simple("OK");
}

// LPOS key element [RANK r] [COUNT c] [MAXLEN m]: the index of the r-th match
// (r < 0: the -r-th from the tail) among the first m elements compared (from
// the tail for r < 0); with COUNT an array of up to c such indexes (0: all)
// from that match on. Nil / an empty array without a match or a list.
void LPos(Args args, DataView& data, resp::Writer& out) {
  auto options = ParseLposOptions(args);
  if (ReplyIfError(options.status(), out)) return;
  const LposOptions& o = *options;
  auto list = OpenList(data, args[1]);
  if (ReplyIfError(list.status(), out)) return;
  const uint64_t size = list->size();
  const uint64_t compared = o.maxlen == 0 ? size : std::min(o.maxlen, size);
  const uint64_t wanted = !o.count.has_value() ? 1 : *o.count == 0 ? kAll : *o.count;
  std::vector<uint64_t> found;
  if (compared > 0) {
    const Span span = o.reverse ? Span{size - compared, size - 1} : Span{0, compared - 1};
    uint64_t matches = 0;
    const Status s = SearchRange(list->tree(), span, o.reverse, [&](uint64_t rank, std::string_view e) {
      if (e != args[2] || matches++ < o.skip) return true;
      found.push_back(rank);
      return found.size() < wanted;
    });
    if (ReplyIfError(s, out)) return;
  }
  if (!o.count.has_value()) {
    if (found.empty()) return out.Null();
    return out.Integer(static_cast<int64_t>(found[0]));
  }
  out.Array(found.size());
  for (uint64_t rank : found) out.Integer(static_cast<int64_t>(rank));
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT: MoveElement's element, nil
// when source holds no list. Both ends are parsed before any key is read.
void LMove(Args args, DataView& data, resp::Writer& out) {
  auto from = ParseListEnd(args[3]);
  if (ReplyIfError(from.status(), out)) return;
  auto to = ParseListEnd(args[4]);
  if (ReplyIfError(to.status(), out)) return;
  ReplyMoved(MoveElement(data, args[1], args[2], *from, *to), out);
}

// RPOPLPUSH source destination: LMOVE source destination RIGHT LEFT.
void RPopLPush(Args args, DataView& data, resp::Writer& out) {
  ReplyMoved(MoveElement(data, args[1], args[2], ListEnd::kRight, ListEnd::kLeft), out);
}

}  // namespace rampart::proxy::internal
