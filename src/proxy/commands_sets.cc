// Set commands over a DataView (see commands.h), each following its Redis
// 7.0 counterpart (t_set.c): the same checks in the same order, so the same
// error wins when several apply, the same replies (RESP3 sets where Redis
// sends them) and error texts. A set is a paged Collection (collection.h)
// whose one tree holds the members as keys; members are replied in byte
// order (Redis: in hash order — unordered either way).
//
// Read rounds: any tree call may fail kUnavailable for a page not read yet;
// the worker then reads it and runs the command again (data_view.h), for a
// few rounds at most. So the commands read level by level, never page by
// page: whole sets are Prefetched before they are walked; lookups that do
// not depend on each other all run before the first kUnavailable is
// returned (Gather), so that their missing pages are read in the same round;
// a batch of changes first reads the leaves beside the ones it changes (a
// leaf that shrinks merges with its neighbour).
#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "proxy/collection.h"
#include "proxy/collection_scan.h"
#include "proxy/commands_internal.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {

using Members = std::vector<std::string>;
using Views = std::vector<std::string_view>;

constexpr std::string_view kNotPositive = "ERR value is out of range, must be positive";
// Batches of changes this large also read the leaves around the changed ones.
constexpr size_t kNeighbourBatch = 4;

Views ViewsOf(const Members& members) { return Views(members.begin(), members.end()); }
Views ViewsOf(Args args) { return Views(args.begin(), args.end()); }

Result<Collection> OpenSet(DataView& data, std::string_view key) {
  return Collection::Open(data, key, ValueType::kPagedSet);
}

// Every member of the tree, in order (read whole first).
Result<Members> AllMembers(PageTree& tree) {
  RAMPART_RETURN_IF_ERROR(tree.Prefetch(0, tree.size()));
  Members members;
  members.reserve(tree.size());
  RAMPART_RETURN_IF_ERROR(tree.ForEach(0, /*reverse=*/false, [&](uint64_t, const TreeEntryRef& e) {
    members.emplace_back(e.key);
    return true;
  }));
  return members;
}

// Reads what putting or erasing `keys` touches: the paths to them and, for
// batches, about a leaf's worth of entries on either side of each (the
// neighbour a shrunken leaf merges with), so that a batch costs a read round
// per level rather than one per merge. A leaf's worth is guessed from the
// key's size: a guess too small costs a round, not correctness.
Status PrefetchForChanges(PageTree& tree, const Views& keys) {
  RAMPART_RETURN_IF_ERROR(tree.PrefetchKeys(keys));
  if (keys.size() < kNeighbourBatch) return Status::Ok();
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [from, to) ranks
  for (std::string_view key : keys) {
    RAMPART_ASSIGN_OR_RETURN(const uint64_t rank, tree.LowerRank(key));
    const uint64_t reach = kMaxNodeBytes / (key.size() + 2) + 1;
    ranges.emplace_back(rank > reach ? rank - reach : 0, std::min(tree.size(), rank + reach + 1));
  }
  std::sort(ranges.begin(), ranges.end());
  Gather gather;
  for (size_t n = 0; n < ranges.size();) {
    auto [from, to] = ranges[n];
    for (++n; n < ranges.size() && ranges[n].first <= to; ++n) to = std::max(to, ranges[n].second);
    if (from < to) gather.Add(tree.Prefetch(from, to));
  }
  return gather.status();
}

// Adds (or erases) `members`; how many were new (were there).
Result<int64_t> ChangeMembers(PageTree& tree, const Views& members, bool add) {
  RAMPART_RETURN_IF_ERROR(PrefetchForChanges(tree, members));
  int64_t changed = 0;
  for (std::string_view m : members) {
    RAMPART_ASSIGN_OR_RETURN(const bool done, add ? tree.Put(m, "") : tree.Erase(m));
    changed += done;
  }
  return changed;
}

