// The TOML walk behind config.h.
//
// Every setting is one row of the settings table in config_settings.cc
// (ClusterSettings(), or NodeSettings(), StorageNodeSettings() and
// VolumeSettings() for the keys of a [[nodes]], [[storage_nodes]] or
// [[volumes]] entry):
// its dotted key, kind, range, doc and the field it fills. Parsing, `config
// show`, the docs table and the unknown-key suggestions are all driven from
// these rows, like redis's config.c.
//
// toml++ reports syntax errors by throwing; that happens only here, at
// start-up, and becomes a Status before it leaves this file.
#include "common/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <sched.h>
#include <sys/stat.h>
#include <cstdio>
#include <limits>
#include <map>
#include <thread>
#include <span>
#include <type_traits>
#include <variant>

#include <toml++/toml.h>

#include "common/config_internal.h"
#include "common/default_toml.h"  // generated from config/default.toml

namespace rampart {
namespace {

using config_internal::ClusterSettings;
using config_internal::Kind;
using config_internal::NodeSettings;
using config_internal::ProxyAddressSettings;
using config_internal::Setting;
using config_internal::StorageNodeSettings;
using config_internal::VolumeSettings;

constexpr std::string_view kNodesKey = "nodes";
constexpr std::string_view kStorageNodesKey = "storage_nodes";
constexpr std::string_view kVolumesKey = "volumes";
constexpr std::string_view kProxiesKey = "proxies";
constexpr std::string_view kDefaultOrigin = "<default>";

// 127.0.0.0/8, "localhost", "::1": this machine only.
bool IsLoopbackName(std::string_view host) {
  return host == "localhost" || host.starts_with("127.") || host == "::1";
}

// Every process of the file on this machine (every host a loopback address):
// the "auto" settings then size themselves by this machine's cores.
bool AllHostsLoopback(const ClusterConfig& config) {
  for (const std::string& host : config.Hosts()) {
    if (!IsLoopbackName(host)) return false;
  }
  return true;
}

// The "auto" values a loaded configuration holds as numbers.
void ResolveAuto(ClusterConfig& config) {
  if (config.kv.partitions_per_node == KvConfig::kPartitionsAuto) {
    config.kv.partitions_per_node = AutoPartitionsPerNode(config, UsableCores());
  }
}

// ---------------------------------------------------------------------------
// Values

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

// "string \"50\"", "integer -1", "a table": what a node is, for error messages.
std::string Describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "string " + Quote(**node.as_string());
    case toml::node_type::integer: return StrCat("integer ", **node.as_integer());
    case toml::node_type::floating_point: return fmt::format("float {}", **node.as_floating_point());
    case toml::node_type::boolean: return **node.as_boolean() ? "boolean true" : "boolean false";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

// Stores `value` (a std::string, bool or uint64_t) in the field of `s`; the
// row's kind guarantees the field has that type (an integer field: in range).
template <typename Target, typename Value>
void Assign(const Setting<Target>& s, Target& target, const Value& value) {
  std::visit(
      [&](auto ref) {
        auto& slot = ref(target);
        using Slot = std::remove_reference_t<decltype(slot)>;
        if constexpr (std::is_same_v<Slot, Value>) {
          slot = value;
        } else if constexpr (std::is_integral_v<Slot> && !std::is_same_v<Slot, bool> &&
                             std::is_same_v<Value, uint64_t>) {
          assert(s.max <= std::numeric_limits<Slot>::max() && "setting range exceeds its field");
          slot = static_cast<Slot>(value);
        } else {
          assert(false && "the setting's kind does not match its field's type");
        }
      },
      s.field);
}

// The value of `s` in `target`, spelled as TOML.
template <typename Target>
std::string FormatValue(const Setting<Target>& s, const Target& target) {
  Target& t = const_cast<Target&>(target);  // the accessors return mutable refs; we only read
  return std::visit(
      [&](auto ref) -> std::string {
        const auto& slot = ref(t);
        using Slot = std::remove_cvref_t<decltype(slot)>;
        if constexpr (std::is_same_v<Slot, std::string>) {
          return Quote(slot);
        } else if constexpr (std::is_same_v<Slot, std::vector<uint32_t>>) {
          std::string out = "[";
          for (size_t i = 0; i < slot.size(); ++i) out += StrCat(i > 0 ? ", " : "", slot[i]);
          return out + "]";
        } else if constexpr (std::is_same_v<Slot, bool>) {
          return slot ? "true" : "false";
        } else {
          if (s.auto_value != 0 && slot == s.auto_value) return std::string("\"auto\"");
          return s.kind == Kind::kSize ? Quote(FormatSize(slot)) : std::to_string(slot);
        }
      },
      s.field);
}

std::string ChoiceList(std::span<const std::string_view> choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += Quote(choices[i]);
  }
  return out;
}

template <typename Target>
std::string TypeText(const Setting<Target>& s) {
  switch (s.kind) {
    case Kind::kString: return "string";
    case Kind::kChoice: return "string: " + ChoiceList(s.choices);
    case Kind::kInteger:
      return StrCat("integer, ", s.min, "..", s.max, s.auto_value != 0 ? ", or \"auto\"" : "");
    case Kind::kSize:
      return StrCat("size, ", s.power_of_two ? "power of two, " : "", FormatSize(s.min), "..",
                    FormatSize(s.max));
    case Kind::kBool: return "boolean";
    case Kind::kIdList: return StrCat("array of integers, ", s.min, "..", s.max);
  }
  return "";
}

// ---------------------------------------------------------------------------
// Unknown keys

// Edits (insert, delete, substitute, swap two neighbours) turning a into b.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string_view LastComponent(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

// The known key `key` was probably meant to be, or "".
std::string BestMatch(std::string_view key, const std::vector<std::string>& known) {
  // The right name in the wrong table first ("backend" at the top level).
  for (const std::string& k : known) {
    if (LastComponent(k) == LastComponent(key)) return k;
  }
  const size_t limit = std::clamp<size_t>(LastComponent(key).size() / 3, 1, 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& k : known) {
    const size_t d = EditDistance(key, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  return best;
}

std::string DidYouMean(std::string_view prefix, std::string_view match) {
  return match.empty() ? "" : StrCat(" (did you mean ", prefix, match, "?)");
}

// Every key and table name a cluster file may contain.
const std::vector<std::string>& KnownClusterKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    auto add = [&](std::string k) {
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(std::move(k));
    };
    for (const auto& s : ClusterSettings()) {
      const std::string_view key = s.key;
      for (size_t dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.', dot + 1)) {
        add(std::string(key.substr(0, dot)));
      }
      add(std::string(key));
    }
    add(std::string(kNodesKey));
    add(std::string(kStorageNodesKey));
    add(std::string(kVolumesKey));
    add(std::string(kProxiesKey));
    return out;
  }();
  return keys;
}

bool IsSection(std::string_view key) {
  for (const auto& s : ClusterSettings()) {
    if (s.key.size() > key.size() && s.key.starts_with(key) && s.key[key.size()] == '.') return true;
  }
  return false;
}

template <typename Target>
const Setting<Target>* FindSetting(std::span<const Setting<Target>> table, std::string_view key) {
  for (const auto& s : table) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// The walk

class Parser {
 public:
  explicit Parser(std::string_view origin) : origin_(origin) {}

  // Walks the whole file and reports its first problem in file order (the
  // walk follows toml++'s tables, which need not be in file order).
  Status Apply(const toml::table& root, ClusterConfig& config) {
    ApplyTable(root, "", config);
    if (!errors_.empty()) {
      return std::min_element(errors_.begin(), errors_.end(),
                              [](const auto& a, const auto& b) { return a.first < b.first; })
          ->second;
    }
    // "auto" is checked as what it resolves to, and stays "auto" in a base
    // that another file is parsed onto (its nodes may differ).
    ClusterConfig resolved = config;
    ResolveAuto(resolved);
    Status st = config_internal::CheckClusterConfig(resolved);
    if (!st.ok()) return Status(st.code(), StrCat(origin_, ": ", st.message()));
    return Status::Ok();
  }

  // An error at `where`, "origin:line:column: parts...", recorded for Apply().
  template <typename... Parts>
  Status At(const toml::source_region& where, const Parts&... parts) {
    Status error = where.begin.line == 0
                       ? InvalidArgument(origin_, ": ", parts...)
                       : InvalidArgument(origin_, ":", where.begin.line, ":", where.begin.column,
                                         ": ", parts...);
    const uint64_t line = where.begin.line == 0 ? UINT32_MAX : where.begin.line;
    errors_.emplace_back((line << 32) | where.begin.column, error);
    return error;
  }

 private:
  using Entry = std::pair<const toml::key*, const toml::node*>;

  // The entries of `table` in file order, so the first error reported is the
  // first one in the file.
  static std::vector<Entry> InFileOrder(const toml::table& table) {
    std::vector<Entry> out;
    for (auto&& [key, node] : table) out.emplace_back(&key, &node);
    std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
      const auto& pa = a.first->source().begin;
      const auto& pb = b.first->source().begin;
      return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
    });
    return out;
  }

