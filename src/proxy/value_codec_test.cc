#include "proxy/value_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace rampart::proxy {
namespace {

using namespace std::string_literals;

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::string kBinary = "a\0b\xff\r\n\x80"s;

StoredValue MustDecodeStored(std::string_view stored) {
  auto v = DecodeStored(stored);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : StoredValue{};
}

// Every proper prefix of a stored hash or sorted set is refused without a crash.
template <typename DecodePayload>
void ExpectEveryTruncationRefused(const std::string& stored, DecodePayload decode) {
  for (size_t len = 0; len < stored.size(); ++len) {
    const std::string_view prefix(stored.data(), len);
    auto header = DecodeStored(prefix);
    if (len < kStoredHeaderBytes) {
      EXPECT_EQ(header.status().code(), StatusCode::kCorruption) << len;
      continue;
    }
    ASSERT_TRUE(header.ok());
    EXPECT_EQ(decode(header->payload), StatusCode::kCorruption) << "prefix of " << len << " bytes";
  }
}

// ---- Stored values ---------------------------------------------------------

TEST(ValueCodec, StringRoundTripsWithHeaderLayout) {
  for (const std::string& value : {""s, "hello"s, kBinary, std::string(100000, 'x')}) {
    const std::string stored = EncodeString(value, 0x0102030405060708ULL);
    ASSERT_EQ(stored.size(), 9 + value.size());
    EXPECT_EQ(stored.substr(0, 9), "s\x08\x07\x06\x05\x04\x03\x02\x01"s) << "type, then expire_at little-endian";
    StoredValue v = MustDecodeStored(stored);
    EXPECT_EQ(v.type, ValueType::kString);
    EXPECT_EQ(v.expire_at_ms, 0x0102030405060708ULL);
    EXPECT_EQ(v.payload, value);
  }
}

TEST(ValueCodec, EncodeStoredRewritesTheExpiry) {
  HashFields fields = {{"f", kBinary}};
  const std::string stored = EncodeHash(fields, 5);
  StoredValue v = MustDecodeStored(stored);
  const std::string again = EncodeStored(v.type, 77, v.payload);
  EXPECT_EQ(again, EncodeHash(fields, 77));
  EXPECT_EQ(MustDecodeStored(again).expire_at_ms, 77u);
}

TEST(ValueCodec, Expiry) {
  StoredValue never = MustDecodeStored(EncodeString("v", 0));
  EXPECT_FALSE(Expired(never, 0));
  EXPECT_FALSE(Expired(never, UINT64_MAX));
  StoredValue at_1000 = MustDecodeStored(EncodeString("v", 1000));
  EXPECT_FALSE(Expired(at_1000, 999));
  EXPECT_TRUE(Expired(at_1000, 1000));
  EXPECT_TRUE(Expired(at_1000, 1001));
}

TEST(ValueCodec, HeaderCorruption) {
  EXPECT_EQ(DecodeStored("").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeStored("s1234567").status().message(), "stored value: 8 bytes, shorter than the 9-byte header");
  EXPECT_EQ(DecodeStored("x12345678").status().message(), "stored value: unknown type byte 120");
  EXPECT_EQ(MustDecodeStored("s\0\0\0\0\0\0\0\0"s).payload, "");
}

TEST(ValueCodec, HashRoundTrips) {
  const std::vector<HashFields> cases = {
      {},
      {{"", ""}},
      {{"field", "value"}, {"a", ""}, {"", "empty name"}},
      {{kBinary, kBinary}, {"\xff", "high"}, {"\x01", "low"}},
  };
  for (const HashFields& fields : cases) {
    const std::string stored = EncodeHash(fields, 42);
    StoredValue v = MustDecodeStored(stored);
    EXPECT_EQ(v.type, ValueType::kHash);
    EXPECT_EQ(v.expire_at_ms, 42u);
    auto decoded = DecodeHash(v.payload);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, fields);
    ExpectEveryTruncationRefused(stored, [](std::string_view p) { return DecodeHash(p).status().code(); });
  }
}

