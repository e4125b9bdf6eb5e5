#include "proxy/value_codec.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

namespace rampart::proxy {
namespace {

// ---- Little-endian fields --------------------------------------------------

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutBytes(std::string* out, std::string_view bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out->append(bytes);
}

uint64_t LoadLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

std::string Header(ValueType type, uint64_t expire_at_ms, size_t payload_bytes) {
  std::string out;
  out.reserve(kStoredHeaderBytes + payload_bytes);
  out.push_back(static_cast<char>(type));
  PutU64(&out, expire_at_ms);
  return out;
}

// Bounds-checked reads over a payload; every failure is Corruption naming
// what was being read.
class PayloadReader {
 public:
  PayloadReader(std::string_view in, const char* what) : in_(in), what_(what) {}

  Status U32(uint32_t* v) {
    if (in_.size() - pos_ < 4) return Truncated();
    *v = static_cast<uint32_t>(LoadLe(in_.data() + pos_, 4));
    pos_ += 4;
    return Status::Ok();
  }
  Status F64(double* v) {
    if (in_.size() - pos_ < 8) return Truncated();
    *v = std::bit_cast<double>(LoadLe(in_.data() + pos_, 8));
    pos_ += 8;
    return Status::Ok();
  }
  // A u32 length and that many bytes.
  Status Bytes(std::string_view* out) {
    uint32_t len = 0;
    RAMPART_RETURN_IF_ERROR(U32(&len));
    if (in_.size() - pos_ < len) return Truncated();
    *out = in_.substr(pos_, len);
    pos_ += len;
    return Status::Ok();
  }
  // The entry count, checked against the bytes left so that a corrupt count
  // cannot make the caller loop (each entry takes at least min_entry_bytes).
  Status Count(uint32_t* count, size_t min_entry_bytes) {
    RAMPART_RETURN_IF_ERROR(U32(count));
    if (*count > (in_.size() - pos_) / min_entry_bytes) return Truncated();
    return Status::Ok();
  }
  Status Finish() const {
    if (pos_ != in_.size()) {
      return Corruption(what_, ": ", in_.size() - pos_, " bytes after the last entry");
    }
    return Status::Ok();
  }
  Status Error(std::string_view problem) const { return Corruption(what_, ": ", problem, " at byte ", pos_); }

 private:
  Status Truncated() const { return Corruption(what_, ": truncated at byte ", pos_, " of ", in_.size()); }

  std::string_view in_;
  size_t pos_ = 0;
  const char* what_;
};

// ---- Numbers ---------------------------------------------------------------

bool EqualsIgnoreCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char c = (a[i] >= 'A' && a[i] <= 'Z') ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (c != lower[i]) return false;
  }
  return true;
}

