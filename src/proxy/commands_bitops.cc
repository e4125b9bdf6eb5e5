// BITOP and BITFIELD: bit operations over whole strings (SETBIT, GETBIT,
// BITCOUNT and BITPOS, which touch one bit or a range, are in
// commands_strings.cc). Both read a long string whole (a BITFIELD on one
// rewrites it whole too).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "proxy/commands_internal.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {


enum class Overflow { kWrap, kSat, kFail };

// One BITFIELD subcommand (OVERFLOW is not one: it sets `overflow` of those
// after it).
struct FieldOp {
  enum class Kind { kGet, kSet, kIncrBy } kind = Kind::kGet;
  bool is_signed = false;
  uint32_t bits = 0;
  uint64_t offset = 0;  // in bits
  int64_t value = 0;    // SET's value, INCRBY's increment
  Overflow overflow = Overflow::kWrap;
};

// i1..i64 or u1..u63 (Redis's getBitfieldTypeFromArgument).
Result<std::pair<bool, uint32_t>> ParseFieldType(std::string_view s) {
  const auto invalid = [] {
    return InvalidArgument(
        "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 "
        "is.");
  };
  if (s.size() < 2 || (s[0] != 'i' && s[0] != 'I' && s[0] != 'u' && s[0] != 'U')) return invalid();
  auto bits = ParseInt64(s.substr(1));
  const bool is_signed = s[0] == 'i' || s[0] == 'I';
  if (!bits.ok() || *bits < 1 || (is_signed && *bits > 64) || (!is_signed && *bits > 63)) return invalid();
  return std::pair<bool, uint32_t>(is_signed, static_cast<uint32_t>(*bits));
}

// An offset in bits, or "#N": N fields of `bits` (Redis's getBitOffsetFromArgument).
Result<uint64_t> ParseFieldOffset(std::string_view s, uint32_t bits) {
  const Status bad = InvalidArgument("ERR bit offset is not an integer or out of range");
  const bool fields = !s.empty() && s[0] == '#';
  auto v = ParseInt64(fields ? s.substr(1) : s);
  if (!v.ok() || *v < 0) return bad;
  uint64_t offset = static_cast<uint64_t>(*v);
  if (fields) {
    if (offset > std::numeric_limits<uint64_t>::max() / bits) return bad;
    offset *= bits;
  }
  if (offset >= static_cast<uint64_t>(kMaxStringBytes) * 8) return bad;  // as SETBIT's
  return offset;
}

// The subcommands of BITFIELD key args[2..], checked as Redis checks them.
Result<std::vector<FieldOp>> ParseFieldOps(Args args) {
  std::vector<FieldOp> ops;
  Overflow overflow = Overflow::kWrap;
  for (size_t n = 2; n < args.size();) {
    const std::string_view sub = args[n];
    const size_t left = args.size() - n - 1;
    if (EqualsNoCase(sub, "overflow") && left >= 1) {
      const std::string_view how = args[n + 1];
      if (EqualsNoCase(how, "wrap")) {
        overflow = Overflow::kWrap;
      } else if (EqualsNoCase(how, "sat")) {
        overflow = Overflow::kSat;
      } else if (EqualsNoCase(how, "fail")) {
        overflow = Overflow::kFail;
      } else {
        return InvalidArgument("ERR Invalid OVERFLOW type specified");
      }
      n += 2;
      continue;
    }
    FieldOp op;
    if (EqualsNoCase(sub, "get") && left >= 2) {
      op.kind = FieldOp::Kind::kGet;
    } else if (EqualsNoCase(sub, "set") && left >= 3) {
      op.kind = FieldOp::Kind::kSet;
    } else if (EqualsNoCase(sub, "incrby") && left >= 3) {
      op.kind = FieldOp::Kind::kIncrBy;
    } else {
      return InvalidArgument("ERR syntax error");
    }
    RAMPART_ASSIGN_OR_RETURN(auto type, ParseFieldType(args[n + 1]));
    op.is_signed = type.first;
    op.bits = type.second;
    RAMPART_ASSIGN_OR_RETURN(op.offset, ParseFieldOffset(args[n + 2], op.bits));
    if (op.kind != FieldOp::Kind::kGet) {
      RAMPART_ASSIGN_OR_RETURN(op.value, ParseInt64(args[n + 3]));
    }
    op.overflow = overflow;
    ops.push_back(op);
    n += op.kind == FieldOp::Kind::kGet ? 3 : 4;
  }
  return ops;
}