TEST(ValueCodec, HashLayoutIsSortedByName) {
  const std::string stored = EncodeHash({{"b", "2"}, {"a", "1"}}, 0);
  EXPECT_EQ(stored.substr(9), "\x02\0\0\0"
                              "\x01\0\0\0a\x01\0\0\0"
                              "1"
                              "\x01\0\0\0b\x01\0\0\0"
                              "2"s);
}

TEST(ValueCodec, HashCorruptionIsDetected) {
  const std::string payload = EncodeHash({{"a", "1"}, {"b", "2"}}, 0).substr(9);
  EXPECT_EQ(DecodeHash(payload + "x").status().message(), "stored hash: 1 bytes after the last entry");
  std::string swapped = payload;
  swapped[8] = 'c';  // names "c", "b": out of order
  EXPECT_EQ(DecodeHash(swapped).status().code(), StatusCode::kCorruption);
  std::string repeated = payload;
  repeated[18] = 'a';  // names "a", "a"
  EXPECT_EQ(DecodeHash(repeated).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeHash("\xff\xff\xff\xff"s).status().code(), StatusCode::kCorruption) << "huge count";
  EXPECT_EQ(DecodeHash("\x01\0\0\0\xff\xff\xff\xff\0\0\0\0"s).status().code(), StatusCode::kCorruption)
      << "huge length";
}

// ---- Sorted sets -----------------------------------------------------------

std::vector<std::pair<std::string, double>> Members(const std::vector<std::pair<std::string_view, double>>& range) {
  return {range.begin(), range.end()};
}

SortedSet Sample() {
  SortedSet z;
  z.Add("e", 4);
  z.Add("d", 3);
  z.Add("c", 3);
  z.Add("b", 2);
  z.Add("a", 1);
  return z;
}

constexpr ScoreBound kAll[2] = {{-kInf, false}, {kInf, false}};

TEST(SortedSet, AddRemoveScore) {
  SortedSet z;
  EXPECT_TRUE(z.Add("m", 1.5));
  EXPECT_FALSE(z.Add("m", -2)) << "an update, not a new member";
  EXPECT_EQ(z.Score("m"), -2);
  EXPECT_EQ(z.Score("absent"), std::nullopt);
  EXPECT_EQ(z.size(), 1u);
  EXPECT_TRUE(z.Add("n", -2));
  EXPECT_EQ(Members(z.RangeByScore(kAll[0], kAll[1], 0, -1)),
            (std::vector<std::pair<std::string, double>>{{"m", -2}, {"n", -2}}));
  EXPECT_TRUE(z.Remove("m"));
  EXPECT_FALSE(z.Remove("m"));
  EXPECT_EQ(z.size(), 1u);
  EXPECT_EQ(Members(z.RangeByScore(kAll[0], kAll[1], 0, -1)), (std::vector<std::pair<std::string, double>>{{"n", -2}}));
}

TEST(SortedSet, OrdersByScoreThenMemberBytes) {
  SortedSet z;
  z.Add("b", 1);
  z.Add("\xff", 1);
  z.Add("a", 1);
  z.Add("", 1);
  z.Add("z", -kInf);
  z.Add("y", kInf);
  z.Add("x", 0.5);
  std::vector<std::string> order;
  for (auto [member, score] : z.RangeByScore(kAll[0], kAll[1], 0, -1)) order.emplace_back(member);
  EXPECT_EQ(order, (std::vector<std::string>{"z", "x", "", "a", "b", "\xff", "y"}));
}

