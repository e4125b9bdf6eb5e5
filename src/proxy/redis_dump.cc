#include "proxy/redis_dump.h"

#include <isa-l/crc64.h>
#include <lzf.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <unordered_set>

#include "common/little_endian.h"

namespace rampart::proxy {
namespace {

// Redis's RDB object types (rdb.h).
enum RdbType : uint8_t {
  kRdbString = 0,
  kRdbList = 1,
  kRdbSet = 2,
  kRdbZset = 3,  // scores as text
  kRdbHash = 4,
  kRdbZset2 = 5,  // scores as binary doubles
  kRdbModule = 6,
  kRdbModule2 = 7,
  kRdbHashZipmap = 9,
  kRdbListZiplist = 10,
  kRdbSetIntset = 11,
  kRdbZsetZiplist = 12,
  kRdbHashZiplist = 13,
  kRdbListQuicklist = 14,
  kRdbStreamListpacks = 15,
  kRdbHashListpack = 16,
  kRdbZsetListpack = 17,
  kRdbListQuicklist2 = 18,
  kRdbStreamListpacks2 = 19,
  kRdbSetListpack = 20,
};

// RDB lengths: the top two bits of the first byte say how long the length is;
// 0b11 marks a specially encoded string instead (rdb.h).
constexpr uint8_t kLen6 = 0, kLen14 = 1, kLen32Or64 = 2, kEncoded = 3;
constexpr uint8_t kLen32 = 0x80, kLen64 = 0x81;
constexpr uint8_t kEncInt8 = 0, kEncInt16 = 1, kEncInt32 = 2, kEncLzf = 3;
constexpr size_t kVersionBytes = 2, kCrcBytes = 8;  // the footer

Status BadFormat() { return InvalidArgument("ERR Bad data format"); }
Status WrongFooter() { return InvalidArgument("ERR DUMP payload version or checksum are wrong"); }

// A score written as text (old sorted sets, ziplists, listpacks): strtod over
// the whole text, as Redis reads it.
Result<double> ParseRdbScore(std::string_view text) {
  const std::string copy(text);  // strtod needs the terminating NUL
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size()) return BadFormat();
  return v;
}

// The signed value of the low `bytes` bytes of `v`.
int64_t SignExtend(uint64_t v, size_t bytes) {
  const unsigned shift = 64 - 8 * static_cast<unsigned>(bytes);
  return static_cast<int64_t>(v << shift) >> shift;
}

// What a payload may decode to: the bytes of its strings and elements, each
// counted with kElementCost more for its allocation, at most `bytes` in all
// (LZF and tiny elements make a value much larger than its payload).
class Budget {
 public:
  static constexpr uint64_t kElementCost = 32;
  explicit Budget(uint64_t bytes) : limit_(bytes), left_(bytes) {}
  // The string `s`, or a number's decimal text, counted.
  Result<std::string> Text(std::string_view s) {
    RAMPART_RETURN_IF_ERROR(Take(s.size()));
    return std::string(s);
  }
  Result<std::string> Integer(int64_t v) {
    RAMPART_RETURN_IF_ERROR(Take(0));
    return std::to_string(v);
  }
  // Counts a string of `n` bytes about to be made.
  Status Take(uint64_t n) {
    if (n >= left_ || left_ - n < kElementCost) {
      return InvalidArgument("ERR rampart: the DUMP payload decodes to more than ", limit_,
                             " bytes, the most RESTORE builds");
    }
    left_ -= n + kElementCost;
    return Status::Ok();
  }

 private:
  uint64_t limit_;
  uint64_t left_;
};

// Reads RDB-encoded items from a byte string; every read fails with
// BadFormat() past its end instead of reading beyond it, and every string
// made is counted in the budget.
class Reader {
 public:
  Reader(std::string_view bytes, Budget& budget) : b_(bytes), budget_(&budget) {}

  Budget& budget() { return *budget_; }

  bool done() const { return pos_ == b_.size(); }
  size_t left() const { return b_.size() - pos_; }

