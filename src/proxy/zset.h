// Zset: a sorted set as a Collection of two trees kept in step (collection.h):
// kByMember (member -> score) answers ZSCORE and finds a member's old score,
// kByScore ((score, member) in Redis's order) answers ranks and ranges. And
// the range arguments of the ZRANGE family: score bounds, lex bounds, and the
// rank intervals they select.
//
// Thread-safety: like Collection, one command of one worker.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/collection.h"
#include "proxy/resp.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {

// Ranks [first, last) of a tree, ascending.
struct RankRange {
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t size() const { return last - first; }
};

class Zset {
 public:
  // As Collection::Open / Create with ValueType::kPagedZset.
  static Result<Zset> Open(DataView& data, std::string_view key);
  static Zset Create(DataView& data, std::string_view key);

  bool exists() const { return c_.exists(); }
  uint64_t size() const { return c_.size(); }
  PageTree& by_member() { return c_.tree(kByMember); }
  PageTree& by_score() { return c_.tree(kByScore); }
  Collection& collection() { return c_; }

  // Reads the by-member pages of `members` (one round per tree level).
  Status PrefetchMembers(const std::vector<std::string_view>& members);
  // Reads the by-score pages of the (score, member) pairs.
  Status PrefetchScores(const std::vector<std::pair<double, std::string_view>>& entries);

  Result<std::optional<double>> Score(std::string_view member);
  // Gives `member` `score`; `old` is its score now (Score()), nullopt when
  // new. REQUIRES: score is not NaN.
  Status Set(std::string_view member, double score, std::optional<double> old);
  // REQUIRES: the member is there with `score`.
  Status Remove(std::string_view member, double score);
  Status Save() { return c_.Save(); }

  using Scored = std::vector<std::pair<std::string, double>>;
  // The members and scores at ranks [range) of kByScore (score order), or of
  // kByMember (lex order), ascending or (reverse) descending.
  Result<Scored> ScoreOrderRange(RankRange range, bool reverse);
  Result<Scored> LexOrderRange(RankRange range, bool reverse);
  // Removes the members at ranks [range) of kByScore / kByMember, which are
  // `items` (as the *Range functions returned them).
  Status EraseScoreOrderRange(RankRange range, const Scored& items);
  Status EraseLexOrderRange(RankRange range, const Scored& items);
  // Gives a new (Create) Zset these members, each once.
  void Fill(Scored items);

 private:
  explicit Zset(Collection c) : c_(std::move(c)) {}
  Collection c_;
};

// A lex range bound: "-", "+", "[member" (inclusive) or "(member".
struct LexBound {
  enum class Kind { kMin, kMax, kInclusive, kExclusive };
  Kind kind = Kind::kMin;
  std::string member;
};
// InvalidArgument("ERR min or max not valid string range item").
Result<LexBound> ParseLexBound(std::string_view s);

// Ranks [first, last) of the entries of `by_score` with min <= score <= max
// (either end exclusive), ascending.
Result<RankRange> ScoreRanks(PageTree& by_score, ScoreBound min, ScoreBound max);
// Ranks of the members of `by_member` within [min, max] (lex bounds).
Result<RankRange> LexRanks(PageTree& by_member, const LexBound& min, const LexBound& max);
// ZRANGE-style start/stop (negative from the end) as ranks; empty when out
// of range.
RankRange IndexRanks(int64_t start, int64_t stop, uint64_t size);

// A score as Redis replies it: a RESP3 double, else a bulk string.
void ReplyScore(resp::Writer& out, double score);
// Members, with their scores when `with_scores` (RESP3: [member, score]
// pairs; RESP2: a flat array).
void ReplyScored(resp::Writer& out, const std::vector<std::pair<std::string, double>>& items,
                 bool with_scores);

}  // namespace rampart::proxy
