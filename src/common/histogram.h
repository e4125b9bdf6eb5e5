// Latency histogram for benchmarks: log-linear buckets in the manner of
// HdrHistogram.
//
//   Histogram h;
//   h.Record(elapsed_ns);              // O(1), no allocation
//   total.Merge(h);                    // per-thread histograms, merged at the end
//   total.Percentile(99.9);            // nanoseconds, within 0.4%
//
// Values below 2^kSubBucketBits (128 ns) are counted exactly. Above, each
// power of two [2^e, 2^(e+1)) is split into 128 buckets of equal width, so a
// bucket spans at most 1/128 of its lower bound; values are reported as the
// bucket's midpoint, within 1/256 (0.4%) of the truth. The whole uint64_t range
// is covered by 7424 buckets (58 KiB, allocated by the constructor).
//
// Min(), Max(), Mean() and Count() are exact; Percentile(0) is Min() and
// Percentile(100) is Max().
//
// Thread-safety: none. Give each thread its own Histogram and Merge() them
// once the threads are done.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rampart {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBucketCount = uint64_t{1} << kSubBucketBits;  // 128
  static constexpr size_t kBucketCount = (64 - kSubBucketBits) * kSubBucketCount + kSubBucketCount;
  // Largest relative error of a reported value (half a bucket).
  static constexpr double kRelativePrecision = 1.0 / (2 * kSubBucketCount);

  Histogram();

  // Counts `value` (nanoseconds, or any unit) once / `count` times.
  void Record(uint64_t value) { RecordMany(value, 1); }
  void Record(std::chrono::nanoseconds d) { RecordMany(d.count() < 0 ? 0 : d.count(), 1); }
  void RecordMany(uint64_t value, uint64_t count) {
    if (count == 0) return;
    counts_[BucketIndex(value)] += count;
    count_ += count;
    sum_ += static_cast<double>(value) * static_cast<double>(count);
    if (value < min_) min_ = value;
    if (value > max_) max_ = value;
  }

  // Adds every value recorded in `other`.
  void Merge(const Histogram& other);
  // Forgets every value.
  void Reset();

  uint64_t Count() const { return count_; }
  // 0 when empty.
  uint64_t Min() const { return count_ == 0 ? 0 : min_; }
  uint64_t Max() const { return max_; }
  double Mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }

  // The value below or at which `p` percent of the recorded values lie, for
  // p in [0, 100] (clamped). 0 when empty.
  uint64_t Percentile(double p) const;

  // "n=1000 mean=1.52us min=1.10us p50=1.49us p99=2.31us p99.9=4.02us max=9.87us",
  // reading values as nanoseconds.
  std::string Summary() const;

  // Bucket arithmetic, exposed for tests.
  static size_t BucketIndex(uint64_t value) {
    if (value < kSubBucketCount) return static_cast<size_t>(value);
    const int msb = 63 - __builtin_clzll(value);
    const int shift = msb - kSubBucketBits;
    return static_cast<size_t>(shift) * kSubBucketCount + static_cast<size_t>(value >> shift);
  }
  static uint64_t BucketLow(size_t index);   // smallest value of the bucket
  static uint64_t BucketHigh(size_t index);  // largest value of the bucket

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  double sum_ = 0;
};

// "950ns", "1.52us", "12.0ms", "3.20s": a duration in nanoseconds for tables.
std::string FormatNanos(double ns);

}  // namespace rampart