// `bits` bits at bit `offset` of s, the first the most significant; bits past
// the end of s read as 0.
uint64_t GetBits(std::string_view s, uint64_t offset, uint32_t bits) {
  uint64_t v = 0;
  for (uint32_t j = 0; j < bits; ++j, ++offset) {
    const uint64_t byte = offset >> 3;
    const int bit = byte < s.size() ? (static_cast<uint8_t>(s[byte]) >> (7 - (offset & 7))) & 1 : 0;
    v = v << 1 | static_cast<uint64_t>(bit);
  }
  return v;
}

// REQUIRES: s covers the bits.
void SetBits(std::string& s, uint64_t offset, uint32_t bits, uint64_t v) {
  for (uint32_t j = 0; j < bits; ++j, ++offset) {
    const bool on = (v >> (bits - 1 - j)) & 1;
    const uint8_t mask = static_cast<uint8_t>(0x80 >> (offset & 7));
    char& byte = s[offset >> 3];
    byte = static_cast<char>(on ? static_cast<uint8_t>(byte) | mask : static_cast<uint8_t>(byte) & ~mask);
  }
}

int64_t SignExtend(uint64_t v, uint32_t bits) {
  if (bits < 64 && (v >> (bits - 1)) & 1) v |= ~uint64_t{0} << bits;
  return static_cast<int64_t>(v);
}

// value + incr within an unsigned field of `bits` (< 64): nullopt when it
// overflows and `how` is FAIL, else the result (wrapped or saturated)
// (Redis's checkUnsignedBitfieldOverflow).
std::optional<uint64_t> AddUnsigned(uint64_t value, int64_t incr, uint32_t bits, Overflow how) {
  const uint64_t max = (uint64_t{1} << bits) - 1;
  const uint64_t wrapped = (value + static_cast<uint64_t>(incr)) & max;
  const bool over = value > max || (incr > 0 && static_cast<uint64_t>(incr) > max - value);
  const bool under = !over && incr < 0 && static_cast<uint64_t>(-(incr + 1)) + 1 > value;
  if (!over && !under) return value + static_cast<uint64_t>(incr);
  if (how == Overflow::kFail) return std::nullopt;
  if (how == Overflow::kWrap) return wrapped;
  return over ? max : 0;
}

// The same for a signed field of `bits` (<= 64), in two's complement
// (Redis's checkSignedBitfieldOverflow).
std::optional<int64_t> AddSigned(int64_t value, int64_t incr, uint32_t bits, Overflow how) {
  const int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  const int64_t min = -max - 1;
  __int128 sum = static_cast<__int128>(value) + incr;
  const bool over = sum > max, under = sum < min;
  if (!over && !under) return static_cast<int64_t>(sum);
  if (how == Overflow::kFail) return std::nullopt;
  if (how == Overflow::kSat) return over ? max : min;
  const uint64_t c = static_cast<uint64_t>(value) + static_cast<uint64_t>(incr);
  return SignExtend(bits == 64 ? c : c & ((uint64_t{1} << bits) - 1), bits);
}

// Runs one SET or INCRBY on s: the reply's value (SET: the old one, INCRBY:
// the new one), or nullopt when it overflowed under FAIL (nothing written).
std::optional<int64_t> WriteField(std::string& s, const FieldOp& op) {
  const uint64_t raw = GetBits(s, op.offset, op.bits);
  const bool set = op.kind == FieldOp::Kind::kSet;
  if (op.is_signed) {
    const int64_t old = SignExtend(raw, op.bits);
    auto v = set ? AddSigned(op.value, 0, op.bits, op.overflow) : AddSigned(old, op.value, op.bits, op.overflow);
    if (!v.has_value()) return std::nullopt;
    SetBits(s, op.offset, op.bits, static_cast<uint64_t>(*v));
    return set ? old : *v;
  }
  auto v = set ? AddUnsigned(static_cast<uint64_t>(op.value), 0, op.bits, op.overflow)
               : AddUnsigned(raw, op.value, op.bits, op.overflow);
  if (!v.has_value()) return std::nullopt;
  SetBits(s, op.offset, op.bits, *v);
  return static_cast<int64_t>(set ? raw : *v);
}

}  // namespace

