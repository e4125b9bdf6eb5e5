// Shared by the config tests (config_test.cc, config_volumes_test.cc): parse
// TOML text named "c.toml" over the embedded default.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "common/config.h"

namespace rampart::config_test {

// The message of a failed parse of `text` (named "c.toml"), or "OK".
inline std::string ErrorOf(std::string_view text) {
  Result<ClusterConfig> r = ParseClusterConfig(text, "c.toml");
  if (r.ok()) return "OK";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

// The configuration `text` gives; a failure fails the test.
inline ClusterConfig ParseOk(std::string_view text) {
  Result<ClusterConfig> r = ParseClusterConfig(text, "c.toml");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ClusterConfig{};
}

}  // namespace rampart::config_test