  // Applies every entry; problems are recorded by At() and the walk goes on.
  void ApplyTable(const toml::table& table, const std::string& prefix, ClusterConfig& config) {
    for (const auto& [key, node] : InFileOrder(table)) {
      const std::string full = prefix.empty() ? std::string(key->str())
                                              : StrCat(prefix, ".", key->str());
      if (prefix.empty() && full == kNodesKey) {
        config.nodes = ApplyList(*node, "nodes", NodeSettings(), /*may_be_empty=*/false,
                                 "every [[nodes]] entry needs id, host and port");
      } else if (prefix.empty() && full == kStorageNodesKey) {
        config.storage_nodes =
            ApplyList(*node, "storage_nodes", StorageNodeSettings(), /*may_be_empty=*/true,
                      "every [[storage_nodes]] entry needs id, host, port, path and size");
      } else if (prefix.empty() && full == kProxiesKey) {
        config.proxies = ApplyList(*node, "proxies", ProxyAddressSettings(), /*may_be_empty=*/true,
                                   "every [[proxies]] entry needs id, host and port");
      } else if (prefix.empty() && full == kVolumesKey) {
        config.volumes = ApplyList(*node, "volumes", VolumeSettings(), /*may_be_empty=*/true,
                                   "every [[volumes]] entry needs name, size and nodes");
      } else if (const auto* s = FindSetting(ClusterSettings(), full)) {
        static_cast<void>(ApplySetting(*s, full, *node, config));
      } else if (IsSection(full)) {
        if (const toml::table* sub = node->as_table()) {
          ApplyTable(*sub, full, config);
        } else {
          static_cast<void>(At(node->source(), full, " must be a table, got ", Describe(*node)));
        }
      } else {
        static_cast<void>(At(key->source(), "unknown key ", full,
                             DidYouMean("", BestMatch(full, KnownClusterKeys()))));
      }
    }
  }

