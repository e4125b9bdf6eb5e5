// HyperLogLog in Redis's string format: the bytes redis-server 7.0.15 wrote
// for PFADD h a b c (captured with GET), the dense form, damage; PFADD,
// PFCOUNT, PFMERGE through the command harness. tests/test_proxy_hll.py
// compares counts with a running redis-server.
#include "proxy/hyperloglog.h"

#include <gtest/gtest.h>

#include <string>

#include "proxy/command_test_util.h"

namespace rampart::proxy {
namespace {

using testing::CommandHarness;
using testing::Err;
using testing::Int;
using testing::kOk;

const std::string kHeaderNoCache("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80", 16);
// PFADD h a b c on redis-server 7.0.15: sparse, three registers set.
const std::string kRedisABC = kHeaderNoCache + std::string("\x60\xf3\x80\x50\xb1\x84\x4b\xfb\x80\x42\x5a", 11);

TEST(HyperLogLog, WritesWhatRedisWrites) {
  HyperLogLog h;
  EXPECT_TRUE(h.Add("a"));
  EXPECT_TRUE(h.Add("b"));
  EXPECT_TRUE(h.Add("c"));
  EXPECT_FALSE(h.Add("a"));
  EXPECT_EQ(h.Encode(), kRedisABC);  // the same hash, registers and sparse runs
  EXPECT_EQ(h.Count(), 3u);
  EXPECT_EQ(HyperLogLog().Encode(), kHeaderNoCache + std::string("\x7f\xff", 2));  // empty
  EXPECT_EQ(HyperLogLog().Count(), 0u);
}

TEST(HyperLogLog, ReadsSparseDenseAndTheCache) {
  auto h = HyperLogLog::Decode(kRedisABC);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->Count(), 3u);
  EXPECT_FALSE(h->Add("b"));
  // A valid cache (after Redis's PFCOUNT) is what PFCOUNT answers.
  std::string cached = kRedisABC;
  cached[8] = 42;
  cached[15] = 0;
  EXPECT_EQ(HyperLogLog::Decode(cached)->Count(), 42u);
  // Dense: 12,304 bytes, the same registers.
  HyperLogLog many;
  for (int n = 0; n < 20000; ++n) many.Add(std::to_string(n) + "e");
  EXPECT_FALSE(many.Encode().size() < HyperLogLog::kDenseBytes);  // too many runs for sparse
  const uint64_t count = many.Count();
  EXPECT_NEAR(static_cast<double>(count), 20000, 20000 * 0.03);
  auto again = HyperLogLog::Decode(many.Encode());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->dense());
  EXPECT_EQ(again->Count(), count);
  EXPECT_EQ(again->Encode(), many.Encode());
}

TEST(HyperLogLog, RefusesWhatIsNoHll) {
  const std::string not_hll = "WRONGTYPE Key is not a valid HyperLogLog string value.";
  EXPECT_EQ(HyperLogLog::Decode("HYLL").status().message(), not_hll);
  EXPECT_EQ(HyperLogLog::Decode("XYLL" + kRedisABC.substr(4)).status().message(), not_hll);
  std::string bad_encoding = kRedisABC;
  bad_encoding[4] = 2;
  EXPECT_EQ(HyperLogLog::Decode(bad_encoding).status().message(), not_hll);
  std::string short_dense = kRedisABC;
  short_dense[4] = 0;
  EXPECT_EQ(HyperLogLog::Decode(short_dense).status().message(), not_hll);
  // Sparse runs that do not cover 16384 registers, or pass them.
  const std::string corrupted = "INVALIDOBJ Corrupted HLL object detected";
  EXPECT_EQ(HyperLogLog::Decode(kRedisABC.substr(0, kRedisABC.size() - 2)).status().message(), corrupted);
  EXPECT_EQ(HyperLogLog::Decode(kRedisABC + "\x80").status().message(), corrupted);
  EXPECT_EQ(HyperLogLog::Decode(kRedisABC.substr(0, kRedisABC.size() - 1)).status().message(), corrupted);
}

TEST(HyperLogLog, CommandsAsRedis) {
  CommandHarness h;
  EXPECT_EQ(h.Run({"pfadd", "x"}), Int(1));  // created
  EXPECT_EQ(h.Run({"pfadd", "x"}), Int(0));
  EXPECT_EQ(h.Run({"pfadd", "x", "a", "b", "c"}), Int(1));
  EXPECT_EQ(h.Run({"get", "x"}), testing::Bulk(kRedisABC));
  EXPECT_EQ(h.Run({"pfadd", "x", "a"}), Int(0));
  EXPECT_EQ(h.Run({"pfcount", "x"}), Int(3));
  EXPECT_EQ(h.Run({"pfadd", "y", "c", "d"}), Int(1));
  EXPECT_EQ(h.Run({"pfcount", "x", "y", "missing"}), Int(4));
  EXPECT_EQ(h.Run({"pfmerge", "z", "x", "y"}), kOk);
  EXPECT_EQ(h.Run({"pfcount", "z"}), Int(4));
  EXPECT_EQ(h.Run({"pfcount", "missing"}), Int(0));
  ASSERT_EQ(h.Run({"set", "s", "text"}), kOk);
  ASSERT_EQ(h.Run({"rpush", "l", "e"}), Int(1));
  const std::string not_hll = Err("WRONGTYPE Key is not a valid HyperLogLog string value.");
  EXPECT_EQ(h.Run({"pfadd", "s", "a"}), not_hll);
  EXPECT_EQ(h.Run({"pfcount", "x", "s"}), not_hll);
  EXPECT_EQ(h.Run({"pfmerge", "z", "s"}), not_hll);
  EXPECT_EQ(h.Run({"pfadd", "l", "a"}), testing::kWrongTypeReply);
  h.Put("bad", EncodeString(kRedisABC.substr(0, kRedisABC.size() - 1), 0));
  EXPECT_EQ(h.Run({"pfcount", "bad"}), Err("INVALIDOBJ Corrupted HLL object detected"));
}

}  // namespace
}  // namespace rampart::proxy
