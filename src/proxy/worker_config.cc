// CONFIG GET / SET / RESETSTAT, and FUNCTION (below). rampart's settings live in the cluster file
// (docs/configuration.md); CONFIG reports the ones Redis clients ask about.
// The tuning parameters of Redis that have no meaning here — encoding
// thresholds, lazy freeing, persistence of a single server, sampling — are
// accepted by CONFIG SET and read back by CONFIG GET, and change nothing
// (docs/proxy.md lists them). Parameters that rampart takes from the cluster
// file (port, bind, maxclients, maxmemory, requirepass, ...) are refused, as
// is a parameter Redis does not know.
#include <map>
#include <mutex>

#include "proxy/glob.h"
#include "proxy/worker_job.h"

namespace rampart::proxy {
namespace {

// Redis 7.0's defaults of the parameters CONFIG SET takes without effect.
const std::map<std::string, std::string, std::less<>>& TuningDefaults() {
  static const auto* defaults = new std::map<std::string, std::string, std::less<>>{
      {"activerehashing", "yes"},
      {"appendfsync", "everysec"},
      {"appendonly", "no"},
      {"client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
      {"hash-max-listpack-entries", "128"},
      {"hash-max-listpack-value", "64"},
      {"hash-max-ziplist-entries", "128"},
      {"hash-max-ziplist-value", "64"},
      {"hz", "10"},
      {"latency-monitor-threshold", "0"},
      {"lazyfree-lazy-eviction", "no"},
      {"lazyfree-lazy-expire", "no"},
      {"lazyfree-lazy-server-del", "no"},
      {"lazyfree-lazy-user-del", "no"},
      {"lazyfree-lazy-user-flush", "no"},
      {"list-compress-depth", "0"},
      {"list-max-listpack-size", "-2"},
      {"list-max-ziplist-size", "-2"},
      {"loglevel", "notice"},
      {"maxmemory-policy", "noeviction"},
      {"maxmemory-samples", "5"},
      {"save", ""},
      {"set-max-intset-entries", "512"},
      {"stream-node-max-bytes", "4096"},
      {"stream-node-max-entries", "100"},
      {"timeout", "0"},
      {"zset-max-listpack-entries", "128"},
      {"zset-max-listpack-value", "64"},
      {"zset-max-ziplist-entries", "128"},
      {"zset-max-ziplist-value", "64"},
  };
  return *defaults;
}

// Redis's two names of one setting: how long a script may run (ms) before
// it is stopped (script.h).
bool IsScriptTimeLimit(std::string_view name) { return name == "busy-reply-threshold" || name == "lua-time-limit"; }

// The settings of CONFIG SET that take an integer, with Redis's bounds.
struct IntegerSetting {
  std::string_view name;
  int64_t min;
};
constexpr IntegerSetting kIntegerSettings[] = {
    {"busy-reply-threshold", 0}, {"lua-time-limit", 0}, {"slowlog-log-slower-than", -1}, {"slowlog-max-len", 0}};

const IntegerSetting* IntegerSettingOf(std::string_view name) {
  for (const IntegerSetting& s : kIntegerSettings) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace

// Every parameter CONFIG GET answers, with its value now.
std::vector<std::pair<std::string, std::string>> Worker::ConfigValues() const {
  const ProxyConfig& pc = shared_.config.proxy;
  std::vector<std::pair<std::string, std::string>> values = {
      {"bind", pc.host},
      {"cluster-enabled", "no"},
      {"databases", "1"},
      {"maxclients", std::to_string(pc.max_clients)},
      {"maxmemory", std::to_string(shared_.config.kv.maxmemory * shared_.config.nodes.size())},
      {"port", std::to_string(pc.port)},
      {"proto-max-bulk-len", std::to_string(pc.max_bulk_bytes)},
      {"requirepass", pc.requirepass},
      // Scripts' time limit (script.h): two names of one setting.
      {"busy-reply-threshold", std::to_string(shared_.script_time_limit_ms.load())},
      {"lua-time-limit", std::to_string(shared_.script_time_limit_ms.load())},
      {"notify-keyspace-events", notify::FormatFlags(shared_.notify_flags.load())},
      {"slowlog-log-slower-than", std::to_string(shared_.slowlog_slower_than_us.load())},
      {"slowlog-max-len", std::to_string(shared_.slowlog_max_len.load())},
  };
  std::lock_guard<std::mutex> lock(shared_.config_mutex);
  for (const auto& [name, value] : TuningDefaults()) {
    auto set = shared_.config_set.find(name);
    values.emplace_back(name, set != shared_.config_set.end() ? set->second : value);
  }
  return values;
}

void Worker::ConfigCommand(const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  const std::string sub = Lower(a[1]);
  if (sub == "help") return SubcommandHelp(*c.spec, out);
  if (sub == "get" && a.size() >= 3) {
    std::vector<std::pair<std::string, std::string>> hits;
    for (auto& p : ConfigValues()) {
      for (size_t n = 2; n < a.size(); ++n) {
        if (GlobMatch(Lower(a[n]), p.first)) {
          hits.push_back(std::move(p));
          break;
        }
      }
    }
    out.Map(hits.size());
    for (const auto& [name, value] : hits) {
      out.Bulk(name);
      out.Bulk(value);
    }
    return;
  }
  if (sub == "set") return ConfigSet(c, out);
  if (sub == "resetstat" && a.size() == 2) {  // INFO commandstats and errorstats
    ResetStats();
    return out.Simple("OK");
  }
  out.Error(SubcommandError(*c.spec, a[1]));
}

// CONFIG SET parameter value [parameter value ...]: all or nothing, checked
// as Redis checks it: every name first (the first unknown one answers
// "Unknown option"; else the first one that cannot be set, or is named
// twice), then every value.
void Worker::ConfigSet(const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  if (a.size() < 4) return out.Error("ERR wrong number of arguments for 'config|set' command");
  if (a.size() % 2 != 0) {  // a name without a value, past the arity: as Redis answers it
    return out.Error("ERR syntax error");
  }
  auto failed = [&](std::string_view arg, std::string_view why) {
    out.Error(StrCat("ERR CONFIG SET failed (possibly related to argument '", arg, "') - ", why));
  };
  std::string refused;  // the first name that cannot be set, and why
  std::string refused_arg;
  std::vector<std::string> seen;
  for (size_t n = 2; n < a.size(); n += 2) {
    const std::string name = Lower(a[n]);
    const bool settable =
        IntegerSettingOf(name) != nullptr || name == "notify-keyspace-events" || TuningDefaults().contains(name);
    bool known = settable;
    for (const auto& p : ConfigValues()) known = known || p.first == name;
    if (!known) return out.Error(StrCat("ERR Unknown option or number of arguments for CONFIG SET - '", a[n], "'"));
    if (!refused.empty()) continue;
    if (!settable) {
      refused = "can't set immutable config: rampart takes it from the cluster file ([proxy] or [kv] section)";
    } else if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      refused = "duplicate parameter";
    }
    if (!refused.empty()) refused_arg = a[n];
    seen.push_back(name);
  }
  if (!refused.empty()) return failed(refused_arg, refused);
  for (size_t n = 2; n < a.size(); n += 2) {
    const std::string name = Lower(a[n]);
    if (const IntegerSetting* setting = IntegerSettingOf(name)) {
      const Result<int64_t> v = ParseInt64(a[n + 1]);
      if (v.ok() && *v >= setting->min) continue;
      return failed(name, v.ok() ? StrCat("argument must be between ", setting->min, " and 9223372036854775807 inclusive")
                                 : "argument couldn't be parsed into an integer");
    }
    if (name == "notify-keyspace-events" && !notify::ParseFlags(a[n + 1]).has_value()) {
      return failed(name, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.");
    }
  }
  std::lock_guard<std::mutex> lock(shared_.config_mutex);
  for (size_t n = 2; n < a.size(); n += 2) {
    const std::string name = Lower(a[n]);
    if (IsScriptTimeLimit(name)) {  // 0: no limit; CONFIG GET reads it back from the atomic
      shared_.script_time_limit_ms.store(static_cast<uint64_t>(*ParseInt64(a[n + 1])));
    } else if (name == "slowlog-log-slower-than") {
      shared_.slowlog_slower_than_us.store(*ParseInt64(a[n + 1]));
    } else if (name == "slowlog-max-len") {  // the log is cut to it at once, as Redis's next push does
      shared_.slowlog_max_len.store(static_cast<uint64_t>(*ParseInt64(a[n + 1])));
      std::lock_guard slowlog_lock(shared_.slowlog_mutex);
      TrimSlowlogLocked(shared_.slowlog_max_len.load());
    } else if (name == "notify-keyspace-events") {  // the next turn of every worker sees it
      shared_.notify_flags.store(*notify::ParseFlags(a[n + 1]));
    } else {
      shared_.config_set[name] = a[n + 1];
    }
  }
  out.Simple("OK");
}


// FUNCTION: rampart runs EVAL's scripts but not functions, so no library can exist. FLUSH and LIST
// answer as on a server without libraries (clients and test harnesses send
// FUNCTION FLUSH to start clean); LOAD and RESTORE are refused.
void Worker::FunctionCommand(const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  const std::string sub = Lower(a[1]);
  if (sub == "help") return SubcommandHelp(*c.spec, out);
  if (sub == "flush") {
    if (a.size() > 3 || (a.size() == 3 && Lower(a[2]) != "async" && Lower(a[2]) != "sync")) {
      return out.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    return out.Simple("OK");
  }
  if (sub == "list") return out.Array(0);
  if (sub == "kill") return out.Error("NOTBUSY No scripts in execution right now.");
  if (sub == "delete" && a.size() == 3) return out.Error("ERR Library not found");
  if (sub == "load" || sub == "restore") {
    return out.Error("ERR rampart: functions are not supported (EVAL and EVALSHA are)");
  }
  out.Error(SubcommandError(*c.spec, a[1]));
}

// SCRIPT: the cache of EVAL's scripts (SharedState::scripts). A script runs
// within one turn of its worker, so SCRIPT KILL never finds one running (a
// run past busy-reply-threshold stops by itself: script.h).
void Worker::ScriptCommand(const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  const std::string sub = Lower(a[1]);
  auto arity = [&](bool ok) {
    if (!ok) out.Error(StrCat("ERR wrong number of arguments for 'script|", sub, "' command"));
    return ok;
  };
  if (sub == "load") {
    if (arity(a.size() == 3)) scripts_.Load(a[2], out);
  } else if (sub == "exists") {
    if (!arity(a.size() >= 3)) return;
    out.Array(a.size() - 2);
    for (size_t n = 2; n < a.size(); ++n) out.Integer(shared_.scripts.Find(a[n]).has_value() ? 1 : 0);
  } else if (sub == "flush") {
    if (a.size() > 3 || (a.size() == 3 && Lower(a[2]) != "async" && Lower(a[2]) != "sync")) {
      return out.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    shared_.scripts.Clear();
    out.Simple("OK");
  } else if (sub == "kill") {
    if (arity(a.size() == 2)) out.Error("NOTBUSY No scripts in execution right now.");
  } else if (sub == "help") {
    if (!arity(a.size() == 2)) return;
    static constexpr std::string_view kHelp[] = {
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    };
    out.SimpleLines(kHelp);
  } else if (sub == "debug") {
    out.Error("ERR rampart: SCRIPT DEBUG (the Lua debugger) is not supported");
  } else {
    out.Error(SubcommandError(*c.spec, a[1]));
  }
}

}  // namespace rampart::proxy
