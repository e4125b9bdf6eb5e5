// Redis's DUMP payload: payloads redis-server 7.0.15 wrote (captured with its
// DUMP), the older encodings built by hand from Redis's layouts, what rampart
// writes, damaged payloads; and DUMP / RESTORE through the command harness.
// tests/test_proxy_dump.py checks the same against a running redis-server.
#include "proxy/redis_dump.h"

#include <gtest/gtest.h>
#include <lzf.h>

#include <limits>
#include <string>

#include "proxy/command_test_util.h"

namespace rampart::proxy {
namespace {

using T = DumpedValue::Type;
using testing::Bulk;
using testing::Bulks;
using testing::CommandHarness;
using testing::Err;
using testing::Int;
using testing::kNil;
using testing::kOk;

const std::string kWrongFooter = Err("ERR DUMP payload version or checksum are wrong");
const std::string kBadFormat = Err("ERR Bad data format");
const std::string kBusyKey = Err("BUSYKEY Target key name already exists.");

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

// `body` with the RDB version and its CRC-64 after it, as DUMP ends a payload.
std::string WithFooter(std::string body, uint16_t version = 10) {
  AppendDumpFooter(body, version);
  return body;
}

DumpedValue Decode(std::string_view payload) {
  auto v = DecodeDumpPayload(payload);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : DumpedValue{};
}

std::string DecodeError(std::string_view payload) {
  auto v = DecodeDumpPayload(payload);
  EXPECT_FALSE(v.ok());
  return v.ok() ? std::string() : std::string(v.status().message());
}

TEST(RedisCrc64, IsRedisCrc64) {
  // Redis's crc64.c test vector.
  EXPECT_EQ(RedisCrc64("123456789"), 0xe9c6d914c4b8d9caULL);
  EXPECT_EQ(RedisCrc64(""), 0u);
}

// Payloads redis-server 7.0.15 answered to DUMP (its default configuration).
TEST(DecodeDumpPayload, ReadsWhatRedis70Dumps) {
  // SET s hello: a plain string.
  DumpedValue v = Decode(std::string(
      "\x00\x05\x68\x65\x6c\x6c\x6f\x0a\x00\x63\x72\xdf\x76\x65\x34\x20\x0a", 17));
  EXPECT_EQ(v.type, T::kString);
  EXPECT_EQ(v.string, "hello");
  // SET s 123 / -70000: integer encodings.
  EXPECT_EQ(Decode(std::string(
      "\x00\xc0\x7b\x0a\x00\x48\xe2\x53\xe1\x00\x7a\x67\xb9", 13)).string, "123");
  EXPECT_EQ(Decode(std::string(
      "\x00\xc2\x90\xee\xfe\xff\x0a\x00\x28\x75\xde\x7b\x13\xeb\x28\x00", 16)).string, "-70000");
  // SET s aaa…(100): LZF-compressed.
  EXPECT_EQ(Decode(std::string(
      "\x00\xc3\x09\x40\x64\x01\x61\x61\xe0\x57\x00\x01\x61\x61\x0a\x00\xe8\xa3\xb5\x07"
      "\xb0\x6d\xf2\x71", 24)).string,
            std::string(100, 'a'));
  // RPUSH l 0 -1 127 128 -4096 4095 40000 -8388608 2147483648 1099511627776 x*70:
  // a quicklist of one listpack (every integer width, a 12-bit string
  // length), itself LZF-compressed.
  v = Decode(std::string(
      "\x12\x01\x02\xc3\x3c\x40\x7e\x1f\x7e\x00\x00\x00\x0b\x00\x00\x01\xdf\xff\x02\x7f\x01\xc0\x80"
      "\x02\xd0\x00\x02\xcf\xff\x02\xf2\x40\x9c\x00\x04\xf2\x00\x00\x80\x04\x00\xf4\x20\x1f\x00\x80"
      "\x20\x03\x01\x00\x09\x40\x09\x20\x28\x20\x09\x02\xe0\x46\x78\xe0\x3c\x00\x01\x48\xff\x0a\x00"
      "\x43\x9f\xb6\x75\x80\xc8\x5a\xdf",
      77));
  EXPECT_EQ(v.type, T::kList);
  EXPECT_EQ(v.elements, (std::vector<std::string>{"0", "-1", "127", "128", "-4096", "4095", "40000",
                                                  "-8388608", "2147483648", "1099511627776",
                                                  std::string(70, 'x')}));
  // SADD i 1 2 300: an intset of 16-bit integers; SADD i 1 2^40: of 64-bit.
  v = Decode(std::string(
      "\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x2c\x01\x0a\x00\xe5\x10"
      "\xb2\x8e\x7b\x95\x29\xaa", 26));
  EXPECT_EQ(v.type, T::kSet);
  EXPECT_EQ(v.elements, (std::vector<std::string>{"1", "2", "300"}));
  v = Decode(std::string(
      "\x0b\x18\x08\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x01\x00\x00\x0a\x00\x31\x22\xf0\x6d\xf5\x42\xc0\xb4",
      36));
  EXPECT_EQ(v.elements, (std::vector<std::string>{"1", "1099511627776"}));
  // SADD s a b: a hash table set (type 2).
  v = Decode(std::string("\x02\x02\x01\x62\x01\x61\x0a\x00\x75\xd9\x9d\x83\x5e\xf8\x5f\x65", 16));
  EXPECT_EQ(v.type, T::kSet);
  EXPECT_EQ(v.elements, (std::vector<std::string>{"b", "a"}));
  // HSET h f v n 7: a listpack hash.
  v = Decode(std::string(
      "\x10\x12\x12\x00\x00\x00\x04\x00\x81\x66\x02\x81\x76\x02\x81\x6e\x02\x07\x01\xff"
      "\x0a\x00\xb8\x2a\xde\xa8\x40\x7f\xfa\xa8", 30));
  EXPECT_EQ(v.type, T::kHash);
  EXPECT_EQ(v.fields, (std::vector<std::pair<std::string, std::string>>{{"f", "v"}, {"n", "7"}}));
  // ZADD z -3 m inf n 0.25 o: a listpack sorted set (an integer score, text
  // scores).
  v = Decode(std::string(
      "\x11\x1e\x1e\x00\x00\x00\x06\x00\x81\x6d\x02\xdf\xfd\x02\x81\x6f\x02\x84\x30\x2e"
      "\x32\x35\x05\x81\x6e\x02\x83\x69\x6e\x66\x04\xff\x0a\x00\xae\x66\x1f\x47\x1d\xd1"
      "\xc6\x0b",
      42));
  EXPECT_EQ(v.type, T::kZset);
  EXPECT_EQ(v.scored, (std::vector<std::pair<std::string, double>>{
                          {"m", -3}, {"o", 0.25}, {"n", std::numeric_limits<double>::infinity()}}));
}

// A ziplist of "ab", 5 (an immediate) and -300 (int16), by ziplist.c's layout.
const std::string kZiplist = Bytes({0x15, 0, 0, 0, 0x10, 0, 0, 0, 3, 0,  // bytes, tail, count
                                    0x00, 0x02, 'a', 'b',                // "ab"
                                    0x04, 0xf6,                          // 5
                                    0x02, 0xc0, 0xd4, 0xfe,              // -300
                                    0xff});

TEST(DecodeDumpPayload, ReadsOlderEncodings) {
  // Redis 3.2–6.2 lists: a quicklist of ziplists (14); before, one ziplist (10).
  const std::vector<std::string> list{"ab", "5", "-300"};
  EXPECT_EQ(Decode(WithFooter(Bytes({14, 1, 21}) + kZiplist, 9)).elements, list);
  EXPECT_EQ(Decode(WithFooter(Bytes({10, 21}) + kZiplist, 9)).elements, list);
  // The same ziplist as a hash (13) needs pairs: three elements are not.
  EXPECT_EQ(DecodeError(WithFooter(Bytes({13, 21}) + kZiplist, 9)), "ERR Bad data format");
  // Redis before 2.6: a zipmap hash (9), {f: vv} with a free byte after vv.
  DumpedValue v = Decode(WithFooter(Bytes({9, 9, 1, 1, 'f', 2, 1, 'v', 'v', 0, 0xff}), 6));
  EXPECT_EQ(v.fields, (std::vector<std::pair<std::string, std::string>>{{"f", "vv"}}));
  // A sorted set with text scores (3): "2.5" and 254 = +inf.
  v = Decode(WithFooter(Bytes({3, 2, 1, 'a', 3, '2', '.', '5', 1, 'b', 254}), 6));
  EXPECT_EQ(v.scored, (std::vector<std::pair<std::string, double>>{
                          {"a", 2.5}, {"b", std::numeric_limits<double>::infinity()}}));
  // Redis 7.2 (RDB 11): a listpack set (20) of "x" and 7.
  v = Decode(WithFooter(Bytes({20, 12, 12, 0, 0, 0, 2, 0, 0x81, 'x', 2, 7, 1, 0xff}), 11));
  EXPECT_EQ(v.type, T::kSet);
  EXPECT_EQ(v.elements, (std::vector<std::string>{"x", "7"}));
  // A quicklist node holding one large element as it is (container 1, plain).
  v = Decode(WithFooter(Bytes({18, 1, 1, 5, 'p', 'l', 'a', 'i', 'n'})));
  EXPECT_EQ(v.elements, (std::vector<std::string>{"plain"}));
}

TEST(EncodeDumpPayload, RoundTripsEveryType) {
  const std::string long_string(70000, 'q');  // a 32-bit length
  for (const DumpedValue& v : {
           DumpedValue{.type = T::kString, .string = ""},
           DumpedValue{.type = T::kString, .string = std::string(63, 's')},
           DumpedValue{.type = T::kString, .string = std::string(64, 's')},  // a 14-bit length
           DumpedValue{.type = T::kString, .string = std::string(16384, 's')},
           DumpedValue{.type = T::kString, .string = long_string},
           DumpedValue{.type = T::kList, .elements = {"a", "", "a", std::string(300, 'l')}},
           DumpedValue{.type = T::kSet, .elements = {"1", "two", std::string("\0\xff", 2)}},
           DumpedValue{.type = T::kHash, .fields = {{"f", ""}, {"", "v"}}},
           DumpedValue{.type = T::kZset,
                       .scored = {{"a", -std::numeric_limits<double>::infinity()},
                                  {"b", -0.0},
                                  {"c", 1e300}}},
       }) {
    const std::string payload = EncodeDumpPayload(v);
    const DumpedValue back = Decode(payload);
    EXPECT_EQ(back.type, v.type);
    EXPECT_EQ(back.string, v.string);
    EXPECT_EQ(back.elements, v.elements);
    EXPECT_EQ(back.fields, v.fields);
    EXPECT_EQ(back.scored, v.scored);
    EXPECT_EQ(payload.substr(payload.size() - 10, 2), std::string("\x0a\x00", 2));  // RDB 10
  }
}

TEST(DecodeDumpPayload, RefusesDamage) {
  const std::string good =
      EncodeDumpPayload(DumpedValue{.type = T::kHash, .fields = {{"f", "v"}, {"g", "w"}}});
  EXPECT_EQ(DecodeError("short"), "ERR DUMP payload version or checksum are wrong");
  std::string flipped = good;
  flipped[3] ^= 1;
  EXPECT_EQ(DecodeError(flipped), "ERR DUMP payload version or checksum are wrong");
  EXPECT_EQ(DecodeError(WithFooter(good.substr(0, good.size() - 10), 12)),
            "ERR DUMP payload version or checksum are wrong");  // RDB 12: newer than 7.2
  // Every prefix of the body, with a footer that matches it: refused.
  const std::string body = good.substr(0, good.size() - 10);
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_EQ(DecodeError(WithFooter(body.substr(0, n))), "ERR Bad data format") << n;
  }
  EXPECT_EQ(DecodeError(WithFooter(body + "x")), "ERR Bad data format");  // trailing bytes
  // What Redis's types cannot hold.
  EXPECT_EQ(DecodeError(WithFooter(Bytes({2, 2, 1, 'a', 1, 'a'}))), "ERR Bad data format");
  EXPECT_EQ(DecodeError(WithFooter(Bytes({4, 2, 1, 'f', 0, 1, 'f', 0}))), "ERR Bad data format");
  EXPECT_EQ(DecodeError(WithFooter(Bytes({1, 0}))), "ERR Bad data format");  // empty list
  EXPECT_EQ(DecodeError(WithFooter(Bytes({3, 1, 1, 'a', 253}))), "ERR Bad data format");  // NaN
  EXPECT_EQ(DecodeError(WithFooter(Bytes({42, 0}))), "ERR Bad data format");  // no such type
  EXPECT_NE(DecodeError(WithFooter(Bytes({15, 0}))).find("stream"), std::string::npos);
  // A listpack entry whose back-length disagrees with its size.
  const std::string bad_backlen = Bytes({20, 12, 12, 0, 0, 0, 2, 0, 0x81, 'x', 3, 7, 1, 0xff});
  EXPECT_EQ(DecodeError(WithFooter(bad_backlen, 11)), "ERR Bad data format");
  // An LZF string that does not decompress to its stated length: "ab", not 9.
  EXPECT_EQ(Decode(WithFooter(Bytes({0, 0xc3, 3, 2, 0x01, 'a', 'b'}))).string, "ab");
  EXPECT_EQ(DecodeError(WithFooter(Bytes({0, 0xc3, 3, 9, 0x01, 'a', 'b'}))), "ERR Bad data format");
}

// A string with its length as both RDB (rdbSaveLen) and a ziplist entry
// (ziplist.c) encode it: 6 bits, 14 bits (big-endian) or 0x80 and 32 bits
// (big-endian).
std::string LengthPrefixed(std::string_view s) {
  std::string e;
  if (s.size() < 64) {
    e.push_back(static_cast<char>(s.size()));
  } else if (s.size() < 16384) {
    e += Bytes({0x40 | static_cast<int>(s.size() >> 8), static_cast<int>(s.size() & 0xff)});
  } else {
    e += Bytes({0x80, 0, static_cast<int>(s.size() >> 16), static_cast<int>(s.size() >> 8 & 0xff),
                static_cast<int>(s.size() & 0xff)});
  }
  return e.append(s);
}
std::string ZlString(std::string_view s) { return LengthPrefixed(s); }
std::string RdbString(std::string_view s) { return LengthPrefixed(s); }
// A ziplist integer entry: its encoding byte and `bytes` little-endian bytes.
std::string ZlInt(int encoding, int64_t v, int bytes) {
  std::string e(1, static_cast<char>(encoding));
  for (int n = 0; n < bytes; ++n) e.push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * n)));
  return e;
}
// A ziplist of the entries, each after its prevlen (1 byte, or 0xfe and 4).
std::string Ziplist(const std::vector<std::string>& entries) {
  std::string body;
  size_t previous = 0, tail = 10;
  for (const std::string& e : entries) {
    tail = 10 + body.size();
    std::string prevlen(1, static_cast<char>(previous));
    if (previous >= 254) prevlen = Bytes({0xfe}) + ZlInt(0, static_cast<int64_t>(previous), 4).substr(1);
    body += prevlen + e;
    previous = prevlen.size() + e.size();
  }
  body.push_back(static_cast<char>(0xff));
  const std::string header = ZlInt(0, static_cast<int64_t>(10 + body.size()), 4).substr(1) +
                             ZlInt(0, static_cast<int64_t>(tail), 4).substr(1) +
                             ZlInt(0, static_cast<int64_t>(entries.size()), 2).substr(1);
  return header + body;
}
TEST(DecodeDumpPayload, ReadsEveryZiplistEntry) {
  const std::string s300(300, 'p'), s20000(20000, 'q');  // 14- and 32-bit lengths
  const std::string zl = Ziplist({ZlString(s300), ZlString("x"),  // "x" after a 5-byte prevlen
                                  ZlString(s20000), ZlInt(0xfe, -7, 1), ZlInt(0xc0, -300, 2),
                                  ZlInt(0xf0, -8000000, 3), ZlInt(0xd0, 2000000000, 4),
                                  ZlInt(0xe0, -5000000000, 8), ZlInt(0xf1, 0, 0), ZlInt(0xfd, 0, 0)});
  const DumpedValue list = Decode(WithFooter(Bytes({10}) + RdbString(zl), 9));
  EXPECT_EQ(list.elements, (std::vector<std::string>{s300, "x", s20000, "-7", "-300", "-8000000",
                                                     "2000000000", "-5000000000", "0", "12"}));
  // Redis 6's small hashes (13) and sorted sets (12): pairs in a ziplist.
  const std::string pairs = Ziplist({ZlString("f"), ZlString("v"), ZlString("g"), ZlInt(0xf3, 0, 0)});
  DumpedValue v = Decode(WithFooter(Bytes({13}) + RdbString(pairs), 9));
  EXPECT_EQ(v.fields, (std::vector<std::pair<std::string, std::string>>{{"f", "v"}, {"g", "2"}}));
  const std::string scores = Ziplist({ZlString("m"), ZlString("1.5"), ZlString("n"), ZlInt(0xfe, -4, 1)});
  v = Decode(WithFooter(Bytes({12}) + RdbString(scores), 9));
  EXPECT_EQ(v.scored, (std::vector<std::pair<std::string, double>>{{"m", 1.5}, {"n", -4}}));
  // A ziplist whose stated size is not its size.
  std::string short_zl = zl;
  short_zl[0] = static_cast<char>(short_zl[0] + 1);
  EXPECT_EQ(DecodeError(WithFooter(Bytes({10}) + RdbString(short_zl), 9)), "ERR Bad data format");
}

