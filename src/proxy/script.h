// Lua scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, as Redis 7.0
// runs them (Lua 5.1 with its string, table, math, cjson and bit libraries;
// redis.call, redis.pcall and the rest of the `redis` table; KEYS and ARGV;
// read-only globals; Redis's error texts and reply conversions).
//
// A script runs on the DataView of its job, as the commands of a MULTI block
// do: each redis.call applies the command to the view, so the script sees
// its own writes, and what it wrote leaves as the job's one write set, under
// the proxy's locks on its keys (docs/proxy.md, "Scripts"). A run that finds
// data the view does not hold yet (a collection's page, a long string's
// chunk: DataView::missing()) stops there; the worker reads what is missing
// and runs the script again from the start on a fresh view. A run may also
// find that the script touches a key it did not declare in KEYS (undeclared());
// it stops too, and the worker runs the command again with that key read
// and locked (Worker::RunAgainWithKeys). So only the last run's effects and
// reply count, and a script must not depend on anything but its keys,
// arguments and the commands' replies — what Redis asks of scripts too.
//
// Thread-safety: a ScriptCache is shared by the workers of a proxy (every
// method may be called from any thread); a ScriptRunner belongs to one
// worker thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/commands.h"
#include "proxy/data_view.h"
#include "proxy/resp.h"

namespace rampart::proxy {

// The SHA1 of `bytes` in lower-case hex (40 characters).
std::string Sha1Hex(std::string_view bytes);

// The scripts a proxy knows, by the SHA1 of their bodies: EVAL and SCRIPT
// LOAD add, SCRIPT FLUSH forgets them all.
class ScriptCache {
 public:
  // Adds `body` (if new); returns its SHA1.
  std::string Add(std::string_view body);
  // The body whose SHA1 is `sha` (hex, any case), or nullopt.
  std::optional<std::string> Find(std::string_view sha) const;
  void Clear();
  // Counts SCRIPT FLUSHes: a runner drops its compiled scripts when it moves.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::string> bodies_;  // by SHA1; guarded by mutex_
  std::atomic<uint64_t> generation_{0};
};

class ScriptRunner {
 public:
  // `time_limit_ms` (0: none) bounds each run: a script still running then is
  // stopped with an error (Redis's busy-reply-threshold / lua-time-limit,
  // which CONFIG SET changes; read at the start of every run).
  // `key_error` tells why a key a script names beyond its KEYS may not be a
  // key ("" when it may; the worker's rules for a command's keys).
  // REQUIRES: cache and time_limit_ms outlive the runner.
  using KeyCheck = std::function<std::string(std::string_view key)>;
  ScriptRunner(ScriptCache& cache, const std::atomic<uint64_t>& time_limit_ms, KeyCheck key_error);
  ~ScriptRunner();
  ScriptRunner(const ScriptRunner&) = delete;
  ScriptRunner& operator=(const ScriptRunner&) = delete;

  // EVAL, EVALSHA, EVAL_RO or EVALSHA_RO (args[0], any case; arity checked):
  // runs the script on `data`, its reply into `out` (in out's protocol).
  // Afterwards data.missing() or undeclared() non-empty means the run
  // stopped for them and its reply is to be dropped.
  // `more_keys`: keys the script may call commands on besides its KEYS (the
  // worker read and locked them with the KEYS: Command::script_keys).
  // `may_run_again`: a command on another key stops the run (undeclared());
  // else it is an error at that call, which the script may catch (MULTI).
  void Eval(Args args, DataView& data, resp::Writer& out, std::span<const std::string> more_keys = {},
            bool may_run_again = true);
  // The keys the last Eval's script named in a redis.call without declaring
  // them, in order (empty when it stopped for nothing of the kind).
  const std::vector<std::string>& undeclared() const;
  // The commands of the table the last run called, each refused before it
  // ran (arity, a key, a write in a read-only script) or run, and then
  // whether it answered an error: INFO commandstats.
  struct Call {
    int stats = -1;  // where INFO commandstats counts it (CommandStatsIndex)
    bool rejected = false;
    bool failed = false;
  };
  const std::vector<Call>& calls() const;

  // SCRIPT LOAD body: compiles it (a compile error is replied) and caches it.
  void Load(std::string_view body, resp::Writer& out);

  // Whether the command `name` (lower case) is run by Eval.
  static bool IsEval(std::string_view name);

  struct Impl;  // script.cc; public for its Lua C functions

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rampart::proxy
