#include "common/timestamp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace rampart {
namespace {

TEST(TimestampTest, PackUnpackRoundTrip) {
  uint64_t ts = PackTimestamp(kMaxTimestampMs, kMaxTimestampSeq, kMaxTimestampClientId);
  EXPECT_EQ(ts, UINT64_MAX);
  EXPECT_EQ(UnpackTimestamp(ts), (TimestampParts{kMaxTimestampMs, kMaxTimestampSeq,
                                                 kMaxTimestampClientId}));
  ts = PackTimestamp(123456789, 17, 4242);
  EXPECT_EQ(UnpackTimestamp(ts), (TimestampParts{123456789, 17, 4242}));
  EXPECT_EQ(TimestampClientId(ts), 4242u);
  EXPECT_EQ(TimestampUnixMs(ts), kTimestampEpochUnixMs + 123456789);
  static_assert(kTimestampMsBits == 41);
  // Time dominates the order, then the sequence, then the client id.
  EXPECT_LT(PackTimestamp(5, kMaxTimestampSeq, kMaxTimestampClientId), PackTimestamp(6, 0, 0));
  EXPECT_LT(PackTimestamp(5, 1, kMaxTimestampClientId), PackTimestamp(5, 2, 0));
}

TEST(TimestampTest, UsesTheClock) {
  uint64_t now = kTimestampEpochUnixMs + 1000;
  TimestampSource src(7, [&] { return now; });
  uint64_t a = src.Next();
  EXPECT_EQ(UnpackTimestamp(a), (TimestampParts{1000, 0, 7}));
  uint64_t b = src.Next();
  EXPECT_EQ(UnpackTimestamp(b), (TimestampParts{1000, 1, 7}));
  now += 5;
  EXPECT_EQ(UnpackTimestamp(src.Next()), (TimestampParts{1005, 0, 7}));
  EXPECT_EQ(src.Last(), PackTimestamp(1005, 0, 7));
}

TEST(TimestampTest, ZeroIsNeverIssued) {
  TimestampSource src(0, [] { return uint64_t{0}; });  // before the epoch
  uint64_t a = src.Next();
  EXPECT_NE(a, kNoTimestamp);
  EXPECT_GT(src.Next(), a);
}

TEST(TimestampTest, SequenceRollsIntoNextMillisecond) {
  uint64_t now = kTimestampEpochUnixMs + 50;
  TimestampSource src(3, [&] { return now; });
  uint64_t prev = 0;
  for (uint32_t i = 0; i <= kMaxTimestampSeq; ++i) {
    uint64_t ts = src.Next();
    EXPECT_EQ(UnpackTimestamp(ts), (TimestampParts{50, i, 3}));
    prev = ts;
  }
  uint64_t rolled = src.Next();
  EXPECT_GT(rolled, prev);
  EXPECT_EQ(UnpackTimestamp(rolled), (TimestampParts{51, 0, 3}));
  // The clock catching up to 51 must not repeat the value.
  now += 1;
  EXPECT_EQ(UnpackTimestamp(src.Next()), (TimestampParts{51, 1, 3}));
}

TEST(TimestampTest, StrictlyIncreasingWhenClockStepsBack) {
  uint64_t now = kTimestampEpochUnixMs + 10'000;
  TimestampSource src(99, [&] { return now; });
  uint64_t prev = src.Next();
  // A clock that jumps around: forward, back by a second, back again, forward.
  const int64_t steps[] = {+1, +3, -1000, 0, -1, +2, -5000, +6000, 0, -1, +1};
  for (int round = 0; round < 200; ++round) {
    for (int64_t step : steps) {
      now = static_cast<uint64_t>(static_cast<int64_t>(now) + step);
      for (int i = 0; i < 7; ++i) {
        uint64_t ts = src.Next();
        ASSERT_GT(ts, prev) << "round " << round << " step " << step;
        ASSERT_EQ(TimestampClientId(ts), 99u);
        prev = ts;
      }
    }
  }
  // After a step back the last millisecond is kept.
  TimestampSource src2(1, [&] { return now; });
  uint64_t before = src2.Next();
  now -= 1000;
  uint64_t after = src2.Next();
  EXPECT_EQ(UnpackTimestamp(after).ms, UnpackTimestamp(before).ms);
  EXPECT_EQ(UnpackTimestamp(after).seq, UnpackTimestamp(before).seq + 1);
}

TEST(TimestampTest, BadClientIdRefused) {
  auto bad = TimestampSource::Create(kMaxTimestampClientId + 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "timestamp client id 8192 is out of range 0..8191");
  EXPECT_FALSE(TimestampSource::Create(uint64_t{1} << 40).ok());
  auto good = TimestampSource::Create(kMaxTimestampClientId);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(TimestampClientId((*good)->Next()), kMaxTimestampClientId);
}

TEST(TimestampTest, TwoSourcesTwoThreadsEachNeverCollide) {
  // Same (frozen, then slowly moving) clock for both sources: the worst case,
  // everything lands in the same few milliseconds and only the client id
  // tells the values apart.
  std::atomic<uint64_t> now{kTimestampEpochUnixMs + 777};
  auto clock = [&] { return now.load(std::memory_order_relaxed); };
  TimestampSource a(1, clock), b(2, clock);
  constexpr int kPerThread = 1'000'000;
  std::vector<std::vector<uint64_t>> out(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      TimestampSource& src = t % 2 == 0 ? a : b;
      std::vector<uint64_t>& mine = out[t];
      mine.reserve(kPerThread);
      for (int i = 0; i < kPerThread; ++i) {
        mine.push_back(src.Next());
        if (t == 0 && i % 4096 == 0) now.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> all;
  all.reserve(4 * kPerThread);
  for (int t = 0; t < 4; ++t) {
    // Each thread sees strictly increasing values from its source.
    for (size_t i = 1; i < out[t].size(); ++i) ASSERT_LT(out[t][i - 1], out[t][i]);
    for (uint64_t ts : out[t]) ASSERT_EQ(TimestampClientId(ts), t % 2 == 0 ? 1u : 2u);
    all.insert(all.end(), out[t].begin(), out[t].end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "duplicate timestamp";
  EXPECT_EQ(all.size(), size_t{4} * kPerThread);
}

}  // namespace
}  // namespace rampart

namespace rampart {
namespace {

TEST(TimestampTest, NextAfterOrdersAfterAnotherSourcesTimestamp) {
  uint64_t now = kTimestampEpochUnixMs + 1000;
  TimestampSource behind(3, [&] { return now; });
  TimestampSource ahead(7, [&] { return now + 50; });
  const uint64_t theirs = ahead.Next();
  EXPECT_LT(behind.Next(), theirs);  // the clock alone would order it before
  const uint64_t mine = behind.NextAfter(theirs);
  EXPECT_GT(mine, theirs);
  EXPECT_EQ(TimestampClientId(mine), 3u);
  EXPECT_EQ(UnpackTimestamp(mine).ms, UnpackTimestamp(theirs).ms);  // the smallest step above
  EXPECT_GT(behind.Next(), mine);  // and the source goes on from there
  // A higher client id at the same (ms, seq) is already above.
  TimestampSource high(9, [&] { return now; });
  const uint64_t low_ts = PackTimestamp(UnpackTimestamp(theirs).ms + 5, 2, 1);
  const uint64_t after = high.NextAfter(low_ts);
  EXPECT_EQ(after, PackTimestamp(UnpackTimestamp(theirs).ms + 5, 2, 9));
}

}  // namespace
}  // namespace rampart
