// BITFIELD and BITOP through the command harness: redis.io's examples of
// BITFIELD's overflow modes, and BITOP over a long (chunked) source.
// tests/test_proxy_bitops.py compares random BITFIELDs with a redis-server.
#include <gtest/gtest.h>

#include <string>

#include "proxy/command_test_util.h"

namespace rampart::proxy {
namespace {

using testing::Bulk;
using testing::CommandHarness;
using testing::Err;
using testing::Int;
using testing::kNil;
using testing::kOk;

std::string Ints2(int64_t a, int64_t b) { return testing::Arr(2) + Int(a) + Int(b); }

TEST(BitField, OverflowModesAsRedisDocumentsThem) {
  CommandHarness h;
  // redis.io's BITFIELD page: a u2 counter under WRAP and one under SAT.
  const std::vector<std::string_view> incr = {"bitfield", "k", "incrby", "u2", "100", "1",
                                              "overflow", "sat", "incrby", "u2", "102", "1"};
  EXPECT_EQ(h.Run(incr), Ints2(1, 1));
  EXPECT_EQ(h.Run(incr), Ints2(2, 2));
  EXPECT_EQ(h.Run(incr), Ints2(3, 3));
  EXPECT_EQ(h.Run(incr), Ints2(0, 3));
  EXPECT_EQ(h.Run({"bitfield", "k", "overflow", "fail", "incrby", "u2", "102", "1"}),
            testing::Arr(1) + kNil);
  // Signed fields wrap in two's complement, SET answers the old value.
  EXPECT_EQ(h.Run({"bitfield", "s", "set", "i8", "0", "127", "incrby", "i8", "0", "1"}), Ints2(0, -128));
  EXPECT_EQ(h.Run({"bitfield", "s", "overflow", "sat", "incrby", "i8", "0", "-1000", "get", "u8", "0"}),
            Ints2(-128, 128));
  EXPECT_EQ(h.Run({"bitfield", "s", "set", "u8", "#1", "-1", "get", "u16", "0"}), Ints2(0, 0x80FF));
  EXPECT_EQ(h.Run({"bitfield_ro", "s", "get", "i64", "0"}),
            testing::Arr(1) + Int(static_cast<int64_t>(0x80FF000000000000ULL)));
  EXPECT_EQ(h.Run({"bitfield_ro", "s", "set", "u8", "0", "1"}),
            Err("ERR BITFIELD_RO only supports the GET subcommand"));
  EXPECT_EQ(h.Run({"bitfield", "s"}), testing::Arr(0));
}

TEST(BitOp, ReadsALongSourceWhole) {
  CommandHarness h;
  h.set_max_value_bytes(64);  // longer strings go in chunks
  const std::string a(300, 'a'), b(100, '\x03');
  ASSERT_EQ(h.Run({"set", "a", a}), kOk);
  ASSERT_EQ(h.Run({"set", "b", b}), kOk);
  EXPECT_EQ(h.Run({"bitop", "xor", "d", "a", "b"}), Int(300));
  EXPECT_EQ(h.Run({"get", "d"}), Bulk(std::string(100, 'a' ^ 3) + std::string(200, 'a')));
  EXPECT_EQ(h.Run({"bitop", "and", "d", "missing"}), Int(0));
  EXPECT_EQ(h.Run({"exists", "d"}), Int(0));
}

}  // namespace
}  // namespace rampart::proxy
