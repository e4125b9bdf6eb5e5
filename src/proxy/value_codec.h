// How the proxy stores Redis values in the kv tier, where a value is an opaque
// byte string, and the Redis argument and reply formats for numbers.
//
//   auto stored = DecodeStored(bytes);
//   if (!stored.ok()) return stored.status();              // Corruption
//   if (Expired(*stored, now_ms)) ...                       // as if absent
//   if (stored->type == ValueType::kHash) { auto fields = DecodeHash(stored->payload); ... }
//
// ---- Stored format: persisted in the kv tier — DO NOT CHANGE ----------------
// All integers are little-endian; f64 is an IEEE-754 double, little-endian.
//
//   byte 0      type: 's' string, 'h' hash, 'z' sorted set (whole-value
//               formats, below), 'H' hash, 'S' set, 'Z' sorted set, 'L' list
//               (paged collections: docs/collections.md, collection.h), 'B'
//               a string in chunks (chunked_string.h)
//   bytes 1..8  expire_at: u64 unix milliseconds; 0 = never expires
//   bytes 9..   payload, by type:
//
//   's'  the value's bytes, as they are (any length, 0 too)
//   'h'  u32 count, then count fields in increasing byte order of name, each
//          u32 name_len, name bytes, u32 value_len, value bytes
//   'z'  u32 count, then count members in increasing (score, member) order
//        (Redis's order; members compared as bytes), each
//          f64 score (never NaN), u32 member_len, member bytes
//
// 'h' and 'z' are what the proxy wrote before collections were paged; they
// are still read (as the paged hash and sorted set they hold) and become 'H'
// and 'Z' on their next change.
//
// A payload must be exactly as long as its entries (trailing bytes are
// Corruption); names and members are unique. Lengths and counts are < 2^32.
// ------------------------------------------------------------------------------
//
// The error statuses of the Parse* functions carry Redis's reply text
// ("ERR value is not a valid float"): the proxy sends message() after '-'.
//
// Thread-safety: free functions are pure; SortedSet is a value (one writer, or
// any number of readers).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace rampart::proxy {

enum class ValueType : uint8_t {
  kString = 's',
  kHash = 'h',  // whole-value hash (read only)
  kZset = 'z',  // whole-value sorted set (read only)
  kPagedHash = 'H',
  kPagedSet = 'S',
  kPagedZset = 'Z',
  kList = 'L',
  kChunkedString = 'B',  // a string too long for one value; DataView::Find joins it
};

// The Redis type a stored type is: 'H' for 'h' and 'H', 'Z' for 'z' and 'Z',
// 's' for 's' and 'B', else the type itself. FindTyped compares these.
ValueType RedisTypeOf(ValueType type);
// Redis's name of the type: "string", "hash", "set", "zset", "list".
std::string_view RedisTypeName(ValueType type);

inline constexpr size_t kStoredHeaderBytes = 9;  // type + expire_at
// The longest string (Redis's proto-max-bulk-len): no command makes a longer
// one, bit offsets stay below it, and a long string's header claiming more
// is damaged.
inline constexpr int64_t kMaxStringBytes = int64_t{512} << 20;

struct StoredValue {
  ValueType type = ValueType::kString;
  uint64_t expire_at_ms = 0;  // 0: never
  std::string_view payload;   // views the decoded bytes
};

// Corruption when `stored` is shorter than the header or the type is unknown.
// The payload is not checked (DecodeHash / SortedSet::Decode do that).
Result<StoredValue> DecodeStored(std::string_view stored);
// True when the value has an expiry and it is at or before now_ms.
bool Expired(const StoredValue& v, uint64_t now_ms);

// A whole stored value from its parts, e.g. an existing value with a new
// expiry: EncodeStored(v.type, new_expire_at_ms, v.payload).
std::string EncodeStored(ValueType type, uint64_t expire_at_ms, std::string_view payload);
std::string EncodeString(std::string_view value, uint64_t expire_at_ms);

