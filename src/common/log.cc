#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace rampart {
namespace {

constexpr const char* kPattern = "%Y-%m-%d %H:%M:%S.%e %n[%P] %^%l%$: %v";

constexpr spdlog::level::level_enum kLevels[] = {
    spdlog::level::trace, spdlog::level::debug,    spdlog::level::info, spdlog::level::warn,
    spdlog::level::err,   spdlog::level::critical, spdlog::level::off};
static_assert(std::size(kLevels) == std::size(kLogLevelNames));

std::optional<spdlog::level::level_enum> ParseLevel(std::string_view name) {
  if (name == "warning") return spdlog::level::warn;
  if (name == "err") return spdlog::level::err;
  for (size_t i = 0; i < std::size(kLogLevelNames); ++i) {
    if (name == kLogLevelNames[i]) return kLevels[i];
  }
  return std::nullopt;
}

}  // namespace

Status CheckLogLevel(std::string_view level) {
  if (ParseLevel(level)) return Status::Ok();
  return InvalidArgument("unknown log level \"", level,
                         "\" (use trace, debug, info, warn, error, critical or off)");
}

void InitLogging(std::string_view level, std::string_view process_name) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(std::string(process_name), std::move(sink));
  logger->set_pattern(kPattern);
  logger->flush_on(spdlog::level::warn);

  std::string problem;
  std::optional<spdlog::level::level_enum> chosen;
  if (const char* env = std::getenv("RAMPART_LOG"); env != nullptr && *env != '\0') {
    chosen = ParseLevel(env);
    if (!chosen) problem = StrCat("RAMPART_LOG: ", CheckLogLevel(env).message());
  } else {
    chosen = ParseLevel(level);
    if (!chosen) problem = std::string(CheckLogLevel(level).message());
  }
  logger->set_level(chosen.value_or(spdlog::level::info));
  spdlog::set_default_logger(std::move(logger));
  if (!problem.empty()) spdlog::warn("{}; logging at info", problem);
}

std::string_view CurrentLogLevel() {
  const spdlog::level::level_enum current = spdlog::default_logger_raw()->level();
  for (size_t i = 0; i < std::size(kLevels); ++i) {
    if (kLevels[i] == current) return kLogLevelNames[i];
  }
  return "info";
}

}  // namespace rampart