// The members at `ranks` (any order, repeats allowed), read together: the
// whole set when the ranks are dense, else the path to each.
// REQUIRES: every rank < tree.size().
Result<Members> MembersAt(PageTree& tree, const std::vector<uint64_t>& ranks) {
  std::vector<uint64_t> unique = ranks;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  Members found(unique.size());
  if (unique.size() * 4 >= tree.size()) {
    RAMPART_ASSIGN_OR_RETURN(Members all, AllMembers(tree));
    for (size_t n = 0; n < unique.size(); ++n) found[n] = std::move(all[unique[n]]);
  } else {
    RAMPART_RETURN_IF_ERROR(tree.PrefetchRanks(unique));
    for (size_t n = 0; n < unique.size(); ++n) {
      RAMPART_ASSIGN_OR_RETURN(TreeEntry entry, tree.At(unique[n]));
      found[n] = std::move(entry.key);
    }
  }
  Members members;
  members.reserve(ranks.size());
  for (uint64_t rank : ranks) {
    members.push_back(found[std::lower_bound(unique.begin(), unique.end(), rank) - unique.begin()]);
  }
  return members;
}

// The header of a reply Redis sends as a set: RESP3 '~' (resp::Writer has
// no set type), RESP2 an array.
void SetHeader(resp::Writer& out, size_t n) {
  if (out.protocol() < 3) return out.Array(n);
  out.out()->append(StrCat("~", n, "\r\n"));
}

void ReplyMembers(const Members& members, bool as_set, resp::Writer& out) {
  if (as_set) {
    SetHeader(out, members.size());
  } else {
    out.Array(members.size());
  }
  for (const std::string& m : members) out.Bulk(m);
}

// Records Redis's events for a change that removed members of the set at
// `key` and was saved: `event` ("srem", "spop"), then "del" when the set is
// left empty (its Save deleted the key). REQUIRES: `event` is a string
// literal (DataView::Notify keeps it).
void NotifyRemoved(DataView& data, std::string_view key, std::string_view event, const Collection& set) {
  data.Notify(notify::kSet, event, key);
  if (set.size() == 0) data.Notify(notify::kGeneric, "del", key);
}

// ---- Several sets ------------------------------------------------------------

enum class SetOp { kInter, kUnion, kDiff };

// SINTER..., SUNION..., SDIFF... by the table's name of args[0].
SetOp OpOf(Args args) {
  const std::string_view name = CommandName(args);
  return name.starts_with("sinter") ? SetOp::kInter : name.starts_with("sunion") ? SetOp::kUnion : SetOp::kDiff;
}

// The sets at `keys`, in order (a missing key is an empty set); WRONGTYPE
// for the first of another type: Redis checks them all before anything.
Result<std::vector<Collection>> OpenSets(DataView& data, std::span<const std::string_view> keys) {
  std::vector<Collection> sets;
  sets.reserve(keys.size());
  for (std::string_view key : keys) {
    RAMPART_ASSIGN_OR_RETURN(Collection set, OpenSet(data, key));
    sets.push_back(std::move(set));
  }
  return sets;
}

// How many of `others` hold each of `members` (probed, not walked; the
// paths in all of them read together).
Result<std::vector<size_t>> Occurrences(std::span<PageTree* const> others, const Members& members) {
  const Views keys = ViewsOf(members);
  Gather gather;
  for (PageTree* tree : others) gather.Add(tree->PrefetchKeys(keys));
  RAMPART_RETURN_IF_ERROR(gather.status());
  std::vector<size_t> counts(members.size());
  for (PageTree* tree : others) {
    for (size_t n = 0; n < members.size(); ++n) {
      RAMPART_ASSIGN_OR_RETURN(const auto value, tree->Get(members[n]));
      counts[n] += value.has_value();
    }
  }
  return counts;
}

