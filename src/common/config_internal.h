// Private to src/common/config*.cc: the types of the settings table, shared by
// the table itself (config_settings.cc: every setting, its range and doc, and
// the checks that span several settings) and the TOML walk that applies it
// (config.cc: parsing, `config show`, the docs table, unknown-key hints).
//
// Thread-safety: the tables are constant; the functions are pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace rampart::config_internal {

enum class Kind {
  kString,   // any string that passes `check`
  kChoice,   // one of `choices`
  kInteger,  // integer in [min, max]
  kSize,     // integer bytes or "64MiB", in [min, max], maybe a power of two
  kBool,     // TOML true or false
  kIdList,   // array of integers, each in [min, max]
};

// The field a setting fills. A row's kind and field agree: kString and
// kChoice fill a std::string, kBool a bool, kInteger and kSize an integer
// wide enough for `max`, kIdList a std::vector<uint32_t>.
template <typename Target>
using FieldRef =
    std::variant<std::string& (*)(Target&), uint64_t& (*)(Target&), uint32_t& (*)(Target&),
                 uint16_t& (*)(Target&), bool& (*)(Target&),
                 std::vector<uint32_t>& (*)(Target&)>;

// Returns what is wrong with a string value ("must not be empty"), or "".
using StringCheck = std::string (*)(std::string_view value);

template <typename Target>
struct Setting {
  std::string_view key;  // dotted path from the root of Target's table
  Kind kind;
  FieldRef<Target> field;
  std::string_view doc;
  uint64_t min = 0;  // kInteger, kSize, kIdList (each element)
  uint64_t max = 0;
  bool power_of_two = false;  // kSize
  std::span<const std::string_view> choices = {};  // kChoice
  StringCheck check = nullptr;  // kString
  bool required = false;  // no default: the key must be present
  // kInteger: the string "auto" is accepted too and stored as this value
  // (outside [min, max]); 0 = no "auto".
  uint64_t auto_value = 0;
};

// Every cluster setting, grouped by section, sections in the order
// `config show` prints them (so no top-level key may follow a table's).
std::span<const Setting<ClusterConfig>> ClusterSettings();
// The keys of one [[nodes]] entry.
std::span<const Setting<NodeConfig>> NodeSettings();
// The keys of one [[storage_nodes]] entry.
std::span<const Setting<StorageNodeConfig>> StorageNodeSettings();
// The keys of one [[volumes]] entry.
std::span<const Setting<VolumeConfig>> VolumeSettings();
// The keys of one [[proxies]] entry.
std::span<const Setting<ProxyAddressConfig>> ProxyAddressSettings();

// The checks that involve more than one setting, run once the whole file is
// applied: at least one node, the nodes' partition port ranges, the
// proxy's replicas and the proxies' ports against the nodes, the secret, the storage limits, and the
// volumes against the storage nodes. InvalidArgument naming the
// keys ("proxy.replicas is 3 but ..."), without the file name, which the
// caller puts in front.
Status CheckClusterConfig(const ClusterConfig& config);

}  // namespace rampart::config_internal
