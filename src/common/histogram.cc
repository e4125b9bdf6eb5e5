#include "common/histogram.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace rampart {

Histogram::Histogram() : counts_(kBucketCount, 0) {}

uint64_t Histogram::BucketLow(size_t index) {
  if (index < kSubBucketCount) return index;
  const size_t shift = index / kSubBucketCount - 1;
  const uint64_t sub = index - shift * kSubBucketCount;  // in [128, 256)
  return sub << shift;
}

uint64_t Histogram::BucketHigh(size_t index) {
  if (index < kSubBucketCount) return index;
  const size_t shift = index / kSubBucketCount - 1;
  return BucketLow(index) + ((uint64_t{1} << shift) - 1);
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  for (size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void Histogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
  sum_ = 0;
}

uint64_t Histogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  if (!(p > 0)) return Min();  // also NaN
  if (p >= 100) return Max();
  // The rank-th smallest value, 1-based, rank = ceil(p% of count).
  uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint64_t low = BucketLow(i);
      const uint64_t mid = low + (BucketHigh(i) - low) / 2;
      return std::clamp(mid, Min(), Max());
    }
  }
  return Max();  // unreachable: the counts add up to count_
}

std::string Histogram::Summary() const {
  return fmt::format("n={} mean={} min={} p50={} p99={} p99.9={} max={}", count_,
                     FormatNanos(Mean()), FormatNanos(static_cast<double>(Min())),
                     FormatNanos(static_cast<double>(Percentile(50))),
                     FormatNanos(static_cast<double>(Percentile(99))),
                     FormatNanos(static_cast<double>(Percentile(99.9))),
                     FormatNanos(static_cast<double>(Max())));
}

std::string FormatNanos(double ns) {
  if (ns < 1000) return fmt::format("{:.0f}ns", ns);
  auto three_digits = [](double v, const char* unit) {
    if (v < 10) return fmt::format("{:.2f}{}", v, unit);
    if (v < 100) return fmt::format("{:.1f}{}", v, unit);
    return fmt::format("{:.0f}{}", v, unit);
  };
  if (ns < 1e6) return three_digits(ns / 1e3, "us");
  if (ns < 1e9) return three_digits(ns / 1e6, "ms");
  return three_digits(ns / 1e9, "s");
}

}  // namespace rampart