  Result<std::string_view> Bytes(uint64_t n) {
    if (n > left()) return BadFormat();
    std::string_view out = b_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  Result<uint8_t> Byte() {
    RAMPART_ASSIGN_OR_RETURN(std::string_view b, Bytes(1));
    return static_cast<uint8_t>(b[0]);
  }
  Result<uint64_t> LittleEndian(size_t n) {
    RAMPART_ASSIGN_OR_RETURN(std::string_view b, Bytes(n));
    return LoadLittleEndian(b, b.size());
  }
  Result<uint64_t> BigEndian(size_t n) {
    RAMPART_ASSIGN_OR_RETURN(std::string_view b, Bytes(n));
    uint64_t v = 0;
    for (char c : b) v = v << 8 | static_cast<uint8_t>(c);
    return v;
  }

  // rdbLoadLen: a plain length (a special string encoding is bad here).
  Result<uint64_t> Length() {
    RAMPART_ASSIGN_OR_RETURN(LengthOrEncoding l, ReadLengthOrEncoding());
    if (l.encoded) return BadFormat();
    return l.value;
  }
  // A collection's element count: at least 1 (Redis refuses empty keys), and
  // no more than the bytes left could hold (each element takes a byte).
  Result<uint64_t> Count() {
    RAMPART_ASSIGN_OR_RETURN(uint64_t n, Length());
    if (n == 0 || n > left()) return BadFormat();
    return n;
  }

  // rdbGenericLoadStringObject: bytes, an integer, or LZF-compressed bytes.
  Result<std::string> String() {
    RAMPART_ASSIGN_OR_RETURN(LengthOrEncoding l, ReadLengthOrEncoding());
    if (!l.encoded) {
      RAMPART_ASSIGN_OR_RETURN(std::string_view b, Bytes(l.value));
      return budget_->Text(b);
    }
    switch (l.value) {
      case kEncInt8:
      case kEncInt16:
      case kEncInt32: {
        const size_t bytes = size_t{1} << l.value;
        RAMPART_ASSIGN_OR_RETURN(uint64_t v, LittleEndian(bytes));
        return budget_->Integer(SignExtend(v, bytes));
      }
      case kEncLzf: return Lzf();
      default: return BadFormat();
    }
  }

  // A binary double (RDB_TYPE_ZSET_2's scores).
  Result<double> BinaryDouble() {
    RAMPART_ASSIGN_OR_RETURN(uint64_t bits, LittleEndian(8));
    return std::bit_cast<double>(bits);
  }
  // rdbLoadDoubleValue: a length byte and the number as text; 253 NaN,
  // 254 +inf, 255 -inf (RDB_TYPE_ZSET's scores).
  Result<double> TextDouble();

 private:
  struct LengthOrEncoding {
    uint64_t value = 0;
    bool encoded = false;
  };
  Result<LengthOrEncoding> ReadLengthOrEncoding() {
    RAMPART_ASSIGN_OR_RETURN(uint8_t first, Byte());
    switch (first >> 6) {
      case kLen6: return LengthOrEncoding{first & 0x3fu, false};
      case kLen14: {
        RAMPART_ASSIGN_OR_RETURN(uint8_t second, Byte());
        return LengthOrEncoding{(first & 0x3fu) << 8 | second, false};
      }
      case kEncoded: return LengthOrEncoding{first & 0x3fu, true};
      case kLen32Or64: break;
    }
    if (first != kLen32 && first != kLen64) return BadFormat();
    RAMPART_ASSIGN_OR_RETURN(uint64_t v, BigEndian(first == kLen32 ? 4 : 8));
    return LengthOrEncoding{v, false};
  }
  Result<std::string> Lzf();

  std::string_view b_;
  Budget* budget_;
  size_t pos_ = 0;
};

Result<double> Reader::TextDouble() {
  RAMPART_ASSIGN_OR_RETURN(uint8_t len, Byte());
  switch (len) {
    case 253: return std::numeric_limits<double>::quiet_NaN();
    case 254: return std::numeric_limits<double>::infinity();
    case 255: return -std::numeric_limits<double>::infinity();
    default: break;
  }
  RAMPART_ASSIGN_OR_RETURN(std::string_view text, Bytes(len));
  return ParseRdbScore(text);
}

Result<std::string> Reader::Lzf() {
  RAMPART_ASSIGN_OR_RETURN(uint64_t compressed, Length());
  RAMPART_ASSIGN_OR_RETURN(uint64_t length, Length());
  RAMPART_ASSIGN_OR_RETURN(std::string_view in, Bytes(compressed));
  // LZF expands at most about 1:90 (a 3-byte back reference copies 264 bytes).
  if (length == 0 || length / 100 > compressed) return BadFormat();
  RAMPART_RETURN_IF_ERROR(budget_->Take(length));  // before it is allocated
  std::string out(length, '\0');
  const unsigned got = lzf_decompress(in.data(), static_cast<unsigned>(in.size()), out.data(),
                                      static_cast<unsigned>(out.size()));
  if (got != length) return BadFormat();
  return out;
}

// ---- Packed encodings: ziplist, listpack, intset, zipmap ---------------------

// The elements of a ziplist (Redis's ziplist.c layout: u32 bytes, u32 tail,
// u16 count, entries of prevlen | encoding | data, 0xff).
Result<std::vector<std::string>> ZiplistElements(std::string_view zl, Budget& budget) {
  Reader r(zl, budget);
  RAMPART_ASSIGN_OR_RETURN(uint64_t total, r.LittleEndian(4));
  RAMPART_RETURN_IF_ERROR(r.Bytes(6).status());  // tail offset, count
  if (total != zl.size()) return BadFormat();
  std::vector<std::string> out;
  for (;;) {
    RAMPART_ASSIGN_OR_RETURN(uint8_t prevlen, r.Byte());
    if (prevlen == 0xff) break;
    if (prevlen == 0xfe) {
      RAMPART_RETURN_IF_ERROR(r.Bytes(4).status());
    }
    RAMPART_ASSIGN_OR_RETURN(uint8_t enc, r.Byte());
    uint64_t str_len = 0;
    switch (enc >> 6) {
      case 0: str_len = enc & 0x3fu; break;
      case 1: {
        RAMPART_ASSIGN_OR_RETURN(uint8_t low, r.Byte());
        str_len = (enc & 0x3fu) << 8 | low;
        break;
      }
      case 2: {
        if (enc != 0x80) return BadFormat();
        RAMPART_ASSIGN_OR_RETURN(str_len, r.BigEndian(4));
        break;
      }
      default: {  // an integer
        size_t bytes = 0;
        switch (enc) {
          case 0xc0: bytes = 2; break;
          case 0xd0: bytes = 4; break;
          case 0xe0: bytes = 8; break;
          case 0xf0: bytes = 3; break;
          case 0xfe: bytes = 1; break;
          default:
            if (enc < 0xf1 || enc > 0xfd) return BadFormat();
            RAMPART_ASSIGN_OR_RETURN(std::string e, budget.Integer((enc & 0x0f) - 1));  // 0..12
            out.push_back(std::move(e));
            continue;
        }
        RAMPART_ASSIGN_OR_RETURN(uint64_t v, r.LittleEndian(bytes));
        RAMPART_ASSIGN_OR_RETURN(std::string e, budget.Integer(SignExtend(v, bytes)));
        out.push_back(std::move(e));
        continue;
      }
    }
    RAMPART_ASSIGN_OR_RETURN(std::string_view s, r.Bytes(str_len));
    RAMPART_ASSIGN_OR_RETURN(std::string e, budget.Text(s));
    out.push_back(std::move(e));
  }
  if (!r.done()) return BadFormat();
  return out;
}

// The size of a listpack entry's back-length field for an entry (encoding and
// data) of `n` bytes (listpack.c, lpEncodeBacklen).
size_t BacklenBytes(uint64_t n) {
  if (n <= 127) return 1;
  if (n < 16383) return 2;
  if (n < 2097151) return 3;
  if (n < 268435455) return 4;
  return 5;
}

// The elements of a listpack (listpack.c: u32 bytes, u16 count, entries of
// encoding | data | backlen, 0xff). Each entry's back-length is checked.
Result<std::vector<std::string>> ListpackElements(std::string_view lp, Budget& budget) {
  Reader r(lp, budget);
  RAMPART_ASSIGN_OR_RETURN(uint64_t total, r.LittleEndian(4));
  RAMPART_RETURN_IF_ERROR(r.LittleEndian(2).status());  // count (65535: unknown)
  if (total != lp.size()) return BadFormat();
  std::vector<std::string> out;
  for (;;) {
    const size_t start = lp.size() - r.left();
    RAMPART_ASSIGN_OR_RETURN(uint8_t enc, r.Byte());
    if (enc == 0xff) break;
    std::optional<uint64_t> str_len;  // a string of this length, else an integer
    int64_t integer = 0;
    if ((enc & 0x80) == 0) {
      integer = enc;  // 7-bit unsigned
    } else if ((enc & 0xc0) == 0x80) {
      str_len = enc & 0x3fu;
    } else if ((enc & 0xe0) == 0xc0) {
      RAMPART_ASSIGN_OR_RETURN(uint8_t low, r.Byte());
      const int64_t raw = (enc & 0x1f) << 8 | low;  // 13 bits, two's complement
      integer = raw >= 4096 ? raw - 8192 : raw;
    } else if ((enc & 0xf0) == 0xe0) {
      RAMPART_ASSIGN_OR_RETURN(uint8_t low, r.Byte());
      str_len = (enc & 0x0fu) << 8 | low;
    } else if (enc == 0xf0) {
      RAMPART_ASSIGN_OR_RETURN(str_len, r.LittleEndian(4));
    } else if (enc >= 0xf1 && enc <= 0xf4) {
      constexpr size_t kIntBytes[] = {2, 3, 4, 8};
      const size_t bytes = kIntBytes[enc - 0xf1];
      RAMPART_ASSIGN_OR_RETURN(uint64_t v, r.LittleEndian(bytes));
      integer = SignExtend(v, bytes);
    } else {
      return BadFormat();
    }
    std::string_view s;
    if (str_len.has_value()) {
      RAMPART_ASSIGN_OR_RETURN(s, r.Bytes(*str_len));
    }
    RAMPART_ASSIGN_OR_RETURN(std::string e, str_len.has_value() ? budget.Text(s) : budget.Integer(integer));
    out.push_back(std::move(e));
    const uint64_t entry = lp.size() - r.left() - start;
    RAMPART_ASSIGN_OR_RETURN(std::string_view backlen, r.Bytes(BacklenBytes(entry)));
    uint64_t stored = 0;  // 7 bits a byte, most significant first
    for (char c : backlen) stored = stored << 7 | (static_cast<uint8_t>(c) & 0x7fu);
    if (stored != entry) return BadFormat();
  }
  if (!r.done()) return BadFormat();
  return out;
}

// The members of an intset (intset.c: u32 width, u32 count, little-endian).
Result<std::vector<std::string>> IntsetMembers(std::string_view is, Budget& budget) {
  Reader r(is, budget);
  RAMPART_ASSIGN_OR_RETURN(uint64_t width, r.LittleEndian(4));
  RAMPART_ASSIGN_OR_RETURN(uint64_t count, r.LittleEndian(4));
  if ((width != 2 && width != 4 && width != 8) || count * width != r.left()) return BadFormat();
  std::vector<std::string> out;
  out.reserve(count);
  for (uint64_t n = 0; n < count; ++n) {
    RAMPART_ASSIGN_OR_RETURN(uint64_t v, r.LittleEndian(width));
    RAMPART_ASSIGN_OR_RETURN(std::string e, budget.Integer(SignExtend(v, width)));
    out.push_back(std::move(e));
  }
  return out;
}

// The fields and values of a zipmap (zipmap.c, Redis before 2.6: u8 count,
// then len key len free value free-bytes, 0xff).
Result<std::vector<std::string>> ZipmapElements(std::string_view zm, Budget& budget) {
  Reader r(zm, budget);
  RAMPART_RETURN_IF_ERROR(r.Byte().status());  // count (254 or more: unknown)
  std::vector<std::string> out;
  for (;;) {
    RAMPART_ASSIGN_OR_RETURN(uint8_t len_byte, r.Byte());
    if (len_byte == 0xff) break;
    uint64_t len = len_byte;
    if (len_byte == 0xfe) {
      RAMPART_ASSIGN_OR_RETURN(len, r.LittleEndian(4));
    }
    const bool is_value = out.size() % 2 == 1;
    uint8_t free = 0;
    if (is_value) {
      RAMPART_ASSIGN_OR_RETURN(free, r.Byte());
    }
    RAMPART_ASSIGN_OR_RETURN(std::string_view s, r.Bytes(len));
    RAMPART_ASSIGN_OR_RETURN(std::string e, budget.Text(s));
    out.push_back(std::move(e));
    if (is_value) {
      RAMPART_RETURN_IF_ERROR(r.Bytes(free).status());
    }
  }
  if (!r.done() || out.size() % 2 != 0) return BadFormat();
  return out;
}

// ---- Values -------------------------------------------------------------------

// Pairs flat [a0, b0, a1, b1, ...] elements (hashes and sorted sets in
// ziplists, listpacks and zipmaps).
Result<std::vector<std::pair<std::string, std::string>>> Pairs(std::vector<std::string> flat) {
  if (flat.empty() || flat.size() % 2 != 0) return BadFormat();
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(flat.size() / 2);
  for (size_t n = 0; n < flat.size(); n += 2) {
    out.emplace_back(std::move(flat[n]), std::move(flat[n + 1]));
  }
  return out;
}

Result<DumpedValue> ScoredFromPairs(std::vector<std::pair<std::string, std::string>> pairs) {
  DumpedValue v{.type = DumpedValue::Type::kZset};
  v.scored.reserve(pairs.size());
  for (auto& [member, score_text] : pairs) {
    RAMPART_ASSIGN_OR_RETURN(double score, ParseRdbScore(score_text));
    v.scored.emplace_back(std::move(member), score);
  }
  return v;
}

// A list from its quicklist nodes: ziplists (RDB_TYPE_LIST_QUICKLIST) or, in
// RDB_TYPE_LIST_QUICKLIST_2, listpacks (container 2) and plain elements (1).
Result<DumpedValue> Quicklist(Reader& r, bool version2) {
  DumpedValue v{.type = DumpedValue::Type::kList};
  RAMPART_ASSIGN_OR_RETURN(uint64_t nodes, r.Count());
  for (uint64_t n = 0; n < nodes; ++n) {
    uint64_t container = 2;
    if (version2) {
      RAMPART_ASSIGN_OR_RETURN(container, r.Length());
    }
    RAMPART_ASSIGN_OR_RETURN(std::string blob, r.String());
    if (container == 1) {
      v.elements.push_back(std::move(blob));
      continue;
    }
    if (container != 2) return BadFormat();
    RAMPART_ASSIGN_OR_RETURN(std::vector<std::string> elements,
                             version2 ? ListpackElements(blob, r.budget())
                                      : ZiplistElements(blob, r.budget()));
    // An empty node is skipped, as Redis does (an empty list is refused below).
    for (std::string& e : elements) v.elements.push_back(std::move(e));
  }
  return v;
}

// The object of `type` at the reader (rdbLoadObject, for the types rampart
// serves).
Result<DumpedValue> LoadObject(uint8_t type, Reader& r) {
  using T = DumpedValue::Type;
  switch (type) {
    case kRdbString: {
      RAMPART_ASSIGN_OR_RETURN(std::string s, r.String());
      return DumpedValue{.type = T::kString, .string = std::move(s)};
    }
    case kRdbList:
    case kRdbSet: {
      DumpedValue v{.type = type == kRdbList ? T::kList : T::kSet};
      RAMPART_ASSIGN_OR_RETURN(uint64_t n, r.Count());
      for (uint64_t i = 0; i < n; ++i) {
        RAMPART_ASSIGN_OR_RETURN(std::string e, r.String());
        v.elements.push_back(std::move(e));
      }
      return v;
    }
    case kRdbZset:
    case kRdbZset2: {
      DumpedValue v{.type = T::kZset};
      RAMPART_ASSIGN_OR_RETURN(uint64_t n, r.Count());
      for (uint64_t i = 0; i < n; ++i) {
        RAMPART_ASSIGN_OR_RETURN(std::string member, r.String());
        RAMPART_ASSIGN_OR_RETURN(double score, type == kRdbZset ? r.TextDouble() : r.BinaryDouble());
        v.scored.emplace_back(std::move(member), score);
      }
      return v;
    }
    case kRdbHash: {
      DumpedValue v{.type = T::kHash};
      RAMPART_ASSIGN_OR_RETURN(uint64_t n, r.Count());
      for (uint64_t i = 0; i < n; ++i) {
        RAMPART_ASSIGN_OR_RETURN(std::string field, r.String());
        RAMPART_ASSIGN_OR_RETURN(std::string value, r.String());
        v.fields.emplace_back(std::move(field), std::move(value));
      }
      return v;
    }
    case kRdbListQuicklist:
    case kRdbListQuicklist2: return Quicklist(r, type == kRdbListQuicklist2);
    default: break;
  }
  // One blob in a packed encoding.
  RAMPART_ASSIGN_OR_RETURN(std::string blob, r.String());
  switch (type) {
    case kRdbListZiplist: {
      RAMPART_ASSIGN_OR_RETURN(std::vector<std::string> e, ZiplistElements(blob, r.budget()));
      return DumpedValue{.type = T::kList, .elements = std::move(e)};
    }
    case kRdbSetIntset:
    case kRdbSetListpack: {
      RAMPART_ASSIGN_OR_RETURN(std::vector<std::string> e,
                               type == kRdbSetIntset ? IntsetMembers(blob, r.budget())
                                                     : ListpackElements(blob, r.budget()));
      return DumpedValue{.type = T::kSet, .elements = std::move(e)};
    }
    case kRdbHashZipmap:
    case kRdbHashZiplist:
    case kRdbHashListpack: {
      auto flat = type == kRdbHashZipmap    ? ZipmapElements(blob, r.budget())
                  : type == kRdbHashZiplist ? ZiplistElements(blob, r.budget())
                                            : ListpackElements(blob, r.budget());
      RAMPART_RETURN_IF_ERROR(flat.status());
      RAMPART_ASSIGN_OR_RETURN(auto pairs, Pairs(std::move(*flat)));
      return DumpedValue{.type = T::kHash, .fields = std::move(pairs)};
    }
    case kRdbZsetZiplist:
    case kRdbZsetListpack: {
      auto flat = type == kRdbZsetZiplist ? ZiplistElements(blob, r.budget())
                                          : ListpackElements(blob, r.budget());
      RAMPART_RETURN_IF_ERROR(flat.status());
      RAMPART_ASSIGN_OR_RETURN(auto pairs, Pairs(std::move(*flat)));
      return ScoredFromPairs(std::move(pairs));
    }
    default: return BadFormat();
  }
}

// Redis refuses what its types cannot hold: empty collections, a member or
// field twice, NaN scores.
Status CheckValue(const DumpedValue& v) {
  using T = DumpedValue::Type;
  // The names a set, hash or sorted set holds once each; a list's elements.
  std::vector<std::string_view> names;
  for (const std::string& e : v.elements) names.push_back(e);
  for (const auto& [field, value] : v.fields) names.push_back(field);
  for (const auto& [member, score] : v.scored) {
    if (std::isnan(score)) return BadFormat();
    names.push_back(member);
  }
  if (v.type == T::kString) return Status::Ok();
  if (names.empty()) return BadFormat();
  if (v.type == T::kList) return Status::Ok();
  std::unordered_set<std::string_view> seen;
  for (std::string_view name : names) {
    if (!seen.insert(name).second) return BadFormat();
  }
  return Status::Ok();
}

// ---- Writing -------------------------------------------------------------------

void PutLength(std::string& out, uint64_t n) {
  if (n < (1u << 6)) {
    out.push_back(static_cast<char>(n));
  } else if (n < (1u << 14)) {
    out.push_back(static_cast<char>(kLen14 << 6 | n >> 8));
    out.push_back(static_cast<char>(n & 0xff));
  } else {
    const bool wide = n > std::numeric_limits<uint32_t>::max();
    out.push_back(static_cast<char>(wide ? kLen64 : kLen32));
    for (int shift = wide ? 56 : 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>(n >> shift));  // big-endian
    }
  }
}

void PutString(std::string& out, std::string_view s) {
  PutLength(out, s.size());
  out.append(s);
}

}  // namespace