using HashFields = std::map<std::string, std::string, std::less<>>;
// Corruption on truncation, trailing bytes, or names out of order / repeated.
Result<HashFields> DecodeHash(std::string_view payload);
std::string EncodeHash(const HashFields& fields, uint64_t expire_at_ms);

// A ZRANGEBYSCORE bound: score >= value, or > value when exclusive.
struct ScoreBound {
  double value = 0;
  bool exclusive = false;
};

// Member → score, ordered by (score, member) like a Redis sorted set.
// Copyable and movable; RangeByScore's views live until the next change.
class SortedSet {
 public:
  SortedSet() = default;
  SortedSet(const SortedSet& other);
  SortedSet& operator=(const SortedSet& other);
  SortedSet(SortedSet&&) noexcept = default;
  SortedSet& operator=(SortedSet&&) noexcept = default;

  // Corruption on truncation, trailing bytes, a NaN score, or members out of
  // (score, member) order / repeated.
  static Result<SortedSet> Decode(std::string_view payload);
  // The whole stored value (header included).
  std::string Encode(uint64_t expire_at_ms) const;

  // Sets the member's score; true if the member is new.
  // REQUIRES: score is not NaN (the caller replies an error instead, as Redis
  // does for ZINCRBY's inf + -inf).
  bool Add(std::string_view member, double score);
  // True if the member was there.
  bool Remove(std::string_view member);
  std::optional<double> Score(std::string_view member) const;
  size_t size() const { return scores_.size(); }

  // ZRANGEBYSCORE min max LIMIT offset count: the members with min <= score <=
  // max (either bound may be exclusive) in (score, member) order, skipping
  // `offset` of them, at most `count` (count < 0: all the rest). As in Redis,
  // offset < 0 gives none, and so does count == 0.
  std::vector<std::pair<std::string_view, double>> RangeByScore(ScoreBound min, ScoreBound max,
                                                                int64_t offset, int64_t count) const;

 private:
  using Entry = std::pair<double, std::string_view>;  // views a key of scores_
  struct EntryOrder {
    using is_transparent = void;
    bool operator()(const Entry& a, const Entry& b) const { return a < b; }
    bool operator()(const Entry& a, double score) const { return a.first < score; }
    bool operator()(double score, const Entry& b) const { return score < b.first; }
  };

  void RebuildOrder();

  std::map<std::string, double, std::less<>> scores_;
  std::set<Entry, EntryOrder> order_;
};

// A ZADD / ZINCRBY score: a decimal or exponent float over the whole string
// ("1", "-5.94971599E8", "1e10", ".5"), or "inf" / "infinity" with an optional
// sign, any case (Java's "Infinity" too). Rejected: "", surrounding spaces,
// "nan", trailing bytes ("1.5x"), hex floats, values beyond the double range
// or so small they round to 0 → InvalidArgument("ERR value is not a valid float").
Result<double> ParseScore(std::string_view s);
// A ZRANGEBYSCORE bound: a ParseScore float, "(" before it for exclusive
// ("(1.5", "-inf", "+inf", "(inf") → InvalidArgument("ERR min or max is not a float").
// Stricter than Redis, which takes strtod's leftovers: "" and "(" as 0, leading
// spaces, and out-of-range values as ±inf.
Result<ScoreBound> ParseScoreBound(std::string_view s);
// How Redis 7.0 replies a score (addReplyDouble): "inf", "-inf", zeros as
// "0", else printf's "%.17g" — 17 significant digits, which read back as the
// same double ("1.5", "3", "0.10000000000000001", "1e+17", "1e-07" is
// "9.9999999999999995e-08").
std::string FormatScore(double score);
// How Redis 7.0's ZSCAN writes a score (d2string, as its listpacks store
// them): whole numbers within ±2^62 as integers ("100000000000000000" for
// 1e17), else as FormatScore.
std::string FormatScanScore(double score);
// Redis's string2ll: strict base-10 int64 — optional '-', no '+', no spaces, no
// leading zeros ("-0" and "01" rejected), no overflow →
// InvalidArgument("ERR value is not an integer or out of range").
Result<int64_t> ParseInt64(std::string_view s);

}  // namespace rampart::proxy
