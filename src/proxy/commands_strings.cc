// String commands over a DataView (see commands.h); the key commands (DEL,
// EXPIRE, TTL, ...) are in commands_keys.cc. Each follows its Redis 7.0
// counterpart (t_string.c, bitops.c): the same checks in the same order, so
// the same error wins when several apply, and the same error texts.
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "proxy/commands_internal.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr std::string_view kTooLong = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

// The key's string value, or nullopt; WRONGTYPE/corruption as an error.
Result<std::optional<StoredValue>> FindString(DataView& data, std::string_view key) {
  return data.FindTyped(key, ValueType::kString);
}

// A string value as a bulk reply, nil when absent.
void ReplyValue(const std::optional<StoredValue>& v, resp::Writer& out) {
  if (v.has_value()) {
    out.Bulk(v->payload);
  } else {
    out.Null();
  }
}

// Records SET's events: "set", then "expire" when it set an expiry.
void NotifySet(DataView& data, std::string_view key, bool expiry) {
  data.Notify(notify::kString, "set", key);
  if (expiry) data.Notify(notify::kGeneric, "expire", key);
}

// ---- Expiry options (SET, GETEX, SETEX, PSETEX) -----------------------------

enum class ExpiryUnit { kNone, kEx, kPx, kExAt, kPxAt };

ExpiryUnit UnitOf(std::string_view option) {
  if (EqualsNoCase(option, "ex")) return ExpiryUnit::kEx;
  if (EqualsNoCase(option, "px")) return ExpiryUnit::kPx;
  if (EqualsNoCase(option, "exat")) return ExpiryUnit::kExAt;
  if (EqualsNoCase(option, "pxat")) return ExpiryUnit::kPxAt;
  return ExpiryUnit::kNone;
}

// The options after SET's value or GETEX's key.
struct StringOptions {
  bool nx = false, xx = false, get = false, keep_ttl = false, persist = false;
  ExpiryUnit unit = ExpiryUnit::kNone;
  std::string_view amount;  // the expiry's argument, when unit != kNone
};

