#include "common/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace rampart {
namespace {

using std::chrono::milliseconds;
using Clock = ProgressMeter::Clock;

// Everything written to `f` so far.
std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(ProgressTest, Durations) {
  EXPECT_EQ(FormatDuration(0.0), "0:00");
  EXPECT_EQ(FormatDuration(6.4), "0:06");
  EXPECT_EQ(FormatDuration(754), "12:34");
  EXPECT_EQ(FormatDuration(3723), "1:02:03");
  EXPECT_EQ(FormatDuration(std::nullopt), "?");
  EXPECT_EQ(FormatDuration(-1.0), "?");
}

TEST(ProgressTest, RateAndEta) {
  ProgressSnapshot s{.done = 256, .total = 512, .elapsed_s = 2.0, .bytes_per_unit = 1000000};
  EXPECT_DOUBLE_EQ(s.bytes_per_second(), 128e6);
  EXPECT_DOUBLE_EQ(*s.eta_seconds(), 2.0);
  s.done = 0;
  EXPECT_FALSE(s.eta_seconds().has_value());
  s.done = 512;
  EXPECT_DOUBLE_EQ(*s.eta_seconds(), 0.0);
  s.bytes_per_unit = 0;
  EXPECT_EQ(s.bytes_per_second(), 0);
}

TEST(ProgressTest, Line) {
  ProgressSnapshot s{.done = 256, .total = 512, .elapsed_s = 6.0, .bytes_per_unit = 49152};
  EXPECT_EQ(FormatProgressLine("rebuild data", "stripes", s),
            "rebuild data: stripes 256/512 (50%), 2.1 MB/s, ETA 0:06");
  s.bytes_per_unit = 0;
  EXPECT_EQ(FormatProgressLine("verify", "stripes", s), "verify: stripes 256/512 (50%), ETA 0:06");
}

TEST(ProgressTest, Bar) {
  ProgressSnapshot s{.done = 1, .total = 4, .elapsed_s = 1.0, .bytes_per_unit = 1000000};
  EXPECT_EQ(FormatProgressBar("rebuild", "stripes", s, 8),
            "rebuild [##......]  25%  stripes 1/4  1.0 MB/s  ETA 0:03");
  s.done = 4;
  EXPECT_EQ(FormatProgressBar("rebuild", "stripes", s, 8),
            "rebuild [########] 100%  stripes 4/4  4.0 MB/s  ETA 0:00");
}

TEST(ProgressTest, LinesAreRateLimitedAndTheLastAlwaysPrinted) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  const Clock::time_point t0 = Clock::now();
  {
    ProgressMeter meter({.label = "v", .unit = "stripes", .total = 10, .stream = f, .tty = false,
                         .line_interval = milliseconds(1000)},
                        t0);
    EXPECT_FALSE(meter.tty());
    meter.Update(1, t0 + milliseconds(100));   // too soon
    meter.Update(5, t0 + milliseconds(1000));  // a line
    meter.Update(6, t0 + milliseconds(1500));  // too soon
    meter.Finish(t0 + milliseconds(2000));
    meter.Finish(t0 + milliseconds(3000));     // idempotent
  }  // the destructor adds nothing after Finish
  EXPECT_EQ(Contents(f),
            "v: stripes 5/10 (50%), ETA 0:01\n"
            "v: stripes 6/10 (60%), ETA 0:01\n");
  std::fclose(f);
}

TEST(ProgressTest, TerminalRedrawsInPlaceAndEndsTheLine) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  const Clock::time_point t0 = Clock::now();
  {
    ProgressMeter meter({.label = "v", .unit = "stripes", .total = 2, .stream = f, .tty = true,
                         .redraw_interval = milliseconds(100)},
                        t0);
    meter.Update(1, t0 + milliseconds(500));
  }  // the destructor finishes
  const std::string out = Contents(f);
  EXPECT_EQ(out.front(), '\r');
  EXPECT_EQ(std::count(out.begin(), out.end(), '\r'), 2) << out;  // Update, Finish
  EXPECT_NE(out.find("\rv [##########..........]  50%  stripes 1/2"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  std::fclose(f);
}

}  // namespace
}  // namespace rampart