// The float grammar shared by scores and bounds (see ParseScore).
std::optional<double> ParseFloat(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (EqualsIgnoreCase(s, "inf") || EqualsIgnoreCase(s, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  // from_chars would also take a second sign, "nan" and "inf" spellings: only
  // digits and '.' may start the number.
  if (s.empty() || !((s[0] >= '0' && s[0] <= '9') || s[0] == '.')) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  // result_out_of_range: beyond the double range, or a nonzero value that
  // rounds to 0 — both rejected by Redis (string2d's ERANGE check) too.
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return negative ? -v : v;
}

}  // namespace

// ---- Stored values ---------------------------------------------------------

Result<StoredValue> DecodeStored(std::string_view stored) {
  if (stored.size() < kStoredHeaderBytes) {
    return Corruption("stored value: ", stored.size(), " bytes, shorter than the ", kStoredHeaderBytes,
                      "-byte header");
  }
  const char type = stored[0];
  if (std::string_view("shzHSZLB").find(type) == std::string_view::npos) {
    return Corruption("stored value: unknown type byte ", static_cast<int>(static_cast<uint8_t>(type)));
  }
  return StoredValue{static_cast<ValueType>(type), LoadLe(stored.data() + 1, 8), stored.substr(kStoredHeaderBytes)};
}

ValueType RedisTypeOf(ValueType type) {
  switch (type) {
    case ValueType::kHash: return ValueType::kPagedHash;
    case ValueType::kZset: return ValueType::kPagedZset;
    case ValueType::kChunkedString: return ValueType::kString;
    default: return type;
  }
}

std::string_view RedisTypeName(ValueType type) {
  switch (RedisTypeOf(type)) {
    case ValueType::kString: return "string";
    case ValueType::kPagedHash: return "hash";
    case ValueType::kPagedSet: return "set";
    case ValueType::kPagedZset: return "zset";
    case ValueType::kList: return "list";
    default: return "none";
  }
}

bool Expired(const StoredValue& v, uint64_t now_ms) { return v.expire_at_ms != 0 && v.expire_at_ms <= now_ms; }

std::string EncodeStored(ValueType type, uint64_t expire_at_ms, std::string_view payload) {
  std::string out = Header(type, expire_at_ms, payload.size());
  out.append(payload);
  return out;
}

std::string EncodeString(std::string_view value, uint64_t expire_at_ms) {
  return EncodeStored(ValueType::kString, expire_at_ms, value);
}

// ---- Hashes ----------------------------------------------------------------

Result<HashFields> DecodeHash(std::string_view payload) {
  PayloadReader r(payload, "stored hash");
  uint32_t count = 0;
  RAMPART_RETURN_IF_ERROR(r.Count(&count, 8));
  HashFields fields;
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view name, value;
    RAMPART_RETURN_IF_ERROR(r.Bytes(&name));
    RAMPART_RETURN_IF_ERROR(r.Bytes(&value));
    if (!fields.empty() && !(fields.rbegin()->first < name)) return r.Error("field out of order or repeated");
    fields.emplace_hint(fields.end(), name, value);
  }
  RAMPART_RETURN_IF_ERROR(r.Finish());
  return fields;
}

std::string EncodeHash(const HashFields& fields, uint64_t expire_at_ms) {
  size_t bytes = 4;
  for (const auto& [name, value] : fields) bytes += 8 + name.size() + value.size();
  std::string out = Header(ValueType::kHash, expire_at_ms, bytes);
  PutU32(&out, static_cast<uint32_t>(fields.size()));
  for (const auto& [name, value] : fields) {
    PutBytes(&out, name);
    PutBytes(&out, value);
  }
  return out;
}

// ---- Sorted sets -----------------------------------------------------------

SortedSet::SortedSet(const SortedSet& other) : scores_(other.scores_) { RebuildOrder(); }

SortedSet& SortedSet::operator=(const SortedSet& other) {
  if (this != &other) {
    scores_ = other.scores_;
    RebuildOrder();
  }
  return *this;
}

void SortedSet::RebuildOrder() {
  order_.clear();
  for (const auto& [member, score] : scores_) order_.emplace(score, member);
}

Result<SortedSet> SortedSet::Decode(std::string_view payload) {
  PayloadReader r(payload, "stored sorted set");
  uint32_t count = 0;
  RAMPART_RETURN_IF_ERROR(r.Count(&count, 12));
  SortedSet set;
  for (uint32_t i = 0; i < count; ++i) {
    double score = 0;
    std::string_view member;
    RAMPART_RETURN_IF_ERROR(r.F64(&score));
    RAMPART_RETURN_IF_ERROR(r.Bytes(&member));
    if (std::isnan(score)) return r.Error("NaN score");
    if (!set.order_.empty() && !(*set.order_.rbegin() < Entry{score, member})) {
      return r.Error("member out of (score, member) order");
    }
    auto [it, added] = set.scores_.emplace(member, score);
    if (!added) return r.Error("member repeated");
    set.order_.emplace_hint(set.order_.end(), score, it->first);
  }
  RAMPART_RETURN_IF_ERROR(r.Finish());
  return set;
}

