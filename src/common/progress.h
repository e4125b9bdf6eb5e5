// ProgressMeter: progress of a long operation on a terminal or in a log.
//
//   ProgressMeter meter({.label = "rebuild data", .unit = "stripes",
//                        .total = stripes, .bytes_per_unit = stripe_bytes});
//   for (...) meter.Update(done);   // cheap: draws at most every redraw interval
//   meter.Finish();                 // the final line, always
//
// On a terminal (the stream is a TTY) it redraws one line in place:
//
//   rebuild data [##########..........]  50%  stripes 256/512  41.2 MB/s  ETA 0:06
//
// Otherwise (a pipe, a file, a log collector) it prints a whole line every
// `line_interval`, and the last one when it finishes:
//
//   rebuild data: stripes 256/512 (50%), 41.2 MB/s, ETA 0:06
//
// MB/s is 10^6 bytes per second over the whole run (done * bytes_per_unit /
// elapsed); ETA extrapolates that rate to the units left.
//
// Thread-safety: none; one thread drives a meter.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace rampart {

struct ProgressOptions {
  std::string label;                // "rebuild data"
  std::string unit = "items";       // what is counted: "stripes"
  uint64_t total = 0;               // units in all
  uint64_t bytes_per_unit = 0;      // for MB/s; 0 leaves the rate out
  std::FILE* stream = stderr;       // where it draws
  // Whether to draw a bar in place; unset: whether `stream` is a terminal.
  std::optional<bool> tty;
  // Non-terminal: a line at most this often. Default: 5 s.
  std::chrono::milliseconds line_interval = std::chrono::seconds(5);
  // Terminal: a redraw at most this often. Default: 100 ms.
  std::chrono::milliseconds redraw_interval = std::chrono::milliseconds(100);
};

// What a meter shows at one moment, and how it is written.
struct ProgressSnapshot {
  uint64_t done = 0;
  uint64_t total = 0;
  double elapsed_s = 0;
  uint64_t bytes_per_unit = 0;

  // Bytes per second so far; 0 before any time passed or without bytes_per_unit.
  double bytes_per_second() const;
  // Seconds left at the rate so far; nullopt when unknown (no progress yet).
  std::optional<double> eta_seconds() const;
};

// "0:06", "12:34", "1:02:03"; "?" for nullopt.
std::string FormatDuration(std::optional<double> seconds);
// The non-terminal line (no newline): "LABEL: UNIT done/total (P%), R MB/s, ETA T".
std::string FormatProgressLine(const std::string& label, const std::string& unit,
                               const ProgressSnapshot& s);
// The terminal line (no \r, no newline), with a bar `bar_width` characters wide.
std::string FormatProgressBar(const std::string& label, const std::string& unit,
                              const ProgressSnapshot& s, int bar_width = 20);

class ProgressMeter {
 public:
  using Clock = std::chrono::steady_clock;

  // `start` is when the operation began (for tests).
  explicit ProgressMeter(ProgressOptions options, Clock::time_point start = Clock::now());
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;
  // Finish()es if that has not happened.
  ~ProgressMeter();

  // `done` units of total so far (non-decreasing). Draws when the interval
  // passed since the last drawing (`now` is for tests).
  void Update(uint64_t done, Clock::time_point now = Clock::now());
  // Draws the final state (on a terminal: ends the line). Idempotent.
  void Finish(Clock::time_point now = Clock::now());

  bool tty() const { return tty_; }

 private:
  ProgressSnapshot Snapshot(Clock::time_point now) const;
  void Draw(Clock::time_point now);

  const ProgressOptions options_;
  const bool tty_;
  const Clock::time_point start_;
  Clock::time_point last_draw_;
  uint64_t done_ = 0;
  bool finished_ = false;
};

}  // namespace rampart