  // A list of tables ([[nodes]], [[storage_nodes]], [[volumes]]): every entry
  // through its settings table; node ids and addresses, and volume names,
  // unique within the list.
  template <typename Entry>
  std::vector<Entry> ApplyList(const toml::node& node, std::string_view list,
                               std::span<const Setting<Entry>> settings, bool may_be_empty,
                               std::string_view required_text) {
    std::vector<Entry> entries;
    const toml::array* array = node.as_array();
    if (!array) {
      static_cast<void>(At(node.source(), list, " must be an array of tables ([[", list,
                           "]]), got ", Describe(node)));
      return entries;
    }
    if (array->empty() && !may_be_empty) {
      static_cast<void>(At(node.source(), list, " must list at least one node"));
      return entries;
    }
    std::map<uint32_t, size_t> by_id;
    std::map<std::string, size_t> by_address;
    std::map<std::string, size_t> by_name;
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& element = *array->get(i);
      const std::string name = StrCat(list, "[", i, "]");
      const toml::table* table = element.as_table();
      if (!table) {
        static_cast<void>(At(element.source(), name, " must be a table, got ", Describe(element)));
        continue;
      }
      Entry n;
      if (!ApplyEntry(*table, name, settings, n, required_text).ok()) continue;
      if constexpr (std::is_same_v<Entry, VolumeConfig>) {
        if (auto [it, fresh] = by_name.emplace(n.name, i); !fresh) {
          static_cast<void>(At(table->get("name")->source(), name, ".name ", Quote(n.name),
                               " is already the name of ", list, "[", it->second, "]"));
        }
      } else if (auto [it, fresh] = by_id.emplace(n.id, i); !fresh) {
        static_cast<void>(At(table->get("id")->source(), name, ".id ", n.id,
                             " is already the id of ", list, "[", it->second, "]"));
      } else if (auto [at, fresh_address] = by_address.emplace(n.address(), i); !fresh_address) {
        static_cast<void>(At(table->get("port")->source(), name, " address ", n.address(),
                             " is already the address of ", list, "[", at->second, "]"));
      }
      entries.push_back(std::move(n));
    }
    return entries;
  }

  template <typename Target>
  Status ApplyEntry(const toml::table& table, const std::string& name,
                    std::span<const Setting<Target>> settings, Target& entry,
                    std::string_view required_text) {
    std::vector<std::string> known;
    for (const auto& s : settings) known.emplace_back(s.key);
    for (const auto& [key, value] : InFileOrder(table)) {
      const std::string full = StrCat(name, ".", key->str());
      const auto* s = FindSetting(settings, key->str());
      if (!s) {
        return At(key->source(), "unknown key ", full,
                  DidYouMean(name + ".", BestMatch(key->str(), known)));
      }
      RAMPART_RETURN_IF_ERROR(ApplySetting(*s, full, *value, entry));
    }
    for (const auto& s : settings) {
      if (s.required && !table.contains(s.key)) {
        return At(table.source(), name, ".", s.key, " is missing (", required_text, ")");
      }
    }
    return Status::Ok();
  }

  template <typename Target>
  Status ApplySetting(const Setting<Target>& s, const std::string& key, const toml::node& node,
                      Target& target) {
    const toml::source_region& where = node.source();
    switch (s.kind) {
      case Kind::kString:
      case Kind::kChoice: {
        const auto* v = node.as_string();
        if (!v) return At(where, key, " must be a string, got ", Describe(node));
        const std::string& text = v->get();
        if (s.kind == Kind::kChoice &&
            std::find(s.choices.begin(), s.choices.end(), text) == s.choices.end()) {
          return At(where, key, " must be ", ChoiceList(s.choices), ", got ", Quote(text));
        }
        if (s.check) {
          const std::string problem = s.check(text);
          if (!problem.empty()) return At(where, key, " ", problem, ", got ", Quote(text));
        }
        Assign(s, target, text);
        return Status::Ok();
      }
      case Kind::kInteger: {
        const auto* v = node.as_integer();
        if (s.auto_value != 0 && node.as_string() && node.as_string()->get() == "auto") {
          Assign(s, target, s.auto_value);
          return Status::Ok();
        }
        if (!v) {
          return At(where, key, " must be an integer", s.auto_value != 0 ? " or \"auto\"" : "",
                    ", got ", Describe(node));
        }
        const int64_t n = v->get();
        if (n < 0 || static_cast<uint64_t>(n) < s.min || static_cast<uint64_t>(n) > s.max) {
          return At(where, key, " must be between ", s.min, " and ", s.max, ", got ", n);
        }
        Assign(s, target, static_cast<uint64_t>(n));
        return Status::Ok();
      }
      case Kind::kSize: {
        uint64_t n = 0;
        if (const auto* i = node.as_integer()) {
          if (i->get() < 0) return At(where, key, " must not be negative, got ", i->get());
          n = static_cast<uint64_t>(i->get());
        } else if (const auto* str = node.as_string()) {
          Result<uint64_t> parsed = ParseSize(str->get());
          if (!parsed.ok()) return At(where, key, " must be a size: ", parsed.status().message());
          n = *parsed;
        } else {
          return At(where, key, " must be a size (integer bytes or a string like \"64MiB\"), got ",
                    Describe(node));
        }
        if (n < s.min || n > s.max) {
          return At(where, key, " must be between ", FormatSize(s.min), " and ", FormatSize(s.max),
                    ", got ", FormatSize(n));
        }
        if (s.power_of_two && (n & (n - 1)) != 0) {
          uint64_t below = 1;
          while (below * 2 < n) below *= 2;
          return At(where, key, " must be a power of two, got ", FormatSize(n), " (", n,
                    " bytes; nearest: ", FormatSize(below), " or ", FormatSize(below * 2), ")");
        }
        Assign(s, target, n);
        return Status::Ok();
      }
      case Kind::kBool: {
        const auto* v = node.as_boolean();
        if (!v) return At(where, key, " must be a boolean, got ", Describe(node));
        Assign(s, target, v->get());
        return Status::Ok();
      }
      case Kind::kIdList: {
        const auto* array = node.as_array();
        if (!array) return At(where, key, " must be an array of integers, got ", Describe(node));
        std::vector<uint32_t> ids;
        for (size_t i = 0; i < array->size(); ++i) {
          const toml::node& element = *array->get(i);
          const auto* v = element.as_integer();
          if (!v) {
            return At(element.source(), key, "[", i, "] must be an integer, got ",
                      Describe(element));
          }
          if (v->get() < 0 || static_cast<uint64_t>(v->get()) < s.min ||
              static_cast<uint64_t>(v->get()) > s.max) {
            return At(element.source(), key, "[", i, "] must be between ", s.min, " and ", s.max,
                      ", got ", v->get());
          }
          ids.push_back(static_cast<uint32_t>(v->get()));
        }
        Assign(s, target, ids);
        return Status::Ok();
      }
    }
    return InternalError("unhandled setting kind");
  }

  std::string origin_;
  std::vector<std::pair<uint64_t, Status>> errors_;  // (line << 32 | column, error)
};

