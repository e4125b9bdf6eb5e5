// Logging: spdlog's default logger, set up once at start-up.
//
//   InitLogging("info");
//   spdlog::info("listening on {}", address);
//
// Everything goes to stderr (stdout belongs to command output: tables, TOML,
// JSON), colored when stderr is a terminal, in one pattern:
//
//   2024-05-01 12:00:00.123 rampart[4242] info: listening on 127.0.0.1:7000
//   (time, process name [pid], level, message)
//
// Levels, most to least verbose: trace debug info warn error critical off
// ("warning" and "err" are accepted too). The environment variable
// RAMPART_LOG, when set, overrides the level a program asks for.
#pragma once

#include <string_view>

#include "common/status.h"

namespace rampart {

// The level names, most to least verbose.
inline constexpr std::string_view kLogLevelNames[] = {"trace", "debug",    "info", "warn",
                                                      "error", "critical", "off"};

// OK iff `level` names a level; otherwise InvalidArgument listing the names.
Status CheckLogLevel(std::string_view level);

// Replaces spdlog's default logger with one writing to stderr at `level`, or
// at $RAMPART_LOG when that is set. An invalid level (argument or variable)
// is reported with a warning and replaced by "info". Messages at warn and
// above are flushed at once. `process_name` appears in every line.
// Call from main before starting threads; calling again replaces the logger.
void InitLogging(std::string_view level, std::string_view process_name = "rampart");

// The level in effect, as one of kLogLevelNames.
std::string_view CurrentLogLevel();

}  // namespace rampart