// Parses them as Redis's parseExtendedStringArgumentsOrReply does: NX, XX,
// GET and KEEPTTL for SET only, PERSIST for GETEX only; NX excludes XX; one
// kind of expiry (the same kind again is allowed: its last amount counts);
// KEEPTTL and PERSIST exclude any expiry. Anything else: "ERR syntax error".
// The amount is checked later (ExpireAtMs), as in Redis.
Result<StringOptions> ParseStringOptions(Args args, bool for_set) {
  StringOptions o;
  for (size_t n = for_set ? 3 : 2; n < args.size(); ++n) {
    const std::string_view a = args[n];
    const ExpiryUnit unit = UnitOf(a);
    if (for_set && EqualsNoCase(a, "nx") && !o.xx) {
      o.nx = true;
    } else if (for_set && EqualsNoCase(a, "xx") && !o.nx) {
      o.xx = true;
    } else if (for_set && EqualsNoCase(a, "get")) {
      o.get = true;
    } else if (for_set && EqualsNoCase(a, "keepttl") && o.unit == ExpiryUnit::kNone) {
      o.keep_ttl = true;
    } else if (!for_set && EqualsNoCase(a, "persist") && o.unit == ExpiryUnit::kNone) {
      o.persist = true;
    } else if (unit != ExpiryUnit::kNone && !o.keep_ttl && !o.persist &&
               (o.unit == ExpiryUnit::kNone || o.unit == unit) && n + 1 < args.size()) {
      o.unit = unit;
      o.amount = args[++n];
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  return o;
}

// The unix-ms deadline of an expiry amount in `unit` (not kNone), checked as
// Redis's getExpireMillisecondsOrReply does: an integer ("ERR value is not an
// integer or out of range"), > 0, and in milliseconds — plus now_ms for EX/PX
// — within int64, else "ERR invalid expire time in '<command>' command".
// EXAT/PXAT may name a past time.
Result<uint64_t> ExpireAtMs(std::string_view command, ExpiryUnit unit, std::string_view amount,
                            uint64_t now_ms) {
  RAMPART_ASSIGN_OR_RETURN(const int64_t v, ParseInt64(amount));
  const bool seconds = unit == ExpiryUnit::kEx || unit == ExpiryUnit::kExAt;
  const bool relative = unit == ExpiryUnit::kEx || unit == ExpiryUnit::kPx;
  const int64_t base = relative ? static_cast<int64_t>(now_ms) : 0;
  if (v <= 0 || (seconds && v > kMaxInt64 / 1000) || (seconds ? v * 1000 : v) > kMaxInt64 - base) {
    return InvalidArgument("ERR invalid expire time in '", command, "' command");
  }
  return static_cast<uint64_t>((seconds ? v * 1000 : v) + base);
}

// ---- Ranges and bits ----------------------------------------------------------

// An inclusive range [first, last] of indexes into `len` items.
struct Range {
  int64_t first, last;
};

// start..end as GETRANGE, BITCOUNT and BITPOS read them: negative indexes
// count from the end, then both are clamped into [0, len - 1]; nullopt when
// nothing is left (always for len 0). With reversed_negatives_empty (GETRANGE,
// BITCOUNT, not BITPOS), two negative indexes with start > end are empty
// before any clamping. REQUIRES: len >= 0.
std::optional<Range> ClampRange(int64_t start, int64_t end, int64_t len,
                                bool reversed_negatives_empty) {
  if (reversed_negatives_empty && start < 0 && end < 0 && start > end) return std::nullopt;
  if (start < 0) start += len;
  if (end < 0) end += len;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= len) end = len - 1;
  if (start > end) return std::nullopt;
  return Range{start, end};
}

// Bits are numbered as Redis numbers them: bit 0 is the top bit of byte 0.
// The bits of byte `byte` that lie within the bit range r.
uint8_t MaskInRange(int64_t byte, Range r) {
  uint8_t mask = 0xFF;
  if (byte == r.first >> 3) mask &= static_cast<uint8_t>(0xFF >> (r.first & 7));
  if (byte == r.last >> 3) mask &= static_cast<uint8_t>(0xFF << (7 - (r.last & 7)));
  return mask;
}

// How many bits of the bit range r of s are 1. REQUIRES: r within s.
int64_t CountOnes(std::string_view s, Range r) {
  int64_t count = 0;
  for (int64_t byte = r.first >> 3; byte <= r.last >> 3; ++byte) {
    const uint8_t ones = static_cast<uint8_t>(s[byte]) & MaskInRange(byte, r);
    count += std::popcount(ones);
  }
  return count;
}

// The first bit of the bit range r of s equal to `value`, or -1.
// REQUIRES: r within s.
int64_t FindBit(std::string_view s, Range r, bool value) {
  for (int64_t byte = r.first >> 3; byte <= r.last >> 3; ++byte) {
    const uint8_t bits = value ? static_cast<uint8_t>(s[byte]) : static_cast<uint8_t>(~s[byte]);
    const uint8_t hits = bits & MaskInRange(byte, r);
    if (hits != 0) return byte * 8 + std::countl_zero(hits);
  }
  return -1;
}

// The bit range that start..end mean over a string of `len` bytes: byte indexes (BYTE, the default)
// or bit indexes (BIT) in args[unit_at] when args has it; "ERR syntax error"
// for another word there. nullopt: an empty range.
Result<std::optional<Range>> BitRange(int64_t len, Args args, size_t unit_at, int64_t start,
                                      int64_t end, bool reversed_negatives_empty) {
  bool bits = false;
  if (args.size() > unit_at) {
    if (EqualsNoCase(args[unit_at], "bit")) {
      bits = true;
    } else if (!EqualsNoCase(args[unit_at], "byte")) {
      return InvalidArgument("ERR syntax error");
    }
  }
  auto r = ClampRange(start, end, bits ? len * 8 : len, reversed_negatives_empty);
  if (r.has_value() && !bits) r = Range{r->first * 8, r->last * 8 + 7};
  return r;
}

// The string at a key as BITCOUNT and BITPOS read it: its length, and bytes
// that hold a byte range — a plain string whole, of a long string only the
// chunks the range crosses.
class BitSource {
 public:
  static Result<BitSource> At(DataView& data, std::string_view key) {
    BitSource source(data, key);
    RAMPART_ASSIGN_OR_RETURN(source.header_, data.FindChunked(key));
    if (!source.header_.has_value()) {
      RAMPART_ASSIGN_OR_RETURN(source.plain_, FindString(data, key));
    }
    return source;
  }
  bool exists() const { return header_.has_value() || plain_.has_value(); }
  int64_t length() const {
    return static_cast<int64_t>(header_.has_value() ? header_->length : plain_ ? plain_->payload.size() : 0);
  }
  // Bytes that hold [first, last] of the string, starting at its byte
  // `base`; valid while this source lives and the key is not written.
  // REQUIRES: 0 <= first <= last < length().
  struct Span {
    std::string_view bytes;
    int64_t base = 0;
  };
  Result<Span> Bytes(int64_t first, int64_t last) {
    if (!header_.has_value()) return Span{plain_->payload, 0};
    RAMPART_ASSIGN_OR_RETURN(read_, data_->ChunkRange(key_, *header_, first, last - first + 1));
    return Span{read_, first};
  }

 private:
  BitSource(DataView& data, std::string_view key) : data_(&data), key_(key) {}
  DataView* data_;
  std::string key_;
  std::optional<ChunkedHeader> header_;
  std::optional<StoredValue> plain_;
  std::string read_;
};

// Redis's getBitOffsetFromArgument: a strict int64, >= 0, whose byte is below
// 512 MiB, else "ERR bit offset is not an integer or out of range".
Result<int64_t> ParseBitOffset(std::string_view s) {
  auto v = ParseInt64(s);
  if (!v.ok() || *v < 0 || (*v >> 3) >= kMaxStringBytes) {
    return InvalidArgument("ERR bit offset is not an integer or out of range");
  }
  return *v;
}

}  // namespace