TEST(SortedSet, RangeByScoreBoundsOffsetCountLikeRedis) {
  // Expected results taken from redis-server 7.0 with ZADD z 1 a 2 b 3 c 3 d 4 e.
  const SortedSet z = Sample();
  using V = std::vector<std::pair<std::string, double>>;
  auto range = [&](ScoreBound min, ScoreBound max, int64_t offset = 0, int64_t count = -1) {
    return Members(z.RangeByScore(min, max, offset, count));
  };
  EXPECT_EQ(range({2}, {3}), (V{{"b", 2}, {"c", 3}, {"d", 3}}));
  EXPECT_EQ(range({1, true}, {3, true}), (V{{"b", 2}}));
  EXPECT_EQ(range({3, true}, {kInf}), (V{{"e", 4}}));
  EXPECT_EQ(range({kInf, true}, {kInf}), V{});
  EXPECT_EQ(range({3}, {1}), V{});
  EXPECT_EQ(range({-kInf}, {kInf}, 1, 2), (V{{"b", 2}, {"c", 3}}));
  EXPECT_EQ(range({-kInf}, {kInf}, 1, -1), (V{{"b", 2}, {"c", 3}, {"d", 3}, {"e", 4}}));
  EXPECT_EQ(range({-kInf}, {kInf}, 1, -5), (V{{"b", 2}, {"c", 3}, {"d", 3}, {"e", 4}}));
  EXPECT_EQ(range({-kInf}, {kInf}, 1, 0), V{});
  EXPECT_EQ(range({-kInf}, {kInf}, -1, 2), V{});
  EXPECT_EQ(range({-kInf}, {kInf}, 5, -1), V{});
  EXPECT_EQ(range({-kInf}, {kInf}, 4, 10), (V{{"e", 4}}));
  EXPECT_EQ(range({3}, {3}, 1, 1), (V{{"d", 3}}));
}

TEST(SortedSet, RoundTripsAndLayout) {
  SortedSet z;
  EXPECT_EQ(z.Encode(0), "z\0\0\0\0\0\0\0\0\0\0\0\0"s);
  z.Add("m", 1.5);
  EXPECT_EQ(z.Encode(7).substr(1), "\x07\0\0\0\0\0\0\0"
                                   "\x01\0\0\0"
                                   "\0\0\0\0\0\0\xf8\x3f"
                                   "\x01\0\0\0m"s)
      << "count, then f64 1.5 little-endian, u32 length, member";

  z.Add("", 0);
  z.Add(kBinary, -kInf);
  z.Add("big", kInf);
  z.Add("tiny", std::numeric_limits<double>::denorm_min());
  const std::string stored = z.Encode(99);
  StoredValue v = MustDecodeStored(stored);
  EXPECT_EQ(v.type, ValueType::kZset);
  EXPECT_EQ(v.expire_at_ms, 99u);
  auto decoded = SortedSet::Decode(v.payload);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->size(), 5u);
  EXPECT_EQ(decoded->Score(kBinary), -kInf);
  EXPECT_EQ(decoded->Encode(99), stored);
  ExpectEveryTruncationRefused(stored, [](std::string_view p) { return SortedSet::Decode(p).status().code(); });
}

TEST(SortedSet, CorruptionIsDetected) {
  SortedSet z;
  z.Add("a", 1);
  z.Add("b", 2);
  const std::string payload = z.Encode(0).substr(9);
  EXPECT_EQ(SortedSet::Decode(payload + "x").status().code(), StatusCode::kCorruption);
  std::string misordered = payload;
  misordered[4 + 6] = 0x08;  // a's score 1.0 (3ff0...) becomes 3.0 (4008...): a(3) before b(2)
  misordered[4 + 7] = 0x40;
  EXPECT_EQ(SortedSet::Decode(misordered).status().message(),
            "stored sorted set: member out of (score, member) order at byte 30");
  std::string nan = payload;
  nan[4 + 6] = '\xf8';  // a's score becomes NaN (7ff8...)
  nan[4 + 7] = '\x7f';
  EXPECT_EQ(SortedSet::Decode(nan).status().code(), StatusCode::kCorruption);
  std::string repeated = payload;
  repeated[4 + 12] = 'b';  // (1, "b"), (2, "b"): in order, but b twice
  EXPECT_EQ(SortedSet::Decode(repeated).status().message(), "stored sorted set: member repeated at byte 30");
}

