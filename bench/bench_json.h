// Writing benchmark results: every driver builds an nlohmann::json document
// ({"benchmark", "configuration", "results"}) and writes it with this.
#pragma once

#include <nlohmann/json.hpp>

#include <cerrno>
#include <fstream>
#include <string>

#include "common/status.h"

namespace rampart::bench {

inline Status WriteJsonFile(const nlohmann::json& doc, const std::string& path) {
  std::ofstream out(path);
  if (!out) return ErrnoStatus("open " + path, errno);
  out << doc.dump(2) << "\n";
  if (!out) return ErrnoStatus("write " + path, errno);
  return Status();
}

}  // namespace rampart::bench