// ---- INCRBYFLOAT's numbers (commands_internal.h) ----------------------------

Result<long double> ParseLongDouble(std::string_view s) {
  constexpr size_t kMaxChars = 5 * 1024;
  const auto invalid = [] { return InvalidArgument("ERR value is not a valid float"); };
  if (s.empty() || s.size() >= kMaxChars || std::isspace(static_cast<unsigned char>(s[0]))) {
    return invalid();
  }
  const std::string text(s);  // NUL-terminated; an inner NUL stops strtold short
  char* end = nullptr;
  errno = 0;
  const long double v = std::strtold(text.c_str(), &end);
  if (end != text.c_str() + text.size() || std::isnan(v) || errno == EINVAL ||
      (errno == ERANGE && (std::isinf(v) || v == 0))) {
    return invalid();
  }
  return v;
}

std::string FormatLongDouble(long double v) {
  std::string text(5 * 1024, '\0');  // the largest long double has 4933 digits
  const int n = std::snprintf(text.data(), text.size(), "%.17Lf", v);
  text.resize(static_cast<size_t>(n));
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text;
}

bool SetNeedsRead(Args args) {
  for (size_t n = 3; n < args.size(); ++n) {
    if (EqualsNoCase(args[n], "nx") || EqualsNoCase(args[n], "xx") ||
        EqualsNoCase(args[n], "get") || EqualsNoCase(args[n], "keepttl")) {
      return true;
    }
  }
  return false;
}

void Get(Args args, DataView& data, resp::Writer& out) {
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  ReplyValue(*v, out);
}