// The file's settings over `config`; "auto" values stay unresolved.
Result<ClusterConfig> ParseOnto(std::string_view text, std::string_view origin,
                                ClusterConfig config) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return Parser(origin).At(e.source(), "invalid TOML: ", e.description());
  }
  config.origin = std::string(origin);
  RAMPART_RETURN_IF_ERROR(Parser(origin).Apply(root, config));
  return config;
}

// The embedded default with its "auto" values unresolved: the base of every
// file.
const Result<ClusterConfig>& EmbeddedBase() {
  static const Result<ClusterConfig> config =
      ParseOnto(DefaultClusterConfigText(), kDefaultOrigin, ClusterConfig{});
  return config;
}

const Result<ClusterConfig>& EmbeddedDefault() {
  static const Result<ClusterConfig> config = [] {
    Result<ClusterConfig> base = EmbeddedBase();
    if (base.ok()) ResolveAuto(*base);
    return base;
  }();
  return config;
}

// Every entry of a list of tables as a [[list]] section.
template <typename Entry>
std::string FormatList(std::string_view list, std::span<const Setting<Entry>> settings,
                       const std::vector<Entry>& entries) {
  std::string out;
  for (const Entry& entry : entries) {
    out += StrCat("\n[[", list, "]]\n");
    for (const auto& s : settings) out += StrCat(s.key, " = ", FormatValue(s, entry), "\n");
  }
  return out;
}