// BITOP AND|OR|XOR|NOT destkey key [key ...]: the sources combined byte by
// byte, the shorter read as padded with zeros, written at destkey without
// expiry (an empty result deletes destkey); its length. A missing source is
// an empty string ("keymiss", as Redis reads it); another type answers
// WRONGTYPE. Sends "set" on destkey, or "del" when an empty result deleted it.
void BitOp(Args args, DataView& data, resp::Writer& out) {
  enum class Op { kAnd, kOr, kXor, kNot };
  Op op;
  if (EqualsNoCase(args[1], "and")) {
    op = Op::kAnd;
  } else if (EqualsNoCase(args[1], "or")) {
    op = Op::kOr;
  } else if (EqualsNoCase(args[1], "xor")) {
    op = Op::kXor;
  } else if (EqualsNoCase(args[1], "not")) {
    op = Op::kNot;
  } else {
    return out.Error("ERR syntax error");
  }
  if (op == Op::kNot && args.size() != 4) {
    return out.Error("ERR BITOP NOT must be called with a single source key.");
  }
  std::vector<std::string_view> sources;
  size_t longest = 0;
  Gather reads;  // every long source's missing chunks asked for in one round
  for (size_t n = 3; n < args.size(); ++n) {
    auto v = data.FindTyped(args[n], ValueType::kString);
    if (!reads.Add(v.status())) {
      if (v.status().code() == StatusCode::kUnavailable) continue;
      return out.Error(v.status().message());  // WRONGTYPE, damage: at once
    }
    if (!v->has_value()) NotifyKeyMiss(data, args[n]);
    sources.push_back(v->has_value() ? (*v)->payload : std::string_view());
    longest = std::max(longest, sources.back().size());
  }
  if (ReplyIfError(reads.status(), out)) return;
  std::string result(longest, '\0');
  for (size_t i = 0; i < longest; ++i) {
    auto at = [i](std::string_view s) { return i < s.size() ? static_cast<uint8_t>(s[i]) : uint8_t{0}; };
    uint8_t byte = at(sources[0]);
    for (size_t n = 1; n < sources.size(); ++n) {
      const uint8_t b = at(sources[n]);
      byte = op == Op::kAnd ? byte & b : op == Op::kOr ? byte | b : byte ^ b;
    }
    result[i] = static_cast<char>(op == Op::kNot ? ~byte : byte);
  }
  const bool existed = HoldsValue(data, args[2]);
  if (longest == 0) {
    data.Delete(args[2]);
  } else {
    data.Put(args[2], EncodeString(result, 0));
  }
  NotifyStored(data, notify::kString, "set", args[2], longest > 0, existed);
  out.Integer(static_cast<int64_t>(longest));
}


// BITFIELD key [GET type offset] [SET type offset value] [INCRBY type offset
// increment] [OVERFLOW WRAP|SAT|FAIL] ..., and BITFIELD_RO key [GET type
// offset] ...: one reply per GET, SET and INCRBY. A write first grows the
// string (with zero bytes) to its farthest field, as Redis does, even when
// FAIL then keeps every write out; the expiry stays. "setbit" when a SET or
// INCRBY not refused by FAIL changed its field or found the string grown.
void BitField(Args args, DataView& data, resp::Writer& out) {
  auto ops = ParseFieldOps(args);
  if (ReplyIfError(ops.status(), out)) return;
  uint64_t reach = 0;  // bytes the writes need
  for (const FieldOp& op : *ops) {
    if (op.kind != FieldOp::Kind::kGet) reach = std::max(reach, (op.offset + op.bits - 1) / 8 + 1);
  }
  if (reach > 0 && EqualsNoCase(args[0], "bitfield_ro")) {
    return out.Error("ERR BITFIELD_RO only supports the GET subcommand");
  }
  auto v = data.FindTyped(args[1], ValueType::kString);
  if (ReplyIfError(v.status(), out)) return;
  // Without writes Redis reads the key as a read command does (the worker
  // notes BITFIELD_RO's keymiss).
  if (reach == 0 && !v->has_value() && EqualsNoCase(args[0], "bitfield")) {
    NotifyKeyMiss(data, args[1]);
  }
  std::string s(v->has_value() ? (*v)->payload : std::string_view());
  const bool grown = reach > s.size();
  if (grown) s.resize(reach, '\0');
  bool changed = false;  // Redis's `changes`
  out.Array(ops->size());
  for (const FieldOp& op : *ops) {
    if (op.kind == FieldOp::Kind::kGet) {
      const uint64_t raw = GetBits(s, op.offset, op.bits);
      out.Integer(op.is_signed ? SignExtend(raw, op.bits) : static_cast<int64_t>(raw));
      continue;
    }
    const std::string before = s.substr(op.offset >> 3, (op.bits + 7 + (op.offset & 7)) / 8);
    auto reply = WriteField(s, op);
    if (!reply.has_value()) {
      out.Null();
      continue;
    }
    changed = changed || grown || s.compare(op.offset >> 3, before.size(), before) != 0;
    out.Integer(*reply);
  }
  if (grown || changed) data.Put(args[1], EncodeString(s, v->has_value() ? (*v)->expire_at_ms : 0));
  if (changed) data.Notify(notify::kString, "setbit", args[1]);
}

}  // namespace rampart::proxy::internal