std::string SortedSet::Encode(uint64_t expire_at_ms) const {
  size_t bytes = 4;
  for (const Entry& e : order_) bytes += 12 + e.second.size();
  std::string out = Header(ValueType::kZset, expire_at_ms, bytes);
  PutU32(&out, static_cast<uint32_t>(order_.size()));
  for (const auto& [score, member] : order_) {
    PutU64(&out, std::bit_cast<uint64_t>(score));
    PutBytes(&out, member);
  }
  return out;
}

bool SortedSet::Add(std::string_view member, double score) {
  auto it = scores_.find(member);
  if (it != scores_.end()) {
    order_.erase(Entry{it->second, it->first});
    it->second = score;
    order_.emplace(score, it->first);
    return false;
  }
  it = scores_.emplace(std::string(member), score).first;
  order_.emplace(score, it->first);
  return true;
}

bool SortedSet::Remove(std::string_view member) {
  auto it = scores_.find(member);
  if (it == scores_.end()) return false;
  order_.erase(Entry{it->second, it->first});
  scores_.erase(it);
  return true;
}

std::optional<double> SortedSet::Score(std::string_view member) const {
  auto it = scores_.find(member);
  if (it == scores_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string_view, double>> SortedSet::RangeByScore(ScoreBound min, ScoreBound max,
                                                                         int64_t offset, int64_t count) const {
  std::vector<std::pair<std::string_view, double>> out;
  if (offset < 0 || count == 0) return out;
  auto it = min.exclusive ? order_.upper_bound(min.value) : order_.lower_bound(min.value);
  for (; it != order_.end() && offset > 0; ++it, --offset) {
  }
  for (; it != order_.end(); ++it) {
    const double score = it->first;
    if (max.exclusive ? !(score < max.value) : !(score <= max.value)) break;
    out.emplace_back(it->second, score);
    if (count > 0 && static_cast<int64_t>(out.size()) == count) break;
  }
  return out;
}

// ---- Numbers ---------------------------------------------------------------

Result<double> ParseScore(std::string_view s) {
  std::optional<double> v = ParseFloat(s);
  if (!v) return InvalidArgument("ERR value is not a valid float");
  return *v;
}

Result<ScoreBound> ParseScoreBound(std::string_view s) {
  ScoreBound bound;
  if (!s.empty() && s[0] == '(') {
    bound.exclusive = true;
    s.remove_prefix(1);
  }
  std::optional<double> v = ParseFloat(s);
  if (!v) return InvalidArgument("ERR min or max is not a float");
  bound.value = *v;
  return bound;
}

std::string FormatScore(double score) {
  if (std::isinf(score)) return score > 0 ? "inf" : "-inf";
  if (score == 0) return "0";  // -0 too
  char buf[32];
  const int n = std::snprintf(buf, sizeof(buf), "%.17g", score);
  return std::string(buf, static_cast<size_t>(n));
}

std::string FormatScanScore(double score) {
  constexpr double kIntegerLimit = static_cast<double>(std::numeric_limits<int64_t>::max() / 2);
  if (score >= -kIntegerLimit && score <= kIntegerLimit && std::trunc(score) == score) {
    return std::to_string(static_cast<int64_t>(score));  // double2ll's range; zeros too
  }
  return FormatScore(score);
}

Result<int64_t> ParseInt64(std::string_view s) {
  // string2ll: "0" alone, or an optional '-' and a nonzero leading digit.
  const size_t first = !s.empty() && s[0] == '-' ? 1 : 0;
  const bool shape_ok = s == "0" || (s.size() > first && s[first] >= '1' && s[first] <= '9');
  int64_t v = 0;
  if (shape_ok) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size()) return v;
  }
  return InvalidArgument("ERR value is not an integer or out of range");
}

}  // namespace rampart::proxy