uint64_t RedisCrc64(std::string_view bytes) {
  // ISA-L inverts the CRC on the way in and out; Redis's crc64 does neither.
  return ~crc64_jones_refl(~uint64_t{0}, reinterpret_cast<const unsigned char*>(bytes.data()),
                           bytes.size());
}

std::string EncodeDumpPayload(const DumpedValue& v) {
  using T = DumpedValue::Type;
  std::string out;
  switch (v.type) {
    case T::kString:
      out.push_back(static_cast<char>(kRdbString));
      PutString(out, v.string);
      break;
    case T::kList:
    case T::kSet:
      out.push_back(static_cast<char>(v.type == T::kList ? kRdbList : kRdbSet));
      PutLength(out, v.elements.size());
      for (const std::string& e : v.elements) PutString(out, e);
      break;
    case T::kHash:
      out.push_back(static_cast<char>(kRdbHash));
      PutLength(out, v.fields.size());
      for (const auto& [field, value] : v.fields) {
        PutString(out, field);
        PutString(out, value);
      }
      break;
    case T::kZset:
      out.push_back(static_cast<char>(kRdbZset2));
      PutLength(out, v.scored.size());
      for (const auto& [member, score] : v.scored) {
        PutString(out, member);
        PutLittleEndian(out, std::bit_cast<uint64_t>(score), 8);
      }
      break;
  }
  AppendDumpFooter(out, kDumpRdbVersion);
  return out;
}