// The docs of the keys of a list's entries, as "list[].key".
template <typename Entry>
std::vector<SettingDoc> DescribeList(std::string_view list,
                                     std::span<const Setting<Entry>> settings) {
  std::vector<SettingDoc> out;
  for (const auto& s : settings) {
    out.push_back({StrCat(list, "[].", s.key), TypeText(s),
                   s.required ? "required" : FormatValue(s, Entry{}), std::string(s.doc)});
  }
  return out;
}

}  // namespace

std::string NodeConfig::address() const { return StrCat(host, ":", port); }
std::string ProxyAddressConfig::address() const { return StrCat(host, ":", port); }

std::vector<ProxyAddressConfig> ClusterConfig::ProxyProcesses() const {
  if (!proxy.enabled) return {};
  if (!proxies.empty()) return proxies;
  return {ProxyAddressConfig{0, proxy.host, proxy.port}};
}

std::vector<std::string> ClusterConfig::Hosts() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& h) {
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  };
  for (const NodeConfig& n : nodes) add(n.host);
  for (const StorageNodeConfig& n : storage_nodes) add(n.host);
  for (const ProxyAddressConfig& p : ProxyProcesses()) add(p.host);
  return out;
}

uint64_t VolumeConfig::stripes() const {
  const uint64_t stripe_bytes = data_cells() * cell_bytes;
  return (size + stripe_bytes - 1) / stripe_bytes;
}