void Set(Args args, DataView& data, resp::Writer& out) {
  auto options = ParseStringOptions(args, /*for_set=*/true);
  if (ReplyIfError(options.status(), out)) return;
  uint64_t expire = 0;
  if (options->unit != ExpiryUnit::kNone) {
    auto at = ExpireAtMs("set", options->unit, options->amount, data.now_ms());
    if (ReplyIfError(at.status(), out)) return;
    expire = *at;
  }
  std::optional<StoredValue> old;
  if (options->nx || options->xx || options->get || options->keep_ttl) {
    // SET ... GET fails on a non-string; NX/XX only look at existence.
    auto found = options->get ? FindString(data, args[1]) : data.FindStored(args[1]);
    if (ReplyIfError(found.status(), out)) return;
    old = *found;
    if (options->get && !old.has_value()) NotifyKeyMiss(data, args[1]);
  }
  const bool apply = !(options->nx && old.has_value()) && !(options->xx && !old.has_value());
  if (options->get) ReplyValue(old, out);  // before Put: `old` views the entry Put replaces
  if (apply) {
    if (options->keep_ttl && old.has_value()) expire = old->expire_at_ms;
    data.Put(args[1], EncodeString(args[2], expire));
    NotifySet(data, args[1], options->unit != ExpiryUnit::kNone);
  }
  if (options->get) {
    return;
  } else if (apply) {
    out.Simple("OK");
  } else {
    out.Null();
  }
}

// SETNX key value: 1 when it wrote (the key was absent), else 0.
void SetNx(Args args, DataView& data, resp::Writer& out) {
  auto v = data.FindStored(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (v->has_value()) return out.Integer(0);  // exists, whatever its type
  data.Put(args[1], EncodeString(args[2], 0));
  NotifySet(data, args[1], false);
  out.Integer(1);
}

// SETEX key seconds value, PSETEX key milliseconds value: SET key value
// EX|PX amount, a blind write over any type.
void SetEx(Args args, DataView& data, resp::Writer& out) {
  const std::string_view name = CommandName(args);
  const ExpiryUnit unit = name == "setex" ? ExpiryUnit::kEx : ExpiryUnit::kPx;
  auto at = ExpireAtMs(name, unit, args[2], data.now_ms());
  if (ReplyIfError(at.status(), out)) return;
  data.Put(args[1], EncodeString(args[3], *at));
  NotifySet(data, args[1], true);
  out.Simple("OK");
}

void MGet(Args args, DataView& data, resp::Writer& out) {
  out.Array(args.size() - 1);
  for (size_t n = 1; n < args.size(); ++n) {
    auto v = data.Find(args[n]);
    if (v.ok() && v->has_value() && (*v)->type == ValueType::kString) {
      out.Bulk((*v)->payload);
    } else {
      out.Null();  // absent, another type, or not ours: nil, as Redis does
    }
  }
}

namespace {

// MSET's writes: every key-value pair of args[1..], as strings without expiry
// (a key named twice: the last value), each with its "set".
void PutPairs(Args args, DataView& data) {
  for (size_t n = 1; n + 1 < args.size(); n += 2) {
    data.Put(args[n], EncodeString(args[n + 1], 0));
    NotifySet(data, args[n], false);
  }
}

}  // namespace

void MSet(Args args, DataView& data, resp::Writer& out) {
  PutPairs(args, data);
  out.Simple("OK");
}

// MSETNX k v [k v ...]: all of them (1) when none of the keys exists, of any
// type; else nothing (0).
void MSetNx(Args args, DataView& data, resp::Writer& out) {
  for (size_t n = 1; n + 1 < args.size(); n += 2) {
    auto v = data.FindStored(args[n]);
    if (ReplyIfError(v.status(), out)) return;
    if (v->has_value()) return out.Integer(0);
  }
  PutPairs(args, data);
  out.Integer(1);
}

void IncrBy(Args args, DataView& data, resp::Writer& out) {
  const std::string_view name = args[0];
  int64_t by = 1;
  if (args.size() == 3) {
    auto parsed = ParseInt64(args[2]);
    if (ReplyIfError(parsed.status(), out)) return;
    by = *parsed;
  }
  const bool decrement = std::tolower(static_cast<unsigned char>(name[0])) == 'd';
  if (decrement) {
    if (by == std::numeric_limits<int64_t>::min()) {
      out.Error("ERR decrement would overflow");
      return;
    }
    by = -by;
  }
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  int64_t current = 0;
  uint64_t expire = 0;
  if (v->has_value()) {
    auto parsed = ParseInt64((*v)->payload);
    if (ReplyIfError(parsed.status(), out)) return;
    current = *parsed;
    expire = (*v)->expire_at_ms;
  }
  int64_t result = 0;
  if (__builtin_add_overflow(current, by, &result)) {
    out.Error("ERR increment or decrement would overflow");
    return;
  }
  data.Put(args[1], EncodeString(std::to_string(result), expire));
  data.Notify(notify::kString, "incrby", args[1]);  // INCR, DECR and DECRBY too
  out.Integer(result);
}

// INCRBYFLOAT key increment: in long double, as Redis computes it; keeps the
// key's expiry; replies (and stores) the sum as FormatLongDouble writes it.
void IncrByFloat(Args args, DataView& data, resp::Writer& out) {
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  long double current = 0;
  if (v->has_value()) {
    auto parsed = ParseLongDouble((*v)->payload);
    if (ReplyIfError(parsed.status(), out)) return;
    current = *parsed;
  }
  auto by = ParseLongDouble(args[2]);
  if (ReplyIfError(by.status(), out)) return;
  const long double sum = current + *by;
  if (std::isnan(sum) || std::isinf(sum)) return out.Error("ERR increment would produce NaN or Infinity");
  const std::string text = FormatLongDouble(sum);
  data.Put(args[1], EncodeString(text, v->has_value() ? (*v)->expire_at_ms : 0));
  data.Notify(notify::kString, "incrbyfloat", args[1]);
  out.Bulk(text);
}

void GetSet(Args args, DataView& data, resp::Writer& out) {
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) NotifyKeyMiss(data, args[1]);
  ReplyValue(*v, out);
  data.Put(args[1], EncodeString(args[2], 0));
  NotifySet(data, args[1], false);
}

