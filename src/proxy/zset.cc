#include "proxy/zset.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rampart::proxy {

Result<Zset> Zset::Open(DataView& data, std::string_view key) {
  RAMPART_ASSIGN_OR_RETURN(Collection c, Collection::Open(data, key, ValueType::kPagedZset));
  return Zset(std::move(c));
}

Zset Zset::Create(DataView& data, std::string_view key) {
  return Zset(Collection::Create(data, key, ValueType::kPagedZset));
}

Status Zset::PrefetchMembers(const std::vector<std::string_view>& members) {
  return by_member().PrefetchKeys(members);
}

Status Zset::PrefetchScores(const std::vector<std::pair<double, std::string_view>>& entries) {
  std::vector<std::string> keys;
  keys.reserve(entries.size());
  for (const auto& [score, member] : entries) keys.push_back(ScoreKey(score, member));
  return by_score().PrefetchKeys({keys.begin(), keys.end()});
}

Result<std::optional<double>> Zset::Score(std::string_view member) {
  RAMPART_ASSIGN_OR_RETURN(auto value, by_member().Get(member));
  if (!value.has_value()) return std::optional<double>();
  const double score = ScoreOfValue(*value);
  if (std::isnan(score)) return Corruption("ERR rampart: a damaged score in a sorted set");
  return std::optional<double>(score);
}

Status Zset::Set(std::string_view member, double score, std::optional<double> old) {
  if (old.has_value()) {
    if (*old == score && std::signbit(*old) == std::signbit(score)) return Status::Ok();
    RAMPART_RETURN_IF_ERROR(by_score().Erase(ScoreKey(*old, member)).status());
  }
  RAMPART_RETURN_IF_ERROR(by_member().Put(member, ScoreValue(score)).status());
  return by_score().Put(ScoreKey(score, member), "").status();
}

Status Zset::Remove(std::string_view member, double score) {
  RAMPART_RETURN_IF_ERROR(by_member().Erase(member).status());
  return by_score().Erase(ScoreKey(score, member)).status();
}

namespace {

// The entries at ranks [range) of `tree` as (member, score) pairs, read by
// `pair` from each entry.
template <typename ToPair>
Result<Zset::Scored> EntriesOf(PageTree& tree, RankRange range, bool reverse, ToPair pair) {
  Zset::Scored items;
  if (range.size() == 0) return items;
  RAMPART_RETURN_IF_ERROR(tree.Prefetch(range.first, range.last));
  items.reserve(range.size());
  RAMPART_RETURN_IF_ERROR(tree.ForEach(reverse ? range.last - 1 : range.first, reverse,
                                       [&](uint64_t, const TreeEntryRef& e) {
                                         items.push_back(pair(e));
                                         return items.size() < range.size();
                                       }));
  return items;
}

}  // namespace

Result<Zset::Scored> Zset::ScoreOrderRange(RankRange range, bool reverse) {
  return EntriesOf(by_score(), range, reverse, [](const TreeEntryRef& e) {
    return std::pair<std::string, double>(MemberOfKey(e.key), ScoreOfKey(e.key));
  });
}

Result<Zset::Scored> Zset::LexOrderRange(RankRange range, bool reverse) {
  return EntriesOf(by_member(), range, reverse, [](const TreeEntryRef& e) {
    return std::pair<std::string, double>(e.key, ScoreOfValue(e.value));
  });
}

Status Zset::EraseScoreOrderRange(RankRange range, const Scored& items) {
  std::vector<std::string_view> members;
  for (const auto& item : items) members.push_back(item.first);
  RAMPART_RETURN_IF_ERROR(PrefetchMembers(members));
  for (std::string_view m : members) RAMPART_RETURN_IF_ERROR(by_member().Erase(m).status());
  return by_score().EraseRange(range.first, range.size());
}

Status Zset::EraseLexOrderRange(RankRange range, const Scored& items) {
  std::vector<std::pair<double, std::string_view>> keys;
  for (const auto& [member, score] : items) keys.emplace_back(score, member);
  RAMPART_RETURN_IF_ERROR(PrefetchScores(keys));
  for (const auto& [score, member] : keys) {
    RAMPART_RETURN_IF_ERROR(by_score().Erase(ScoreKey(score, member)).status());
  }
  return by_member().EraseRange(range.first, range.size());
}