TEST(DecodeDumpPayload, ReadsEveryLengthWidth) {
  // RDB lengths in 32 and 64 bits, big-endian, even where 6 would do.
  EXPECT_EQ(Decode(WithFooter(Bytes({0, 0x80, 0, 0, 0, 2, 'h', 'i'}))).string, "hi");
  EXPECT_EQ(Decode(WithFooter(Bytes({0, 0x81, 0, 0, 0, 0, 0, 0, 0, 2, 'h', 'i'}))).string, "hi");
  EXPECT_EQ(DecodeError(WithFooter(Bytes({0, 0x82, 0, 0, 0, 2, 'h', 'i'}))), "ERR Bad data format");
  // A listpack string with a 32-bit length (0xf0) and back-lengths of 1, 2
  // and 3 bytes: entries of 127, 128 and 16383 bytes (encoding included).
  std::string lp;
  auto add = [&lp](std::string entry) {
    lp += entry;
    const uint64_t n = entry.size();
    if (n <= 127) {
      lp += Bytes({static_cast<int>(n)});
    } else if (n < 16383) {
      lp += Bytes({static_cast<int>(n >> 7), static_cast<int>((n & 127) | 128)});
    } else {
      lp += Bytes({static_cast<int>(n >> 14), static_cast<int>(((n >> 7) & 127) | 128),
                   static_cast<int>((n & 127) | 128)});
    }
  };
  const std::string a(125, 'a'), b(126, 'b'), c(16378, 'c');
  add(Bytes({0xe0, 125}) + a);                                    // 12-bit length: 127 bytes
  add(Bytes({0xe0, 126}) + b);                                    // 128 bytes
  add(Bytes({0xf0}) + ZlInt(0, 16378, 4).substr(1) + c);          // 16383 bytes
  lp = ZlInt(0, static_cast<int64_t>(lp.size() + 7), 4).substr(1) + Bytes({3, 0}) + lp + Bytes({0xff});
  const DumpedValue v = Decode(WithFooter(Bytes({20}) + RdbString(lp), 11));  // a listpack set
  EXPECT_EQ(v.elements, (std::vector<std::string>{a, b, c}));
}