// GETEX key [EX s | PX ms | EXAT unix-s | PXAT unix-ms | PERSIST]: the value,
// and its expiry changed. A missing key is nil before the amount is checked
// (Redis's order); a past EXAT/PXAT deletes the key ("del"). An expiry given
// sends "expire" even when it is the key's already; PERSIST sends "persist"
// only when the key had an expiry.
void GetEx(Args args, DataView& data, resp::Writer& out) {
  auto options = ParseStringOptions(args, /*for_set=*/false);
  if (ReplyIfError(options.status(), out)) return;
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) {
    NotifyKeyMiss(data, args[1]);
    return out.Null();
  }
  const StoredValue old = **v;
  uint64_t expire = old.expire_at_ms;
  if (options->unit != ExpiryUnit::kNone) {
    auto at = ExpireAtMs("getex", options->unit, options->amount, data.now_ms());
    if (ReplyIfError(at.status(), out)) return;
    expire = *at;
  } else if (options->persist) {
    expire = 0;
  }
  out.Bulk(old.payload);  // before Put/Delete: the payload views the entry they replace
  if (expire != 0 && expire <= data.now_ms()) {
    data.Delete(args[1]);
    data.Notify(notify::kGeneric, "del", args[1]);
    return;
  }
  if (expire != old.expire_at_ms) data.Put(args[1], EncodeString(old.payload, expire));
  if (options->unit != ExpiryUnit::kNone) {
    data.Notify(notify::kGeneric, "expire", args[1]);
  } else if (options->persist && old.expire_at_ms != 0) {
    data.Notify(notify::kGeneric, "persist", args[1]);
  }
}

// GETDEL key: the value, and the key deleted.
void GetDel(Args args, DataView& data, resp::Writer& out) {
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  ReplyValue(*v, out);  // before Delete: the payload views the entry
  if (!v->has_value()) return NotifyKeyMiss(data, args[1]);
  data.Delete(args[1]);
  data.Notify(notify::kGeneric, "del", args[1]);
}

