#include "common/size.h"

#include <gtest/gtest.h>

namespace rampart {
namespace {

uint64_t Size(std::string_view text) {
  Result<uint64_t> r = ParseSize(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : 0;
}

std::string Error(std::string_view text) {
  Result<uint64_t> r = ParseSize(text);
  if (r.ok()) return "OK";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

TEST(SizeTest, PlainBytes) {
  EXPECT_EQ(Size("0"), 0u);
  EXPECT_EQ(Size("4096"), 4096u);
  EXPECT_EQ(Size("17B"), 17u);
  EXPECT_EQ(Size("18446744073709551615"), UINT64_MAX);
}

TEST(SizeTest, BinaryUnits) {
  EXPECT_EQ(Size("4KiB"), 4096u);
  EXPECT_EQ(Size("64MiB"), 64u << 20);
  EXPECT_EQ(Size("1GiB"), kGiB);
  EXPECT_EQ(Size("2TiB"), 2ull << 40);
  EXPECT_EQ(Size("1KiB"), kKiB);
  EXPECT_EQ(Size("1MiB"), kMiB);
}

TEST(SizeTest, DecimalUnits) {
  EXPECT_EQ(Size("1KB"), 1000u);
  EXPECT_EQ(Size("64MB"), 64'000'000u);
  EXPECT_EQ(Size("3GB"), 3'000'000'000u);
  EXPECT_EQ(Size("1TB"), 1'000'000'000'000u);
}

TEST(SizeTest, UnitsIgnoreCaseAndOneSpace) {
  EXPECT_EQ(Size("4kib"), 4096u);
  EXPECT_EQ(Size("4 KiB"), 4096u);
  EXPECT_EQ(Size("1mb"), 1'000'000u);
  EXPECT_EQ(Size(" 8 b "), 8u);
}

TEST(SizeTest, Errors) {
  EXPECT_EQ(Error(""), "\"\": empty size");
  EXPECT_EQ(Error("-1KiB"), "\"-1KiB\": sizes cannot be negative");
  EXPECT_EQ(Error("KiB"),
            "\"KiB\": expected a number followed by a unit (B, KiB, MiB, GiB, KB, MB, GB)");
  EXPECT_EQ(Error("4K"), "\"4K\": unknown unit \"K\" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
  EXPECT_EQ(Error("4 M"), "\"4 M\": unknown unit \"M\" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
  EXPECT_EQ(Error("1.5GiB"),
            "\"1.5GiB\": fractions are not supported; use a smaller unit (e.g. 1536KiB)");
  EXPECT_EQ(Error("12XB"),
            "\"12XB\": unknown unit \"XB\" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
  EXPECT_EQ(Error("18446744073709551616"), "\"18446744073709551616\": too large");
  EXPECT_EQ(Error("16777216TiB"), "\"16777216TiB\": too large");
  EXPECT_EQ(Error("4  KiB"),
            "\"4  KiB\": unknown unit \" KiB\" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
}

TEST(SizeTest, Format) {
  EXPECT_EQ(FormatSize(0), "0B");
  EXPECT_EQ(FormatSize(1), "1B");
  EXPECT_EQ(FormatSize(1500), "1500B");
  EXPECT_EQ(FormatSize(1000), "1KB");
  EXPECT_EQ(FormatSize(4096), "4KiB");
  EXPECT_EQ(FormatSize(64 * kMiB), "64MiB");
  EXPECT_EQ(FormatSize(kGiB), "1GiB");
  EXPECT_EQ(FormatSize(1'000'000'000), "1GB");
  EXPECT_EQ(FormatSize(1536 * kKiB), "1536KiB");
  EXPECT_EQ(FormatSize(uint64_t{1} << 50), "1024TiB");
}

TEST(SizeTest, FormatRoundTrips) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{999}, uint64_t{1000}, uint64_t{1024},
                     uint64_t{123456789}, uint64_t{1} << 40, uint64_t{5'000'000'000'000},
                     UINT64_MAX, UINT64_MAX - 1023}) {
    EXPECT_EQ(Size(FormatSize(v)), v) << FormatSize(v);
  }
}

}  // namespace
}  // namespace rampart