Result<Members> Union(std::vector<Collection>& sets) {
  Gather gather;
  for (Collection& s : sets) gather.Add(s.tree().Prefetch(0, s.size()));
  RAMPART_RETURN_IF_ERROR(gather.status());
  Members all;
  for (Collection& s : sets) {
    RAMPART_ASSIGN_OR_RETURN(Members members, AllMembers(s.tree()));
    all.insert(all.end(), std::make_move_iterator(members.begin()), std::make_move_iterator(members.end()));
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

// The members of `op` over `sets` (at least one), in order; kInter stops at
// `limit` members (0: no limit). Intersections walk the smallest set and
// probe the others, differences walk the first.
Result<Members> Combine(SetOp op, std::vector<Collection>& sets, uint64_t limit) {
  if (op == SetOp::kUnion) return Union(sets);
  std::vector<PageTree*> trees;
  for (Collection& s : sets) trees.push_back(&s.tree());
  if (op == SetOp::kInter) {
    std::stable_sort(trees.begin(), trees.end(), [](PageTree* a, PageTree* b) { return a->size() < b->size(); });
  }
  RAMPART_ASSIGN_OR_RETURN(Members members, AllMembers(*trees[0]));
  const std::span<PageTree* const> others(trees.data() + 1, trees.size() - 1);
  RAMPART_ASSIGN_OR_RETURN(const std::vector<size_t> counts, Occurrences(others, members));
  const size_t wanted = op == SetOp::kInter ? others.size() : 0;
  Members kept;
  for (size_t n = 0; n < members.size() && (limit == 0 || kept.size() < limit); ++n) {
    if (counts[n] == wanted) kept.push_back(std::move(members[n]));
  }
  return kept;
}

// Replaces whatever `key` holds with a set of `members` (in order, unique);
// none deletes the key, as Redis does. Its size.
Result<int64_t> StoreSet(DataView& data, std::string_view key, Members members) {
  Collection set = Collection::Create(data, key, ValueType::kPagedSet);
  std::vector<TreeEntry> entries;
  entries.reserve(members.size());
  for (std::string& m : members) entries.push_back({std::move(m), ""});
  set.Rebuild(0, std::move(entries));
  RAMPART_RETURN_IF_ERROR(set.Save());
  return static_cast<int64_t>(set.size());
}

// ---- Random members ----------------------------------------------------------

// Removes and returns what SPOP key count pops: `count` distinct random
// members, or all of them. REQUIRES: count >= 1.
Result<Members> Pop(DataView& data, PageTree& tree, uint64_t count) {
  if (count >= tree.size()) {
    RAMPART_ASSIGN_OR_RETURN(Members all, AllMembers(tree));
    RAMPART_RETURN_IF_ERROR(tree.EraseRange(0, tree.size()));
    return all;
  }
  const auto ranks = RandomRanks(data, tree.size(), static_cast<int64_t>(count));
  RAMPART_ASSIGN_OR_RETURN(Members popped, MembersAt(tree, ranks));
  RAMPART_RETURN_IF_ERROR(ChangeMembers(tree, ViewsOf(popped), /*add=*/false).status());
  return popped;
}

// The count of SPOP (pop) or SRANDMEMBER, nullopt without one; "ERR syntax
// error" for more arguments, checked first as Redis does. SPOP's count is
// getPositiveLong's (one text for both errors); SRANDMEMBER's a
// ParseRandomCount.
Result<std::optional<int64_t>> ParseCountArg(Args args, bool pop) {
  if (args.size() > 3) return InvalidArgument("ERR syntax error");
  if (args.size() < 3) return std::optional<int64_t>();
  auto count = pop ? ParseInt64(args[2]) : ParseRandomCount(args[2]);
  if (pop && (!count.ok() || *count < 0)) return InvalidArgument(kNotPositive);
  if (!count.ok()) return count.status();
  return std::optional<int64_t>(*count);
}

// SADD (add) and SREM: the members args[2..]; how many were new / were there.
// The events only when that is not 0.
void ChangeSet(Args args, DataView& data, resp::Writer& out, bool add) {
  auto set = OpenSet(data, args[1]);
  if (ReplyIfError(set.status(), out)) return;
  auto changed = ChangeMembers(set->tree(), ViewsOf(args.subspan(2)), add);
  if (ReplyIfError(changed.status(), out)) return;
  if (ReplyIfError(set->Save(), out)) return;
  if (*changed > 0 && add) data.Notify(notify::kSet, "sadd", args[1]);
  if (*changed > 0 && !add) NotifyRemoved(data, args[1], "srem", *set);
  out.Integer(*changed);
}

}  // namespace

// ---- One set -----------------------------------------------------------------

void SAdd(Args args, DataView& data, resp::Writer& out) { ChangeSet(args, data, out, /*add=*/true); }
void SRem(Args args, DataView& data, resp::Writer& out) { ChangeSet(args, data, out, /*add=*/false); }

void SCard(Args args, DataView& data, resp::Writer& out) {
  auto set = OpenSet(data, args[1]);
  if (ReplyIfError(set.status(), out)) return;
  out.Integer(static_cast<int64_t>(set->size()));
}

void SMembers(Args args, DataView& data, resp::Writer& out) {
  auto set = OpenSet(data, args[1]);
  if (ReplyIfError(set.status(), out)) return;
  auto members = AllMembers(set->tree());
  if (ReplyIfError(members.status(), out)) return;
  ReplyMembers(*members, /*as_set=*/true, out);
}

void SIsMember(Args args, DataView& data, resp::Writer& out) {
  auto set = OpenSet(data, args[1]);
  if (ReplyIfError(set.status(), out)) return;
  auto found = set->tree().Get(args[2]);
  if (ReplyIfError(found.status(), out)) return;
  out.Integer(found->has_value() ? 1 : 0);
}

void SMIsMember(Args args, DataView& data, resp::Writer& out) {
  auto set = OpenSet(data, args[1]);
  if (ReplyIfError(set.status(), out)) return;
  const Views members = ViewsOf(args.subspan(2));
  if (ReplyIfError(set->tree().PrefetchKeys(members), out)) return;
  std::vector<int64_t> found;
  for (std::string_view m : members) {
    auto value = set->tree().Get(m);
    if (ReplyIfError(value.status(), out)) return;
    found.push_back(value->has_value() ? 1 : 0);
  }
  out.Array(found.size());
  for (int64_t f : found) out.Integer(f);
}

void SPop(Args args, DataView& data, resp::Writer& out) {
  auto count = ParseCountArg(args, /*pop=*/true);
  if (ReplyIfError(count.status(), out)) return;
  auto set = OpenSet(data, args[1]);
  if (ReplyIfError(set.status(), out)) return;
  if (!count->has_value() && set->size() == 0) return out.Null();
  if (count->has_value() && (set->size() == 0 || **count == 0)) return SetHeader(out, 0);
  auto popped = Pop(data, set->tree(), static_cast<uint64_t>(count->value_or(1)));
  if (ReplyIfError(popped.status(), out)) return;
  if (ReplyIfError(set->Save(), out)) return;
  NotifyRemoved(data, args[1], "spop", *set);
  if (!count->has_value()) return out.Bulk(popped->front());
  ReplyMembers(*popped, /*as_set=*/true, out);
}

void SRandMember(Args args, DataView& data, resp::Writer& out) {
  auto count = ParseCountArg(args, /*pop=*/false);
  if (ReplyIfError(count.status(), out)) return;
  auto set = OpenSet(data, args[1]);
  if (ReplyIfError(set.status(), out)) return;
  if (!count->has_value() && set->size() == 0) return out.Null();
  auto members = MembersAt(set->tree(), RandomRanks(data, set->size(), count->value_or(1)));
  if (ReplyIfError(members.status(), out)) return;
  if (!count->has_value()) return out.Bulk(members->front());
  ReplyMembers(*members, /*as_set=*/false, out);  // an array: members may repeat
}

// Redis's order: a missing source replies 0 whatever the destination is;
// then the types; the same key twice only asks whether the member is there
// (no event). The events: "srem" on source ("del" when emptied), then
// destination's ("new" when created, "sadd" when the member was not there).
void SMove(Args args, DataView& data, resp::Writer& out) {
  const std::string_view member = args[3];
  auto src = OpenSet(data, args[1]);
  if (ReplyIfError(src.status(), out)) return;
  if (!src->exists()) return out.Integer(0);
  if (args[1] == args[2]) {
    auto found = src->tree().Get(member);
    if (ReplyIfError(found.status(), out)) return;
    return out.Integer(found->has_value() ? 1 : 0);
  }
  auto dst = OpenSet(data, args[2]);
  if (ReplyIfError(dst.status(), out)) return;
  Gather paths;  // both paths in one round
  paths.Add(src->tree().PrefetchKeys({member}));
  paths.Add(dst->tree().PrefetchKeys({member}));
  if (ReplyIfError(paths.status(), out)) return;
  auto removed = src->tree().Erase(member);
  if (ReplyIfError(removed.status(), out)) return;
  if (!*removed) return out.Integer(0);
  auto added = dst->tree().Put(member, "");
  if (ReplyIfError(added.status(), out)) return;
  if (ReplyIfError(src->Save(), out)) return;
  NotifyRemoved(data, args[1], "srem", *src);  // before dst's Save records its "new"
  if (*added) {  // a member dst had already leaves dst unwritten (a WATCH of it holds), as in Redis
    if (ReplyIfError(dst->Save(), out)) return;
    data.Notify(notify::kSet, "sadd", args[2]);
  }
  out.Integer(1);
}

void SScan(Args args, DataView& data, resp::Writer& out) {
  ScanCollection(
      args, out, [&] { return OpenSet(data, args[1]); }, [](Collection& set) -> PageTree& { return set.tree(); }, 1,
      [](const TreeEntry& e, resp::Writer& w) { w.Bulk(e.key); });
}

// ---- Several sets --------------------------------------------------------------

void SCombine(Args args, DataView& data, resp::Writer& out) {
  auto sets = OpenSets(data, args.subspan(1));
  if (ReplyIfError(sets.status(), out)) return;
  auto members = Combine(OpOf(args), *sets, /*limit=*/0);
  if (ReplyIfError(members.status(), out)) return;
  ReplyMembers(*members, /*as_set=*/true, out);
}

// The destination is replaced whatever it holds; it may be one of the
// sources (they are read before it is written, and only it is saved). The
// event: the command's name, or "del" when the result is empty and the
// destination held a (live) value.
void SCombineStore(Args args, DataView& data, resp::Writer& out) {
  const SetOp op = OpOf(args);
  auto sets = OpenSets(data, args.subspan(2));
  if (ReplyIfError(sets.status(), out)) return;
  for (size_t i = 0; i < sets->size(); ++i) {  // Redis reads the sources as a read command does
    if (!(*sets)[i].exists()) NotifyKeyMiss(data, args[2 + i]);
  }
  auto members = Combine(op, *sets, /*limit=*/0);
  if (ReplyIfError(members.status(), out)) return;
  const bool existed = HoldsValue(data, args[1]);
  auto size = StoreSet(data, args[1], std::move(*members));
  if (ReplyIfError(size.status(), out)) return;
  NotifyStored(data, notify::kSet,
               op == SetOp::kInter ? "sinterstore" : op == SetOp::kUnion ? "sunionstore" : "sdiffstore", args[1],
               *size > 0, existed);
  out.Integer(*size);
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]: its keys are the numkeys
// arguments after numkeys (the table's ReplyAlgebraKeys), none when numkeys
// is bad — checked here first, as Redis does, before any key is opened.
void SInterCard(Args args, DataView& data, resp::Writer& out) {
  auto numkeys = ParseInt64(args[1]);
  if (!numkeys.ok() || *numkeys < 1) return out.Error("ERR numkeys should be greater than 0");
  if (static_cast<uint64_t>(*numkeys) > args.size() - 2) {
    return out.Error("ERR Number of keys can't be greater than number of args");
  }
  const size_t keys_end = 2 + static_cast<size_t>(*numkeys);
  uint64_t limit = 0;
  for (size_t n = keys_end; n < args.size(); ++n) {
    if (!EqualsNoCase(args[n], "limit") || n + 1 == args.size()) return out.Error("ERR syntax error");
    auto parsed = ParseInt64(args[++n]);
    if (!parsed.ok() || *parsed < 0) return out.Error("ERR LIMIT can't be negative");
    limit = static_cast<uint64_t>(*parsed);
  }
  auto sets = OpenSets(data, args.subspan(2, keys_end - 2));
  if (ReplyIfError(sets.status(), out)) return;
  auto members = Combine(SetOp::kInter, *sets, limit);
  if (ReplyIfError(members.status(), out)) return;
  out.Integer(static_cast<int64_t>(members->size()));
}

}  // namespace rampart::proxy::internal