// A small payload must not make RESTORE allocate without bound: LZF strings
// and many tiny elements are counted before they are made.
TEST(DecodeDumpPayload, StopsAtItsBudget) {
  const std::string zeros(4 << 20, '\0');
  std::string compressed(zeros.size(), '\0');
  compressed.resize(lzf_compress(zeros.data(), static_cast<unsigned>(zeros.size()), compressed.data(),
                                 static_cast<unsigned>(compressed.size())));
  ASSERT_GT(compressed.size(), 0u);
  ASSERT_LT(compressed.size(), 100'000u);
  std::string payload = Bytes({0, 0xc3});  // LZF: compressed length, length, bytes (32-bit lengths)
  for (uint64_t n : {static_cast<uint64_t>(compressed.size()), static_cast<uint64_t>(zeros.size())}) {
    payload += Bytes({0x80, static_cast<int>(n >> 24), static_cast<int>(n >> 16 & 0xff),
                      static_cast<int>(n >> 8 & 0xff), static_cast<int>(n & 0xff)});
  }
  payload = WithFooter(payload + compressed);
  EXPECT_EQ(Decode(payload).string, zeros);
  auto refused = DecodeDumpPayload(payload, 1 << 20);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "ERR rampart: the DUMP payload decodes to more than 1048576 bytes, the most RESTORE builds");
  // 40,000 one-byte members cost 32 bytes more each: over a 1 MiB budget.
  std::string set = Bytes({2, 0x80, 0, 0, 0x9c, 0x40});
  for (int n = 0; n < 40000; ++n) set += RdbString(std::to_string(n));
  EXPECT_TRUE(DecodeDumpPayload(WithFooter(set)).ok());
  EXPECT_FALSE(DecodeDumpPayload(WithFooter(set), 1 << 20).ok());
}