void AppendDumpFooter(std::string& body, uint16_t rdb_version) {
  PutLittleEndian(body, rdb_version, kVersionBytes);
  PutLittleEndian(body, RedisCrc64(body), kCrcBytes);
}

Result<DumpedValue> DecodeDumpPayload(std::string_view payload, uint64_t max_decoded_bytes) {
  if (payload.size() < kVersionBytes + kCrcBytes) return WrongFooter();
  const std::string_view value = payload.substr(0, payload.size() - kVersionBytes - kCrcBytes);
  const std::string_view checked = payload.substr(0, payload.size() - kCrcBytes);  // value, version
  if (LoadLittleEndian(payload.substr(value.size()), kVersionBytes) > kRestoreMaxRdbVersion) {
    return WrongFooter();
  }
  if (LoadLittleEndian(payload.substr(checked.size()), kCrcBytes) != RedisCrc64(checked)) return WrongFooter();

  Budget budget(max_decoded_bytes);
  Reader r(value, budget);
  RAMPART_ASSIGN_OR_RETURN(uint8_t type, r.Byte());
  if (type == kRdbStreamListpacks || type == kRdbStreamListpacks2) {
    return InvalidArgument("ERR Bad data format: a stream, which rampart does not serve");
  }
  if (type == kRdbModule || type == kRdbModule2) {
    return InvalidArgument("ERR Bad data format: a module's value, which rampart does not serve");
  }
  RAMPART_ASSIGN_OR_RETURN(DumpedValue v, LoadObject(type, r));
  if (!r.done()) return BadFormat();
  RAMPART_RETURN_IF_ERROR(CheckValue(v));
  return v;
}

}  // namespace rampart::proxy
