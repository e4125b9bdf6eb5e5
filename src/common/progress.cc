#include "common/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/status.h"

namespace rampart {

double ProgressSnapshot::bytes_per_second() const {
  if (elapsed_s <= 0 || bytes_per_unit == 0) return 0;
  return static_cast<double>(done) * static_cast<double>(bytes_per_unit) / elapsed_s;
}

std::optional<double> ProgressSnapshot::eta_seconds() const {
  if (done >= total) return 0.0;
  if (done == 0 || elapsed_s <= 0) return std::nullopt;
  return elapsed_s * static_cast<double>(total - done) / static_cast<double>(done);
}

std::string FormatDuration(std::optional<double> seconds) {
  if (!seconds || !std::isfinite(*seconds) || *seconds < 0) return "?";
  const uint64_t s = static_cast<uint64_t>(std::llround(*seconds));
  char out[32];
  if (s >= 3600) {
    std::snprintf(out, sizeof out, "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60), static_cast<unsigned long long>(s % 60));
  } else {
    std::snprintf(out, sizeof out, "%llu:%02llu", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  }
  return out;
}

namespace {

int Percent(const ProgressSnapshot& s) {
  if (s.total == 0) return 100;
  return static_cast<int>(std::min<uint64_t>(s.done, s.total) * 100 / s.total);
}

// ", 41.2 MB/s" or "" without a byte count.
std::string Rate(const ProgressSnapshot& s, const char* separator) {
  if (s.bytes_per_unit == 0) return "";
  char out[64];
  std::snprintf(out, sizeof out, "%s%.1f MB/s", separator, s.bytes_per_second() / 1e6);
  return out;
}

}  // namespace

std::string FormatProgressLine(const std::string& label, const std::string& unit,
                               const ProgressSnapshot& s) {
  return StrCat(label, ": ", unit, " ", s.done, "/", s.total, " (", Percent(s), "%)",
                Rate(s, ", "), ", ETA ", FormatDuration(s.eta_seconds()));
}

std::string FormatProgressBar(const std::string& label, const std::string& unit,
                              const ProgressSnapshot& s, int bar_width) {
  const int filled = bar_width * Percent(s) / 100;
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", Percent(s));
  return StrCat(label, " [", std::string(filled, '#'), std::string(bar_width - filled, '.'),
                "] ", percent, "  ", unit, " ", s.done, "/", s.total, Rate(s, "  "), "  ETA ",
                FormatDuration(s.eta_seconds()));
}

ProgressMeter::ProgressMeter(ProgressOptions options, Clock::time_point start)
    : options_(std::move(options)),
      tty_(options_.tty.value_or(isatty(fileno(options_.stream)) == 1)),
      start_(start),
      last_draw_(start) {}

ProgressMeter::~ProgressMeter() { Finish(); }

ProgressSnapshot ProgressMeter::Snapshot(Clock::time_point now) const {
  return ProgressSnapshot{
      .done = done_,
      .total = options_.total,
      .elapsed_s = std::chrono::duration<double>(now - start_).count(),
      .bytes_per_unit = options_.bytes_per_unit,
  };
}

void ProgressMeter::Draw(Clock::time_point now) {
  last_draw_ = now;
  const ProgressSnapshot s = Snapshot(now);
  if (tty_) {
    // \33[K clears what a longer previous line left.
    std::fprintf(options_.stream, "\r%s\33[K", FormatProgressBar(options_.label, options_.unit, s).c_str());
  } else {
    std::fprintf(options_.stream, "%s\n", FormatProgressLine(options_.label, options_.unit, s).c_str());
  }
  std::fflush(options_.stream);
}

void ProgressMeter::Update(uint64_t done, Clock::time_point now) {
  if (finished_) return;
  done_ = std::max(done_, done);
  const auto interval = tty_ ? options_.redraw_interval : options_.line_interval;
  if (now - last_draw_ >= interval) Draw(now);
}

void ProgressMeter::Finish(Clock::time_point now) {
  if (finished_) return;
  finished_ = true;
  Draw(now);
  if (tty_) {
    std::fputc('\n', options_.stream);
    std::fflush(options_.stream);
  }
}

}  // namespace rampart