void StrLen(Args args, DataView& data, resp::Writer& out) {
  auto v = data.FindStored(args[1]);  // a chunked string's header has its length
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Integer(0);
  if (RedisTypeOf((*v)->type) != ValueType::kString) return out.Error(kWrongType);
  if ((*v)->type != ValueType::kChunkedString) return out.Integer(static_cast<int64_t>((*v)->payload.size()));
  auto header = DecodeChunkedHeader(**v);
  if (ReplyIfError(header.status(), out)) return;
  out.Integer(static_cast<int64_t>(header->length));
}

// APPEND key value: the new length; a missing key is created without expiry,
// an existing one keeps its expiry. "append" even for an empty value.
void Append(Args args, DataView& data, resp::Writer& out) {
  auto long_string = data.FindChunked(args[1]);
  if (ReplyIfError(long_string.status(), out)) return;
  if (const auto& h = *long_string; h.has_value()) {  // its last chunk and new ones
    if (static_cast<int64_t>(h->length + args[2].size()) > kMaxStringBytes) return out.Error(kTooLong);
    if (!args[2].empty() && ReplyIfError(data.WriteChunks(args[1], *h, h->length, args[2]), out)) return;
    data.Notify(notify::kString, "append", args[1]);
    return out.Integer(static_cast<int64_t>(h->length + args[2].size()));
  }
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  std::string value;
  uint64_t expire = 0;
  if (v->has_value()) {
    if (static_cast<int64_t>((*v)->payload.size() + args[2].size()) > kMaxStringBytes) {
      return out.Error(kTooLong);
    }
    value = (*v)->payload;
    expire = (*v)->expire_at_ms;
  }
  value.append(args[2]);
  data.Put(args[1], EncodeString(value, expire));
  data.Notify(notify::kString, "append", args[1]);
  out.Integer(static_cast<int64_t>(value.size()));
}

// GETRANGE key start end (and SUBSTR): the bytes start..end (inclusive,
// negative from the end, clamped); "" for a missing key or an empty range.
void GetRange(Args args, DataView& data, resp::Writer& out) {
  auto start = ParseInt64(args[2]);
  if (ReplyIfError(start.status(), out)) return;
  auto end = ParseInt64(args[3]);
  if (ReplyIfError(end.status(), out)) return;
  auto long_string = data.FindChunked(args[1]);
  if (ReplyIfError(long_string.status(), out)) return;
  if (const auto& h = *long_string; h.has_value()) {  // only the chunks the range crosses
    const auto r = ClampRange(*start, *end, static_cast<int64_t>(h->length), true);
    if (!r.has_value()) return out.Bulk("");
    auto bytes = data.ChunkRange(args[1], *h, r->first, r->last - r->first + 1);
    if (ReplyIfError(bytes.status(), out)) return;
    return out.Bulk(*bytes);
  }
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Bulk("");
  const std::string_view s = (*v)->payload;
  const auto r = ClampRange(*start, *end, static_cast<int64_t>(s.size()), true);
  if (!r.has_value()) return out.Bulk("");
  out.Bulk(s.substr(r->first, r->last - r->first + 1));
}