void Zset::Fill(Scored items) {
  std::vector<TreeEntry> by_score, by_member;
  by_score.reserve(items.size());
  by_member.reserve(items.size());
  for (auto& [member, score] : items) {
    by_score.push_back({ScoreKey(score, member), ""});
    by_member.push_back({std::move(member), ScoreValue(score)});
  }
  auto key_order = [](const TreeEntry& a, const TreeEntry& b) { return a.key < b.key; };
  std::sort(by_score.begin(), by_score.end(), key_order);
  std::sort(by_member.begin(), by_member.end(), key_order);
  c_.Rebuild(kByScore, std::move(by_score));
  c_.Rebuild(kByMember, std::move(by_member));
}

Result<LexBound> ParseLexBound(std::string_view s) {
  LexBound b;
  if (s == "-") return b;
  if (s == "+") {
    b.kind = LexBound::Kind::kMax;
    return b;
  }
  if (!s.empty() && (s[0] == '[' || s[0] == '(')) {
    b.kind = s[0] == '[' ? LexBound::Kind::kInclusive : LexBound::Kind::kExclusive;
    b.member.assign(s.substr(1));
    return b;
  }
  return InvalidArgument("ERR min or max not valid string range item");
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The rank of the first entry with a score above `score` (or at it, when
// `at` is true).
Result<uint64_t> RankOfScore(PageTree& by_score, double score, bool at) {
  if (!at) {
    if (score == kInf) return by_score.size();
    score = std::nextafter(score == 0 ? 0.0 : score, kInf);
  }
  return by_score.LowerRank(ScoreKey(score, ""));
}

// The rank of the first member at or after the bound (`upper`: after the
// members the bound includes).
Result<uint64_t> RankOfLex(PageTree& by_member, const LexBound& b, bool upper) {
  using K = LexBound::Kind;
  switch (b.kind) {
    case K::kMin: return uint64_t{0};
    case K::kMax: return by_member.size();
    default: break;
  }
  RAMPART_ASSIGN_OR_RETURN(uint64_t rank, by_member.LowerRank(b.member));
  // A member equal to the bound is stepped over by an exclusive lower bound
  // (it is not in the range) and an inclusive upper one (it is).
  const bool skip_member = upper == (b.kind == K::kInclusive);
  if (!skip_member || rank >= by_member.size()) return rank;
  RAMPART_ASSIGN_OR_RETURN(TreeEntry at, by_member.At(rank));
  return at.key == b.member ? rank + 1 : rank;
}

}  // namespace

Result<RankRange> ScoreRanks(PageTree& by_score, ScoreBound min, ScoreBound max) {
  RAMPART_ASSIGN_OR_RETURN(uint64_t first, RankOfScore(by_score, min.value, !min.exclusive));
  RAMPART_ASSIGN_OR_RETURN(uint64_t last, RankOfScore(by_score, max.value, max.exclusive));
  return RankRange{first, std::max(first, last)};
}

Result<RankRange> LexRanks(PageTree& by_member, const LexBound& min, const LexBound& max) {
  RAMPART_ASSIGN_OR_RETURN(uint64_t first, RankOfLex(by_member, min, /*upper=*/false));
  RAMPART_ASSIGN_OR_RETURN(uint64_t last, RankOfLex(by_member, max, /*upper=*/true));
  return RankRange{first, std::max(first, last)};
}

RankRange IndexRanks(int64_t start, int64_t stop, uint64_t size) {
  const auto n = static_cast<int64_t>(size);
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  if (start < 0) start = 0;
  if (start > stop || start >= n) return {};
  if (stop >= n) stop = n - 1;
  return RankRange{static_cast<uint64_t>(start), static_cast<uint64_t>(stop) + 1};
}

void ReplyScore(resp::Writer& out, double score) {
  if (out.protocol() >= 3) return out.Double(score);
  out.Bulk(FormatScore(score));
}

void ReplyScored(resp::Writer& out, const std::vector<std::pair<std::string, double>>& items,
                 bool with_scores) {
  const bool pairs = with_scores && out.protocol() >= 3;
  out.Array(items.size() * (with_scores && !pairs ? 2 : 1));
  for (const auto& [member, score] : items) {
    if (pairs) out.Array(2);
    out.Bulk(member);
    if (with_scores) ReplyScore(out, score);
  }
}

}  // namespace rampart::proxy
