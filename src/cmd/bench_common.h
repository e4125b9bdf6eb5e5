// What the storage benchmarks (bench_iops.cc, bench_volume.cc) share: the
// outcome of one timed run, its table row and its JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iomanip>
#include <iostream>
#include <string>

#include "common/histogram.h"

namespace rampart::cmd {

// One timed run: operations done, bytes moved, latency percentiles.
struct RunResult {
  uint64_t ops = 0, bytes = 0, errors = 0;
  double seconds = 0;
  uint64_t p50_ns = 0, p99_ns = 0;
  std::string first_error;
  double iops() const { return seconds > 0 ? ops / seconds : 0; }
  double mb_per_sec() const { return seconds > 0 ? bytes / seconds / 1e6 : 0; }
};

// Prints `title`, a header line and the row (ops, IOPS, MB/s, p50, p99,
// errors) on stdout, then the first error if any.
inline void PrintRow(const std::string& title, const RunResult& r) {
  std::cout << title << "\n"
            << std::right << std::setw(12) << "ops" << std::setw(12) << "IOPS" << std::setw(10)
            << "MB/s" << std::setw(10) << "p50" << std::setw(10) << "p99" << std::setw(8)
            << "errors" << "\n"
            << std::fixed << std::setprecision(0) << std::setw(12) << r.ops << std::setw(12)
            << r.iops() << std::setprecision(1) << std::setw(10) << r.mb_per_sec()
            << std::setw(10) << FormatNanos(static_cast<double>(r.p50_ns)) << std::setw(10)
            << FormatNanos(static_cast<double>(r.p99_ns)) << std::setw(8) << r.errors << "\n";
  std::cout.unsetf(std::ios::floatfield);
  if (!r.first_error.empty()) std::cout << "first error: " << r.first_error << "\n";
}

inline nlohmann::json ResultJson(const RunResult& r) {
  return {{"ops", r.ops},          {"bytes", r.bytes},         {"errors", r.errors},
          {"seconds", r.seconds},  {"iops", r.iops()},         {"mb_per_sec", r.mb_per_sec()},
          {"p50_ns", r.p50_ns},    {"p99_ns", r.p99_ns},       {"first_error", r.first_error}};
}

}  // namespace rampart::cmd