TEST(SortedSet, CopiesAreIndependent) {
  SortedSet a = Sample();
  SortedSet b = a;
  b.Add("a", 10);
  b.Remove("e");
  EXPECT_EQ(a.Score("a"), 1);
  EXPECT_EQ(a.size(), 5u);
  SortedSet c;
  c = b;
  b = SortedSet();
  EXPECT_EQ(c.RangeByScore(kAll[0], kAll[1], 0, -1).back().first, "a");
  SortedSet d = std::move(c);
  EXPECT_EQ(d.RangeByScore({5}, {kInf}, 0, -1).size(), 1u) << "views survive a move";
}

TEST(SortedSet, TenThousandMembers) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> scores(-1e9, 1e9);
  SortedSet z;
  for (int i = 0; i < 10000; ++i) z.Add("member:" + std::to_string(i), i % 10 == 0 ? 5 : scores(rng));
  const std::string stored = z.Encode(0);
  auto decoded = SortedSet::Decode(MustDecodeStored(stored).payload);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->size(), 10000u);
  EXPECT_EQ(decoded->Encode(0), stored);
  auto all = decoded->RangeByScore(kAll[0], kAll[1], 0, -1);
  ASSERT_EQ(all.size(), 10000u);
  for (size_t i = 1; i < all.size(); ++i) {
    ASSERT_TRUE(std::pair(all[i - 1].second, all[i - 1].first) < std::pair(all[i].second, all[i].first)) << i;
  }
  EXPECT_EQ(decoded->RangeByScore({5}, {5}, 0, -1).size(), 1000u);
  EXPECT_EQ(decoded->Score("member:1234"), z.Score("member:1234"));
}

TEST(SortedSet, FlippedBytesAreRefusedOrDecodeNeverCrash) {
  SortedSet z = Sample();
  HashFields h = {{"f1", "v1"}, {"f2", std::string(300, 'v')}};
  const std::string encodings[] = {z.Encode(0).substr(9), EncodeHash(h, 0).substr(9)};
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = encodings[i % 2];
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
      bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
    }
    // Either outcome is fine; a decoded set must still encode consistently.
    auto set = SortedSet::Decode(bytes);
    if (set.ok()) {
      EXPECT_EQ(SortedSet::Decode(set->Encode(0).substr(9))->size(), set->size());
    }
    auto fields = DecodeHash(bytes);
    if (fields.ok()) {
      EXPECT_EQ(*DecodeHash(EncodeHash(*fields, 0).substr(9)), *fields);
    }
  }
}

// ---- Numbers ---------------------------------------------------------------

TEST(ValueCodec, ParseScoreAcceptsWhatRedisAccepts) {
  const std::pair<const char*, double> good[] = {
      {"1", 1},         {"-5.94971599E8", -594971599}, {"1.0E10", 1e10}, {"1e10", 1e10},  {"+1", 1},
      {".5", 0.5},      {"5.", 5},                     {"-0", 0},        {"inf", kInf},   {"+inf", kInf},
      {"-inf", -kInf},  {"INF", kInf},                 {"Infinity", kInf}, {"-Infinity", -kInf},
      {"1e-310", 1e-310}, {"1.7976931348623157e308", 1.7976931348623157e308},
  };
  for (auto [text, value] : good) {
    auto v = ParseScore(text);
    ASSERT_TRUE(v.ok()) << text;
    EXPECT_EQ(*v, value) << text;
  }
}

TEST(ValueCodec, ParseScoreRejectsWhatRedisRejects) {
  for (const char* text : {"", " 1", "1 ", "nan", "NaN", "-nan", "1.5x", "+-1", "--1", "1e", "e5", ".", "-", "+",
                           "1e400", "-1e400", "1e-400", "infinite", "0x10"}) {
    auto v = ParseScore(text);
    ASSERT_FALSE(v.ok()) << '"' << text << '"';
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(v.status().message(), "ERR value is not a valid float");
  }
  EXPECT_FALSE(ParseScore("1\0"s).ok());
}

