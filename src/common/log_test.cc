#include "common/log.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace rampart {
namespace {

TEST(LogTest, CheckLogLevel) {
  for (std::string_view level : kLogLevelNames) EXPECT_TRUE(CheckLogLevel(level).ok()) << level;
  EXPECT_TRUE(CheckLogLevel("warning").ok());
  EXPECT_TRUE(CheckLogLevel("err").ok());
  const Status bad = CheckLogLevel("loud");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "unknown log level \"loud\" (use trace, debug, info, warn, error, critical or off)");
}

TEST(LogTest, InitSetsTheLevel) {
  unsetenv("RAMPART_LOG");
  InitLogging("debug", "log_test");
  EXPECT_EQ(CurrentLogLevel(), "debug");
  EXPECT_EQ(spdlog::default_logger()->name(), "log_test");
  InitLogging("warning");
  EXPECT_EQ(CurrentLogLevel(), "warn");
  InitLogging("nonsense");  // warns, falls back
  EXPECT_EQ(CurrentLogLevel(), "info");
}

TEST(LogTest, EnvironmentOverrides) {
  setenv("RAMPART_LOG", "error", 1);
  InitLogging("trace");
  EXPECT_EQ(CurrentLogLevel(), "error");
  setenv("RAMPART_LOG", "bogus", 1);
  InitLogging("trace");
  EXPECT_EQ(CurrentLogLevel(), "info");
  unsetenv("RAMPART_LOG");
  InitLogging("off");
  EXPECT_EQ(CurrentLogLevel(), "off");
  InitLogging("info");  // leave the default for other tests
}

}  // namespace
}  // namespace rampart