// Any byte of a valid payload changed (the CRC made to match): an error or a
// value, never a crash or a read past the payload (ASan runs this test).
TEST(DecodeDumpPayload, SurvivesEveryChangedByte) {
  std::vector<std::string> bodies;
  for (const DumpedValue& v : {DumpedValue{.type = T::kZset, .scored = {{"m", 1}, {"n", 2}}},
                               DumpedValue{.type = T::kList, .elements = {"a", "bb"}}}) {
    const std::string p = EncodeDumpPayload(v);
    bodies.push_back(p.substr(0, p.size() - 10));
  }
  bodies.push_back(Bytes({14, 1, 21}) + kZiplist);
  bodies.push_back(Bytes({20, 12, 12, 0, 0, 0, 2, 0, 0x81, 'x', 2, 7, 1, 0xff}));
  bodies.push_back(Bytes({9, 9, 1, 1, 'f', 2, 1, 'v', 'v', 0, 0xff}));
  size_t decoded = 0, refused = 0;
  for (const std::string& body : bodies) {
    for (size_t at = 0; at < body.size(); ++at) {
      for (int value : {0x00, 0x01, 0x3f, 0x40, 0x7f, 0x80, 0x81, 0xc3, 0xf0, 0xfe, 0xff}) {
        std::string changed = body;
        changed[at] = static_cast<char>(value);
        (DecodeDumpPayload(WithFooter(changed, 11)).ok() ? decoded : refused)++;
      }
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(decoded, 0u);
}

// ---- DUMP and RESTORE through the command harness ---------------------------

// The bytes of a bulk reply ("$N\r\n...\r\n").
std::string PayloadOf(const std::string& reply) {
  const size_t body = reply.find("\r\n") + 2;
  EXPECT_EQ(reply[0], '$') << reply;
  return reply.substr(body, reply.size() - body - 2);
}

TEST(DumpRestore, CopiesEveryTypeWithItsExpiry) {
  CommandHarness h;
  ASSERT_EQ(h.Run({"set", "s", "text", "px", "5000"}), kOk);
  ASSERT_EQ(h.Run({"rpush", "l", "a", "b", "a"}), Int(3));
  ASSERT_EQ(h.Run({"sadd", "set", "x", "y"}), Int(2));
  ASSERT_EQ(h.Run({"hset", "h", "f", "v"}), Int(1));
  ASSERT_EQ(h.Run({"zadd", "z", "2", "b", "1", "a"}), Int(2));
  for (const std::string key : {"s", "l", "set", "h", "z"}) {
    const std::string reply = h.Run({"dump", key});
    ASSERT_EQ(reply[0], '$') << reply;
    const std::string payload = PayloadOf(reply);
    EXPECT_EQ(h.Run({"restore", key + "2", "0", payload}), kOk);
    EXPECT_EQ(h.Run({"restore", key + "2", "0", payload}), kBusyKey);
    EXPECT_EQ(h.Run({"restore", key + "2", "1000", payload, "replace"}), kOk);
    EXPECT_EQ(h.Run({"pttl", key + "2"}), Int(1000));
    EXPECT_EQ(h.Run({"type", key + "2"}), h.Run({"type", key}));
  }
  EXPECT_EQ(h.Run({"get", "s2"}), Bulk("text"));
  EXPECT_EQ(h.Run({"lrange", "l2", "0", "-1"}), Bulks({"a", "b", "a"}));
  EXPECT_EQ(h.Run({"smembers", "set2"}), Bulks({"x", "y"}));
  EXPECT_EQ(h.Run({"hgetall", "h2"}), Bulks({"f", "v"}));
  EXPECT_EQ(h.Run({"zrange", "z2", "0", "-1", "withscores"}), Bulks({"a", "1", "b", "2"}));
  EXPECT_EQ(h.Run({"pttl", "s"}), Int(5000));  // the source keeps its PX 5000 ...
  EXPECT_EQ(h.Run({"restore", "s3", "0", PayloadOf(h.Run({"dump", "s"}))}), kOk);
  EXPECT_EQ(h.Run({"pttl", "s3"}), Int(-1));  // TTL 0: none
  EXPECT_EQ(h.Run({"dump", "missing"}), kNil);
}

TEST(DumpRestore, RefusesAsRedisDoes) {
  CommandHarness h;
  const std::string payload = EncodeDumpPayload(DumpedValue{.type = T::kString, .string = "v"});
  EXPECT_EQ(h.Run({"restore", "k", "-1", payload}), Err("ERR Invalid TTL value, must be >= 0"));
  EXPECT_EQ(h.Run({"restore", "k", "x", payload}), testing::kNotInteger);
  EXPECT_EQ(h.Run({"restore", "k", "0", "junk-payload"}), kWrongFooter);
  EXPECT_EQ(h.Run({"restore", "k", "0", WithFooter(Bytes({1, 0}))}), kBadFormat);
  EXPECT_EQ(h.Run({"restore", "k", "0", payload, "idletime", "-1"}),
            Err("ERR Invalid IDLETIME value, must be >= 0"));
  EXPECT_EQ(h.Run({"restore", "k", "0", payload, "freq", "256"}),
            Err("ERR Invalid FREQ value, must be >= 0 and <= 255"));
  EXPECT_EQ(h.Run({"restore", "k", "0", payload, "idletime", "1", "freq", "1"}), testing::kSyntax);
  EXPECT_EQ(h.Run({"restore", "k", "0", payload, "bogus"}), testing::kSyntax);
  EXPECT_EQ(h.Run({"exists", "k"}), Int(0));
  // Redis's order: options, then BUSYKEY, then the TTL, then the payload.
  ASSERT_EQ(h.Run({"set", "e", "x"}), kOk);
  EXPECT_EQ(h.Run({"restore", "e", "-1", "junk", "bogus"}), testing::kSyntax);
  EXPECT_EQ(h.Run({"restore", "e", "-1", "junk"}), kBusyKey);
  EXPECT_EQ(h.Run({"restore", "e", "-1", "junk", "replace"}), Err("ERR Invalid TTL value, must be >= 0"));
  EXPECT_EQ(h.Run({"restore", "e", "0", "junk", "replace"}), kWrongFooter);
  // A relative TTL past int64 wraps in Redis: the value is already expired.
  EXPECT_EQ(h.Run({"restore", "e", "9223372036854775807", payload, "replace"}), kOk);
  EXPECT_EQ(h.Run({"exists", "e"}), Int(0));
  EXPECT_EQ(h.Run({"restore", "k", "0", payload, "idletime", "5", "absttl", "replace"}), kOk);
  EXPECT_EQ(h.Run({"get", "k"}), Bulk("v"));
}

TEST(DumpRestore, AnExpiredTtlOnlyDeletesWithReplace) {
  CommandHarness h;
  const std::string payload = EncodeDumpPayload(DumpedValue{.type = T::kString, .string = "new"});
  ASSERT_EQ(h.Run({"set", "k", "old"}), kOk);
  const std::string past = std::to_string(testing::kNow - 1);
  EXPECT_EQ(h.Run({"restore", "k", past, payload, "absttl"}), kBusyKey);
  EXPECT_EQ(h.Run({"restore", "k", past, payload, "absttl", "replace"}), kOk);
  EXPECT_EQ(h.Run({"exists", "k"}), Int(0));
  EXPECT_EQ(h.Run({"restore", "k", std::to_string(testing::kNow + 5000), payload, "absttl"}), kOk);
  EXPECT_EQ(h.Run({"pttl", "k"}), Int(5000));
}

// Hashes and sorted sets of the older whole-value format dump like paged ones.
TEST(DumpRestore, DumpsWholeValueHashesAndSortedSets) {
  CommandHarness h;
  h.Put("h", EncodeHash({{"a", "1"}, {"b", "2"}}, 0));
  SortedSet z;
  z.Add("m", 2.5);
  z.Add("n", -1);
  h.Put("z", z.Encode(0));
  EXPECT_EQ(Decode(PayloadOf(h.Run({"dump", "h"}))).fields,
            (std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(Decode(PayloadOf(h.Run({"dump", "z"}))).scored,
            (std::vector<std::pair<std::string, double>>{{"n", -1}, {"m", 2.5}}));
}

// A collection larger than a page is restored on many pages and dumped whole.
TEST(DumpRestore, ManyPageCollections) {
  CommandHarness h;
  DumpedValue set{.type = T::kSet};
  DumpedValue list{.type = T::kList};
  for (int n = 0; n < 3000; ++n) {
    set.elements.push_back("member-" + std::to_string(n));
    list.elements.push_back(std::to_string(n % 7));
  }
  ASSERT_EQ(h.Run({"restore", "set", "0", EncodeDumpPayload(set)}), kOk);
  ASSERT_EQ(h.Run({"restore", "list", "0", EncodeDumpPayload(list)}), kOk);
  EXPECT_GT(h.TreeHeight("set", ValueType::kPagedSet), 0u);
  EXPECT_EQ(h.Run({"scard", "set"}), Int(3000));
  EXPECT_EQ(h.Run({"sismember", "set", "member-2999"}), Int(1));
  EXPECT_EQ(h.Run({"lindex", "list", "2998"}), Bulk("2"));
  EXPECT_EQ(Decode(PayloadOf(h.Run({"dump", "list"}))).elements, list.elements);
}

}  // namespace
}  // namespace rampart::proxy