// SETRANGE key offset value: overwrites from `offset`, padding with zero
// bytes; the new length. An empty value changes nothing (and creates no key,
// sends no event); any other sends "setrange", even if no byte changed.
void SetRange(Args args, DataView& data, resp::Writer& out) {
  auto offset = ParseInt64(args[2]);
  if (ReplyIfError(offset.status(), out)) return;
  if (*offset < 0) return out.Error("ERR offset is out of range");
  auto long_string = data.FindChunked(args[1]);
  if (ReplyIfError(long_string.status(), out)) return;
  if (const auto& h = *long_string; h.has_value()) {  // only the chunks it writes
    const std::string_view value = args[3];
    if (value.empty()) return out.Integer(static_cast<int64_t>(h->length));
    if (*offset > kMaxStringBytes - static_cast<int64_t>(value.size())) return out.Error(kTooLong);
    if (ReplyIfError(data.WriteChunks(args[1], *h, *offset, value), out)) return;
    data.Notify(notify::kString, "setrange", args[1]);
    return out.Integer(static_cast<int64_t>(std::max<uint64_t>(h->length, *offset + value.size())));
  }
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  const std::string_view value = args[3];
  if (value.empty()) {
    return out.Integer(v->has_value() ? static_cast<int64_t>((*v)->payload.size()) : 0);
  }
  if (*offset > kMaxStringBytes - static_cast<int64_t>(value.size())) return out.Error(kTooLong);
  std::string s(v->has_value() ? (*v)->payload : std::string_view());
  const size_t at = static_cast<size_t>(*offset);
  if (s.size() < at + value.size()) s.resize(at + value.size(), '\0');
  s.replace(at, value.size(), value);
  data.Put(args[1], EncodeString(s, v->has_value() ? (*v)->expire_at_ms : 0));
  data.Notify(notify::kString, "setrange", args[1]);
  out.Integer(static_cast<int64_t>(s.size()));
}

// SETBIT key offset 0|1: the bit's old value; the string grows with zero
// bytes to reach the offset (a missing key is created). "setbit" when the
// string grew or the bit changed.
void SetBit(Args args, DataView& data, resp::Writer& out) {
  auto offset = ParseBitOffset(args[2]);
  if (ReplyIfError(offset.status(), out)) return;
  auto on = ParseInt64(args[3]);
  if (!on.ok() || (*on & ~int64_t{1}) != 0) return out.Error("ERR bit is not an integer or out of range");
  const uint8_t mask = static_cast<uint8_t>(0x80 >> (*offset & 7));
  const uint64_t byte_at = static_cast<uint64_t>(*offset >> 3);
  auto long_string = data.FindChunked(args[1]);
  if (ReplyIfError(long_string.status(), out)) return;
  if (const auto& h = *long_string; h.has_value()) {  // only the chunk of the bit
    auto old = byte_at < h->length ? data.ChunkRange(args[1], *h, byte_at, 1) : std::string(1, '\0');
    if (ReplyIfError(old.status(), out)) return;
    const uint8_t was = static_cast<uint8_t>((*old)[0]);
    const uint8_t now = *on == 1 ? was | mask : was & ~mask;
    if (byte_at >= h->length || now != was) {
      if (ReplyIfError(data.WriteChunks(args[1], *h, byte_at, std::string(1, static_cast<char>(now))), out)) return;
      data.Notify(notify::kString, "setbit", args[1]);
    }
    return out.Integer((was & mask) != 0 ? 1 : 0);
  }
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  std::string s(v->has_value() ? (*v)->payload : std::string_view());
  const size_t byte = static_cast<size_t>(byte_at);
  const bool grown = s.size() <= byte;
  if (grown) s.resize(byte + 1, '\0');
  const bool was = (static_cast<uint8_t>(s[byte]) & mask) != 0;
  if (grown || was != (*on == 1)) {
    s[byte] = static_cast<char>(*on == 1 ? s[byte] | mask : s[byte] & ~mask);
    data.Put(args[1], EncodeString(s, v->has_value() ? (*v)->expire_at_ms : 0));
    data.Notify(notify::kString, "setbit", args[1]);
  }
  out.Integer(was ? 1 : 0);
}

// GETBIT key offset: the bit, 0 beyond the string or for a missing key.
void GetBit(Args args, DataView& data, resp::Writer& out) {
  auto offset = ParseBitOffset(args[2]);
  if (ReplyIfError(offset.status(), out)) return;
  const size_t byte = static_cast<size_t>(*offset >> 3);
  auto long_string = data.FindChunked(args[1]);
  if (ReplyIfError(long_string.status(), out)) return;
  if (const auto& h = *long_string; h.has_value()) {  // only the chunk of the bit
    if (byte >= h->length) return out.Integer(0);
    auto b = data.ChunkRange(args[1], *h, byte, 1);
    if (ReplyIfError(b.status(), out)) return;
    return out.Integer((static_cast<uint8_t>((*b)[0]) & (0x80 >> (*offset & 7))) != 0);
  }
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Integer(0);
  const std::string_view s = (*v)->payload;
  out.Integer(byte < s.size() && (static_cast<uint8_t>(s[byte]) & (0x80 >> (*offset & 7))) != 0);
}