const VolumeConfig* ClusterConfig::FindVolume(std::string_view volume_name) const {
  for (const VolumeConfig& v : volumes) {
    if (v.name == volume_name) return &v;
  }
  return nullptr;
}
std::string StorageNodeConfig::address() const { return StrCat(host, ":", port); }

const StorageNodeConfig* ClusterConfig::FindStorageNode(uint32_t node_id) const {
  for (const StorageNodeConfig& n : storage_nodes) {
    if (n.id == node_id) return &n;
  }
  return nullptr;
}

const NodeConfig* ClusterConfig::FindNode(uint32_t node_id) const {
  for (const NodeConfig& n : nodes) {
    if (n.id == node_id) return &n;
  }
  return nullptr;
}

std::string_view DefaultClusterConfigText() { return kDefaultClusterToml; }

Result<ClusterConfig> ParseClusterConfig(std::string_view toml_text, std::string_view origin) {
  const Result<ClusterConfig>& base = EmbeddedBase();
  if (!base.ok()) return base.status().WithContext("embedded default configuration");
  RAMPART_ASSIGN_OR_RETURN(ClusterConfig config, ParseOnto(toml_text, origin, *base));
  ResolveAuto(config);
  return config;
}

uint32_t AutoPartitionsPerNode(const ClusterConfig& config, uint32_t cores) {
  if (!AllHostsLoopback(config)) return kAcrossHostsPartitions;
  const uint64_t nodes = std::max<uint64_t>(config.nodes.size(), 1);
  return static_cast<uint32_t>(std::clamp<uint64_t>(cores / (2 * nodes), 1, kMaxAutoPartitions));
}

Result<ClusterConfig> LoadClusterConfig(const std::string& path) {
  if (path.empty()) return EmbeddedDefault();
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return ErrnoStatus(StrCat(path, ": cannot read"), errno);
  std::string text;
  char buf[8192];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, file)) > 0) text.append(buf, got);
  const int err = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (err != 0) return ErrnoStatus(StrCat(path, ": cannot read"), err);
  return ParseClusterConfig(text, path);
}

uint32_t EffectiveProxyWorkers(const ClusterConfig& config, uint32_t cores) {
  if (config.proxy.workers != 0) return config.proxy.workers;
  return AllHostsLoopback(config) ? std::max(cores / 4, 1u) : std::max(cores, 1u);
}

uint32_t EffectiveSpinMicros(const ClusterConfig& config, uint32_t cores) {
  if (config.transport.spin_us != TransportConfig::kSpinAuto) return config.transport.spin_us;
  std::map<std::string, uint32_t, std::less<>> pollers;  // by host
  for (const NodeConfig& n : config.nodes) pollers[n.host] += config.kv.partitions_per_node;
  for (const ProxyAddressConfig& p : config.ProxyProcesses()) {
    pollers[p.host] += EffectiveProxyWorkers(config, cores);
  }
  for (const StorageNodeConfig& s : config.storage_nodes) pollers[s.host] += 1;
  uint32_t busiest = 0;
  for (const auto& [host, n] : pollers) busiest = std::max(busiest, n);
  return busiest < cores ? kAutoSpinMicros : 0;
}

uint32_t EffectiveProxySpinMicros(const ClusterConfig& config, uint32_t cores) {
  if (config.transport.spin_us != TransportConfig::kSpinAuto) return config.transport.spin_us;
  if (EffectiveProxyWorkers(config, cores) < cores) return kAutoSpinMicros;
  return EffectiveSpinMicros(config, cores);
}

