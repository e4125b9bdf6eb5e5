// Private to script.cc (running a script, the reply conversions),
// script_lua.cc (the Lua state and the `redis` library) and
// script_sandbox.cc (its read-only globals and guards): the runner's state.
#pragma once

extern "C" {
#include <lua.h>
}

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/script.h"

namespace rampart::proxy {

struct ScriptRunner::Impl {
  Impl(ScriptCache& c, const std::atomic<uint64_t>& limit_ms, KeyCheck key_check);
  ~Impl();

  ScriptCache& cache;
  const std::atomic<uint64_t>& time_limit_ms;
  const KeyCheck key_error;
  lua_State* lua = nullptr;
  size_t lua_bytes = 0;  // allocated by `lua` (its allocator refuses past kMaxLuaBytes)

  // Scripts compiled in `lua`, by SHA1: the function's registry reference
  // and the shebang's no-writes flag. Dropped when the cache's generation
  // moves (SCRIPT FLUSH).
  struct Compiled {
    int ref = 0;
    bool shebang = false;  // its first line is "#!lua ..."
    bool no_writes = false;
  };
  std::unordered_map<std::string, Compiled> compiled;
  uint64_t cache_generation = 0;

  // The run in progress (valid while Eval runs the script).
  struct Run {
    DataView* data = nullptr;
    std::string_view sha;
    bool read_only = false;
    bool may_run_again = true;  // ScriptRunner::Eval's
    std::vector<std::string_view> keys;  // KEYS and the more_keys
    // Keys a redis.call named beyond KEYS (the run stops at the first).
    std::vector<std::string> undeclared;
    std::vector<ScriptRunner::Call> calls;  // ScriptRunner::calls()
    // The run cannot finish on this view (data missing, a key undeclared):
    // every redis.call and every protected call raises from then on.
    bool stopped = false;
    bool timed_out = false;  // past the time limit: raises likewise
    uint64_t deadline_ms = 0;  // 0: no limit
    uint64_t limit_ms = 0;
  };
  Run run;
  uint64_t rand48 = 0;  // math.random's state (Redis's rand48)

  // script_lua.cc: creates `lua` with the libraries, the `redis` table and
  // the read-only globals.
  void OpenState();
  // Compiles `body` (chunk name "@user_script"; a shebang line is read for
  // its flags and compiled as a comment): its entry, or the error reply's
  // text ("ERR Error compiling script (new function): ...").
  Result<Compiled> Compile(std::string_view body);
  // script.cc: the compiled script of `sha`: this runner's since the last
  // SCRIPT FLUSH, else compiled from `body` (EVAL, SCRIPT LOAD) or from the
  // cache's (EVALSHA: nullopt) and added to the cache; the compile error, or
  // NotFound("NOSCRIPT ...") for an EVALSHA of a sha the cache lacks.
  Result<Compiled> CompiledFor(const std::string& sha, std::optional<std::string_view> body);
  // Sets the globals KEYS and ARGV of the next run; false when Lua ran out
  // of memory doing so (a protected call: nothing raised).
  bool SetKeysAndArgv(Args keys, Args argv);
  // Turns the time-limit hook on (deadline_ms > 0) or off.
  void SetHook(bool on);

  // redis.call's buffers, reused: the arguments, a refusal ("-ERR ...") or
  // the command's reply (RESP2).
  struct CallBuffers {
    std::vector<std::string> argv;
    std::vector<std::string_view> args;
    std::string refusal;
    std::string reply;
  };
  CallBuffers call;

  // script.cc: redis.call (raise) and redis.pcall (!raise).
  int RedisCommand(lua_State* L, bool raise);
  void PrepareCall(lua_State* L);
  // Pushes the reply `resp` (RESP2, one reply) as Lua values: see script.cc.
  void PushReply(lua_State* L, std::string_view& resp, int depth);
};

// script.cc
// The Impl of the running script (the registry's "rampart.script" entry).
ScriptRunner::Impl& ImplOf(lua_State* L);
// Pushes Redis's error table {err = ...} for `message`: a leading '-' is
// dropped and a message without an error code gets "ERR " (Redis's
// luaPushErrorBuff rules).
void PushErrorTable(lua_State* L, std::string_view message);
// Pushes t[name] of the table at `table` without metamethods.
void RawField(lua_State* L, int table, const char* name);
// Raises the error that stops a run that cannot finish (Run::stopped).
[[noreturn]] void RaiseStopped(lua_State* L);
// script_sandbox.cc. With Lua's base, string, table and math libraries open
// in L and `globals` the (absolute) index of the globals' table: opens cjson
// and bit, guarded, removes the base functions a script may not have, and
// puts guarded wrappers in place of rawset, unpack, setmetatable,
// loadstring, pcall, xpcall and coroutine.resume.
void OpenGuardedLibraries(lua_State* L, int globals);
// Then, with every library in place: each of them and the globals read-only
// (a proxy of the globals becomes the thread's globals; the registry's
// "rampart.globals" is the table behind it).
void MakeReadOnly(lua_State* L, int globals);
// A monotonic clock in ms (a run's deadline).
inline uint64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// Maximum bytes the Lua state of one worker may allocate.
inline constexpr size_t kMaxLuaBytes = size_t{512} << 20;

}  // namespace rampart::proxy
