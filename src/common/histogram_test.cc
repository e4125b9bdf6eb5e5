#include "common/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace rampart {
namespace {

// The exact p-th percentile of sorted `values` with Histogram's definition:
// the ceil(p% * n)-th smallest value.
uint64_t ExactPercentile(const std::vector<uint64_t>& values, double p) {
  if (p <= 0) return values.front();
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size());
  return values[rank - 1];
}

void ExpectWithinPrecision(uint64_t got, uint64_t want, const std::string& what) {
  const double tolerance = std::max(1.0, static_cast<double>(want) * Histogram::kRelativePrecision);
  EXPECT_LE(std::abs(static_cast<double>(got) - static_cast<double>(want)), tolerance)
      << what << ": got " << got << ", want " << want;
}

TEST(HistogramTest, Empty) {
  Histogram h;
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 0u);
  EXPECT_EQ(h.Mean(), 0.0);
  EXPECT_EQ(h.Percentile(50), 0u);
  EXPECT_EQ(h.Percentile(100), 0u);
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (uint64_t v = 0; v < 128; ++v) h.Record(v);
  EXPECT_EQ(h.Count(), 128u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 127u);
  EXPECT_DOUBLE_EQ(h.Mean(), 63.5);
  EXPECT_EQ(h.Percentile(50), 63u);  // the 64th smallest
  EXPECT_EQ(h.Percentile(1), 1u);    // ceil(1.28) = 2nd smallest
  EXPECT_EQ(h.Percentile(100), 127u);
}

TEST(HistogramTest, SingleValue) {
  Histogram h;
  h.Record(123'456'789);
  EXPECT_EQ(h.Percentile(0), 123'456'789u);
  EXPECT_EQ(h.Percentile(50), 123'456'789u);  // clamped into [min, max]
  EXPECT_EQ(h.Percentile(99.99), 123'456'789u);
  EXPECT_EQ(h.Max(), 123'456'789u);
  EXPECT_DOUBLE_EQ(h.Mean(), 123'456'789.0);
}

TEST(HistogramTest, BucketsCoverEveryValueContiguously) {
  EXPECT_EQ(Histogram::BucketIndex(0), 0u);
  EXPECT_EQ(Histogram::BucketIndex(127), 127u);
  EXPECT_EQ(Histogram::BucketIndex(128), 128u);
  EXPECT_EQ(Histogram::BucketIndex(255), 255u);
  EXPECT_EQ(Histogram::BucketIndex(256), 256u);
  EXPECT_EQ(Histogram::BucketIndex(257), 256u);
  EXPECT_EQ(Histogram::BucketIndex(UINT64_MAX), Histogram::kBucketCount - 1);
  EXPECT_EQ(Histogram::BucketHigh(Histogram::kBucketCount - 1), UINT64_MAX);
  for (size_t i = 0; i + 1 < Histogram::kBucketCount; ++i) {
    ASSERT_EQ(Histogram::BucketHigh(i) + 1, Histogram::BucketLow(i + 1)) << i;
    ASSERT_EQ(Histogram::BucketIndex(Histogram::BucketLow(i)), i);
    ASSERT_EQ(Histogram::BucketIndex(Histogram::BucketHigh(i)), i);
    // Width at most 1/128 of the lower bound.
    const uint64_t width = Histogram::BucketHigh(i) - Histogram::BucketLow(i) + 1;
    ASSERT_LE(width * Histogram::kSubBucketCount, std::max<uint64_t>(Histogram::BucketLow(i), 128))
        << i;
  }
}