std::string EffectiveNetDevices(const ClusterConfig& config) {
  const std::string& value = config.transport.ucx.net_devices;
  if (value == "all") return "";
  if (value != "auto") return value;
  return AllHostsLoopback(config) ? "lo" : "";
}

Result<ClusterSecret> ReadClusterSecret(const ClusterConfig& config) {
  ClusterSecret out;
  if (config.secret_file.empty()) {
    out.value = config.secret;
    return out;
  }
  const std::string& path = config.secret_file;
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return ErrnoStatus(StrCat("cluster.secret_file ", path, ": cannot read"), errno);
  char buf[4096];
  const size_t got = std::fread(buf, 1, sizeof buf, file);
  const bool longer = got == sizeof buf && std::fgetc(file) != EOF;
  struct stat st {};
  const bool stat_ok = fstat(fileno(file), &st) == 0;
  std::fclose(file);
  if (longer) return InvalidArgument("cluster.secret_file ", path, " is longer than 4 KiB");
  out.value.assign(buf, got);
  while (!out.value.empty() && std::isspace(static_cast<unsigned char>(out.value.back()))) {
    out.value.pop_back();
  }
  if (out.value.size() < kMinClusterSecretBytes) {
    return InvalidArgument("cluster.secret_file ", path, " holds ", out.value.size(),
                           " characters; a secret has at least ", kMinClusterSecretBytes,
                           " (rampart secret generate ", path, " writes one)");
  }
  if (stat_ok && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    out.warning = StrCat("cluster.secret_file ", path, " may be read by others (mode ",
                         fmt::format("{:04o}", st.st_mode & 07777), "); chmod 600 it");
  }
  return out;
}

uint32_t UsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string FormatClusterConfig(const ClusterConfig& config) {
  std::string out = "# rampart cluster configuration";
  if (!config.origin.empty()) out += " (from " + config.origin + ")";
  out += "\n";
  std::string_view section;
  for (const auto& s : ClusterSettings()) {
    const size_t dot = s.key.rfind('.');
    assert(dot != std::string_view::npos && "top-level settings must come before any table");
    const std::string_view table = s.key.substr(0, dot);
    if (table != section) {
      out += StrCat("\n[", table, "]\n");
      section = table;
    }
    out += StrCat(s.key.substr(dot + 1), " = ", FormatValue(s, config), "\n");
  }
  out += FormatList(kNodesKey, NodeSettings(), config.nodes);
  out += FormatList(kStorageNodesKey, StorageNodeSettings(), config.storage_nodes);
  out += FormatList(kVolumesKey, VolumeSettings(), config.volumes);
  out += FormatList(kProxiesKey, ProxyAddressSettings(), config.proxies);
  return out;
}

std::vector<SettingDoc> DescribeClusterSettings() {
  std::vector<SettingDoc> out;
  const ClusterConfig defaults;
  for (const auto& s : ClusterSettings()) {
    out.push_back({std::string(s.key), TypeText(s), FormatValue(s, defaults), std::string(s.doc)});
  }
  for (auto&& list : {DescribeList(kNodesKey, NodeSettings()),
                      DescribeList(kStorageNodesKey, StorageNodeSettings()),
                      DescribeList(kVolumesKey, VolumeSettings()),
                      DescribeList(kProxiesKey, ProxyAddressSettings())}) {
    out.insert(out.end(), list.begin(), list.end());
  }
  return out;
}

std::string ClusterSettingsMarkdown() {
  auto cell = [](std::string_view text) {
    std::string out;
    for (char c : text) {
      if (c == '|') out += '\\';
      out += c;
    }
    return out;
  };
  std::string out = "| Key | Type | Default | Meaning |\n|---|---|---|---|\n";
  for (const SettingDoc& d : DescribeClusterSettings()) {
    const std::string def = d.default_value == "required" ? "required" : "`" + d.default_value + "`";
    out += StrCat("| `", d.key, "` | ", cell(d.type), " | ", cell(def), " | ", cell(d.doc), " |\n");
  }
  return out;
}

}  // namespace rampart