// BITCOUNT key [start end [BYTE|BIT]]: the 1 bits in the range. A missing key
// is 0 before the arguments are looked at (Redis 7.0's order).
void BitCount(Args args, DataView& data, resp::Writer& out) {
  auto source = BitSource::At(data, args[1]);
  if (ReplyIfError(source.status(), out)) return;
  if (!source->exists()) return out.Integer(0);
  int64_t start = 0, end = -1;
  if (args.size() == 3 || args.size() > 5) return out.Error("ERR syntax error");
  if (args.size() >= 4) {
    auto parsed_start = ParseInt64(args[2]);
    if (ReplyIfError(parsed_start.status(), out)) return;
    auto parsed_end = ParseInt64(args[3]);
    if (ReplyIfError(parsed_end.status(), out)) return;
    start = *parsed_start;
    end = *parsed_end;
  }
  auto r = BitRange(source->length(), args, 4, start, end, /*reversed_negatives_empty=*/true);
  if (ReplyIfError(r.status(), out)) return;
  if (!r->has_value()) return out.Integer(0);
  auto span = source->Bytes((*r)->first >> 3, (*r)->last >> 3);
  if (ReplyIfError(span.status(), out)) return;
  const int64_t base_bit = span->base * 8;
  out.Integer(CountOnes(span->bytes, Range{(*r)->first - base_bit, (*r)->last - base_bit}));
}

// BITPOS key 0|1 [start [end [BYTE|BIT]]]: the first such bit in the range,
// -1 when there is none — except that without an end, a search for 0 in a
// string of ones answers the first bit after the range (the string reads as
// padded with zeros), and a missing key answers 0 for 0.
void BitPos(Args args, DataView& data, resp::Writer& out) {
  auto bit = ParseInt64(args[2]);
  if (ReplyIfError(bit.status(), out)) return;
  if (*bit != 0 && *bit != 1) return out.Error("ERR The bit argument must be 1 or 0.");
  auto source = BitSource::At(data, args[1]);
  if (ReplyIfError(source.status(), out)) return;
  if (!source->exists()) return out.Integer(*bit == 1 ? -1 : 0);
  if (args.size() > 6) return out.Error("ERR syntax error");
  int64_t start = 0, end = -1;
  if (args.size() >= 4) {
    auto parsed = ParseInt64(args[3]);
    if (ReplyIfError(parsed.status(), out)) return;
    start = *parsed;
  }
  // Redis 7.0 checks the unit between start and end.
  if (args.size() == 6 && !EqualsNoCase(args[5], "bit") && !EqualsNoCase(args[5], "byte")) {
    return out.Error("ERR syntax error");
  }
  const bool end_given = args.size() >= 5;
  if (end_given) {
    auto parsed = ParseInt64(args[4]);
    if (ReplyIfError(parsed.status(), out)) return;
    end = *parsed;
  }
  auto r = BitRange(source->length(), args, 5, start, end, /*reversed_negatives_empty=*/false);
  if (ReplyIfError(r.status(), out)) return;
  if (!r->has_value()) return out.Integer(-1);
  auto span = source->Bytes((*r)->first >> 3, (*r)->last >> 3);
  if (ReplyIfError(span.status(), out)) return;
  const int64_t base_bit = span->base * 8;
  int64_t found = FindBit(span->bytes, Range{(*r)->first - base_bit, (*r)->last - base_bit}, *bit == 1);
  if (found >= 0) found += base_bit;
  out.Integer(found >= 0 || *bit == 1 || end_given ? found : (*r)->last + 1);
}

}  // namespace rampart::proxy::internal