TEST(HistogramTest, UniformDistribution) {
  Histogram h;
  std::vector<uint64_t> values;
  for (uint64_t v = 1; v <= 1'000'000; ++v) {
    h.Record(v);
    values.push_back(v);  // sorted
  }
  EXPECT_EQ(h.Count(), 1'000'000u);
  EXPECT_DOUBLE_EQ(h.Mean(), 500'000.5);
  EXPECT_EQ(h.Min(), 1u);
  EXPECT_EQ(h.Max(), 1'000'000u);
  for (double p : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99}) {
    ExpectWithinPrecision(h.Percentile(p), ExactPercentile(values, p), std::to_string(p));
  }
  ExpectWithinPrecision(h.Percentile(50), 500'000, "median");
}

TEST(HistogramTest, ExponentialLatenciesWithinOnePercent) {
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> dist(1.0 / 20'000.0);  // mean 20 us
  Histogram h;
  std::vector<uint64_t> values;
  double sum = 0;
  for (int i = 0; i < 200'000; ++i) {
    const uint64_t v = 1000 + static_cast<uint64_t>(dist(rng));
    h.Record(std::chrono::nanoseconds(v));
    values.push_back(v);
    sum += static_cast<double>(v);
  }
  EXPECT_NEAR(h.Mean(), sum / values.size(), 1e-6 * h.Mean());
  EXPECT_EQ(h.Min(), *std::min_element(values.begin(), values.end()));
  EXPECT_EQ(h.Max(), *std::max_element(values.begin(), values.end()));
  std::sort(values.begin(), values.end());
  for (double p : {0.1, 5.0, 50.0, 90.0, 99.0, 99.9, 99.999}) {
    ExpectWithinPrecision(h.Percentile(p), ExactPercentile(values, p), std::to_string(p));
  }
}

TEST(HistogramTest, BimodalPercentilesLandInTheRightMode) {
  Histogram h;
  h.RecordMany(1'000, 900);        // 90% fast
  h.RecordMany(1'000'000, 100);    // 10% slow
  ExpectWithinPrecision(h.Percentile(50), 1'000, "p50");
  ExpectWithinPrecision(h.Percentile(90), 1'000, "p90");
  ExpectWithinPrecision(h.Percentile(90.1), 1'000'000, "p90.1");
  ExpectWithinPrecision(h.Percentile(99), 1'000'000, "p99");
  EXPECT_DOUBLE_EQ(h.Mean(), (900.0 * 1'000 + 100.0 * 1'000'000) / 1000);
}

TEST(HistogramTest, HugeValues) {
  Histogram h;
  h.Record(UINT64_MAX);
  h.Record(uint64_t{1} << 63);
  EXPECT_EQ(h.Max(), UINT64_MAX);
  EXPECT_EQ(h.Min(), uint64_t{1} << 63);
  EXPECT_EQ(h.Percentile(100), UINT64_MAX);
  ExpectWithinPrecision(h.Percentile(50), uint64_t{1} << 63, "p50");
}

TEST(HistogramTest, NegativeDurationsCountAsZero) {
  Histogram h;
  h.Record(std::chrono::nanoseconds(-5));
  EXPECT_EQ(h.Count(), 1u);
  EXPECT_EQ(h.Max(), 0u);
}

TEST(HistogramTest, MergeEqualsRecordingEverything) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(9.0, 1.5);
  Histogram a, b, all;
  for (int i = 0; i < 50'000; ++i) {
    const uint64_t v = static_cast<uint64_t>(dist(rng));
    (i % 3 == 0 ? a : b).Record(v);
    all.Record(v);
  }
  Histogram merged;
  merged.Merge(a);
  merged.Merge(b);
  merged.Merge(Histogram());  // empty: no effect on min
  EXPECT_EQ(merged.Count(), all.Count());
  EXPECT_EQ(merged.Min(), all.Min());
  EXPECT_EQ(merged.Max(), all.Max());
  EXPECT_NEAR(merged.Mean(), all.Mean(), 1e-9 * all.Mean());
  for (double p : {0.0, 1.0, 50.0, 99.0, 99.9, 100.0}) {
    EXPECT_EQ(merged.Percentile(p), all.Percentile(p)) << p;
  }
}

TEST(HistogramTest, Reset) {
  Histogram h;
  h.Record(5);
  h.Record(5000);
  h.Reset();
  EXPECT_EQ(h.Count(), 0u);
  EXPECT_EQ(h.Min(), 0u);
  EXPECT_EQ(h.Max(), 0u);
  h.Record(7);
  EXPECT_EQ(h.Min(), 7u);
  EXPECT_EQ(h.Percentile(50), 7u);
}

TEST(HistogramTest, PercentileArgumentIsClamped) {
  Histogram h;
  h.Record(10);
  h.Record(20);
  EXPECT_EQ(h.Percentile(-5), 10u);
  EXPECT_EQ(h.Percentile(250), 20u);
  EXPECT_EQ(h.Percentile(std::nan("")), 10u);
}

TEST(HistogramTest, Summary) {
  Histogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v * 1000);
  EXPECT_EQ(h.Summary(),
            "n=100 mean=50.5us min=1.00us p50=50.0us p99=99.1us p99.9=100us max=100us");
}

TEST(HistogramTest, FormatNanos) {
  EXPECT_EQ(FormatNanos(0), "0ns");
  EXPECT_EQ(FormatNanos(999), "999ns");
  EXPECT_EQ(FormatNanos(1520), "1.52us");
  EXPECT_EQ(FormatNanos(15'200), "15.2us");
  EXPECT_EQ(FormatNanos(152'000), "152us");
  EXPECT_EQ(FormatNanos(12'000'000), "12.0ms");
  EXPECT_EQ(FormatNanos(3.2e9), "3.20s");
}

}  // namespace
}  // namespace rampart