TEST(ValueCodec, ParseScoreBound) {
  auto bound = [](std::string_view s) {
    auto b = ParseScoreBound(s);
    EXPECT_TRUE(b.ok()) << s;
    return b.ok() ? std::pair(b->value, b->exclusive) : std::pair(0.0, false);
  };
  EXPECT_EQ(bound("(1.5"), std::pair(1.5, true));
  EXPECT_EQ(bound("1.5"), std::pair(1.5, false));
  EXPECT_EQ(bound("-inf"), std::pair(-kInf, false));
  EXPECT_EQ(bound("+inf"), std::pair(kInf, false));
  EXPECT_EQ(bound("inf"), std::pair(kInf, false));
  EXPECT_EQ(bound("(-inf"), std::pair(-kInf, true));
  for (const char* text : {"", "(", "((1", "nan", "(nan", "x", "1)", "[1"}) {
    EXPECT_EQ(ParseScoreBound(text).status().message(), "ERR min or max is not a float") << text;
  }
}

// The texts redis-server 7.0.15 replies (ZSCORE / ZRANGE WITHSCORES, ZSCAN).
TEST(ValueCodec, FormatScoreLikeRedis) {
  const std::pair<double, const char*> cases[] = {
      {1.5, "1.5"},
      {3, "3"},
      {-594971599, "-594971599"},
      {1e10, "10000000000"},
      {0, "0"},
      {-0.0, "0"},
      {kInf, "inf"},
      {-kInf, "-inf"},
      {0.1, "0.10000000000000001"},
      {-0.5, "-0.5"},
      {123.456, "123.456"},
      {0.0001, "0.0001"},
      {1e-7, "9.9999999999999995e-08"},
      {4503599627370497.0, "4503599627370497"},
      {1e17, "1e+17"},
      {1.2345678901234e19, "1.2345678901234e+19"},
      {1.5e300, "1.5000000000000001e+300"},
      {-1.7976931348623157e308, "-1.7976931348623157e+308"},
  };
  EXPECT_EQ(FormatScanScore(1e17), "100000000000000000");
  EXPECT_EQ(FormatScanScore(0.1), "0.10000000000000001");
  EXPECT_EQ(FormatScanScore(-kInf), "-inf");
  for (auto [value, text] : cases) EXPECT_EQ(FormatScore(value), text) << text;
  // Every finite output reads back as the same double.
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    double d = std::bit_cast<double>(rng());
    if (!std::isfinite(d)) continue;
    auto back = ParseScore(FormatScore(d));
    ASSERT_TRUE(back.ok()) << FormatScore(d);
    ASSERT_EQ(*back, d) << FormatScore(d);
  }
}

TEST(ValueCodec, ParseInt64LikeStringToLongLong) {
  const std::pair<const char*, int64_t> good[] = {
      {"0", 0},
      {"1", 1},
      {"-1", -1},
      {"42", 42},
      {"9223372036854775807", INT64_MAX},
      {"-9223372036854775808", INT64_MIN},
  };
  for (auto [text, value] : good) {
    auto v = ParseInt64(text);
    ASSERT_TRUE(v.ok()) << text;
    EXPECT_EQ(*v, value) << text;
  }
  for (const char* text : {"", "-", "-0", "+1", "01", "00", " 1", "1 ", "1.0", "1e3", "0x1", "9223372036854775808",
                           "-9223372036854775809", "12345678901234567890", "99999999999999999999999"}) {
    auto v = ParseInt64(text);
    ASSERT_FALSE(v.ok()) << '"' << text << '"';
    EXPECT_EQ(v.status().message(), "ERR value is not an integer or out of range");
  }
}

}  // namespace
}  // namespace rampart::proxy
