// The Lua state of a ScriptRunner, set up as Redis 7.0 sets up its own:
// Lua 5.1's base library (without print and the file and environment
// functions), string, table, math (with Redis's rand48 random), coroutine,
// cjson and bit; the `redis` table; globals a script may read but not write
// (script_sandbox.cc). Also: compiling a script, KEYS and ARGV, and the count
// hook that stops a run past its time limit.
//
// Lua raises errors with longjmp: the C functions here keep no C++ objects
// with destructors alive where they raise.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <cstdint>
#include <new>
#include <utility>

#include <spdlog/spdlog.h>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include "proxy/script_impl.h"

namespace rampart::proxy {
namespace {

using Impl = ScriptRunner::Impl;

constexpr int kHookEveryInstructions = 10000;

// lua_Alloc: malloc bounded by kMaxLuaBytes (a refused allocation is Lua's
// "not enough memory" error, raised in the script).
void* Allocate(void* ud, void* ptr, size_t old_size, size_t new_size) {
  auto* impl = static_cast<Impl*>(ud);
  if (new_size == 0) {
    std::free(ptr);
    impl->lua_bytes -= old_size;
    return nullptr;
  }
  if (new_size > old_size && impl->lua_bytes + (new_size - old_size) > kMaxLuaBytes) return nullptr;
  void* p = std::realloc(ptr, new_size);
  if (p != nullptr) impl->lua_bytes = impl->lua_bytes - old_size + new_size;
  return p;
}

int Panic(lua_State* L) {
  spdlog::critical("proxy: unprotected Lua error: {}", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
  std::abort();
}

void TimeHook(lua_State* L, lua_Debug* /*ar*/) {
  Impl& impl = ImplOf(L);
  if (impl.run.deadline_ms == 0 || SteadyMs() < impl.run.deadline_ms) return;
  impl.run.timed_out = true;
  RaiseStopped(L);
}

// The error handler of a run (Redis's __redis__err__handler): a string
// error becomes {err = "ERR " .. it}; the table gets the source and line of
// the Lua function that raised it (the caller of a C function such as
// redis.call or error).
int ErrorHandler(lua_State* L) {
  lua_Debug ar;
  bool where = lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar);
  if (where && std::strcmp(ar.what, "C") == 0) where = lua_getstack(L, 2, &ar) && lua_getinfo(L, "Sl", &ar);
  if (!lua_istable(L, 1)) {
    lua_newtable(L);
    lua_pushliteral(L, "ERR ");
    switch (lua_type(L, 1)) {
      case LUA_TSTRING:
      case LUA_TNUMBER:
        lua_pushvalue(L, 1);
        break;
      case LUA_TBOOLEAN:
        lua_pushstring(L, lua_toboolean(L, 1) ? "true" : "false");
        break;
      case LUA_TNIL:
        lua_pushliteral(L, "nil");
        break;
      default:
        lua_pushfstring(L, "%s: %p", luaL_typename(L, 1), lua_topointer(L, 1));
    }
    lua_concat(L, 2);
    lua_setfield(L, -2, "err");
    lua_replace(L, 1);
  }
  if (where && ar.currentline >= 0) {
    lua_pushstring(L, ar.source);
    lua_setfield(L, 1, "source");
    lua_pushinteger(L, ar.currentline);
    lua_setfield(L, 1, "line");
  }
  lua_settop(L, 1);
  return 1;
}

// Redis's rand48: the 48-bit generator of drand48, as redisLrand48.
int32_t Lrand48(uint64_t& x) {
  x = (0x5DEECE66DULL * x + 0xB) & ((uint64_t{1} << 48) - 1);
  return static_cast<int32_t>(x >> 17);
}

int MathRandom(lua_State* L) {
  Impl& impl = ImplOf(L);
  constexpr int32_t kMax = 2147483647;
  const lua_Number r = static_cast<lua_Number>(Lrand48(impl.rand48) % kMax) / static_cast<lua_Number>(kMax);
  switch (lua_gettop(L)) {
    case 0:
      lua_pushnumber(L, r);
      return 1;
    case 1: {
      const int u = luaL_checkint(L, 1);
      luaL_argcheck(L, 1 <= u, 1, "interval is empty");
      lua_pushnumber(L, std::floor(r * u) + 1);
      return 1;
    }
    case 2: {
      const int l = luaL_checkint(L, 1);
      const int u = luaL_checkint(L, 2);
      luaL_argcheck(L, l <= u, 2, "interval is empty");
      lua_pushnumber(L, std::floor(r * (u - l + 1)) + l);
      return 1;
    }
    default:
      return luaL_error(L, "wrong number of arguments");
  }
}

int MathRandomseed(lua_State* L) {
  const auto seed = static_cast<uint32_t>(luaL_checkint(L, 1));
  ImplOf(L).rand48 = (uint64_t{seed} << 16) | 0x330E;
  return 0;
}

int RedisCall(lua_State* L) { return ImplOf(L).RedisCommand(L, true); }
int RedisPCall(lua_State* L) { return ImplOf(L).RedisCommand(L, false); }

int Raise(lua_State* L, const char* message) {
  lua_pushstring(L, message);
  return lua_error(L);
}

int RedisSha1Hex(lua_State* L) {
  if (lua_gettop(L) != 1) return Raise(L, "wrong number of arguments");
  size_t len = 0;
  const char* s = lua_tolstring(L, 1, &len);
  char hex[41];
  {
    const std::string h = Sha1Hex(std::string_view(s != nullptr ? s : "", s != nullptr ? len : 0));
    std::memcpy(hex, h.data(), 40);
  }
  lua_pushlstring(L, hex, 40);
  return 1;
}

int RedisErrorReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
    return Raise(L, "wrong number or type of arguments");
  }
  size_t len = 0;
  const char* s = lua_tolstring(L, 1, &len);
  if (len > 0 && s[0] == '-') {
    PushErrorTable(L, std::string_view(s, len));
  } else {
    lua_pushliteral(L, "-");
    lua_pushvalue(L, 1);
    lua_concat(L, 2);
    size_t n = 0;
    const char* dashed = lua_tolstring(L, -1, &n);
    PushErrorTable(L, std::string_view(dashed, n));
  }
  return 1;
}

int RedisStatusReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
    return Raise(L, "wrong number or type of arguments");
  }
  lua_newtable(L);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "ok");
  return 1;
}

// redis.log(level, message ...): into the proxy's log.
int RedisLog(lua_State* L) {
  const int argc = lua_gettop(L);
  if (argc < 2) return Raise(L, "redis.log() requires two arguments or more.");
  if (!lua_isnumber(L, 1)) return Raise(L, "First argument must be a number (log level).");
  const int level = static_cast<int>(lua_tonumber(L, 1));
  if (level < 0 || level > 3) return Raise(L, "Invalid debug level.");
  luaL_Buffer text_buffer;  // the arguments joined by spaces, however many
  luaL_buffinit(L, &text_buffer);
  for (int i = 2; i <= argc; ++i) {
    if (i > 2) luaL_addchar(&text_buffer, ' ');
    lua_pushvalue(L, i);
    luaL_addvalue(&text_buffer);
  }
  luaL_pushresult(&text_buffer);
  const char* text = lua_tostring(L, -1);
  if (level >= 2) {
    spdlog::info("proxy: script: {}", text != nullptr ? text : "");
  } else {
    spdlog::debug("proxy: script: {}", text != nullptr ? text : "");
  }
  return 0;
}

int RedisSetResp(lua_State* L) {
  if (lua_gettop(L) != 1) return Raise(L, "redis.setresp() requires one argument.");
  const int version = static_cast<int>(lua_tonumber(L, 1));
  if (version != 2 && version != 3) return Raise(L, "RESP version must be 2 or 3.");
  if (version == 3) return Raise(L, "rampart: redis.setresp(3) is not supported; scripts speak RESP2");
  return 0;
}

int RedisSetRepl(lua_State* L) {
  if (lua_gettop(L) != 1) return Raise(L, "redis.set_repl() requires one argument.");
  const int flags = static_cast<int>(lua_tonumber(L, 1));
  if (flags < 0 || flags > 3) {
    return Raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
  }
  return 0;
}

int RedisReplicateCommands(lua_State* L) {
  lua_pushboolean(L, 1);
  return 1;
}

int RedisBreakpoint(lua_State* L) {
  lua_pushboolean(L, 0);
  return 1;
}

int RedisDebug(lua_State* /*L*/) { return 0; }

int RedisAclCheckCmd(lua_State* L) {
  if (lua_gettop(L) < 1 || lua_type(L, 1) != LUA_TSTRING) {
    return Raise(L, "Please specify at least one argument for this redis lib call");
  }
  if (FindCommand(lua_tostring(L, 1)) == nullptr) return Raise(L, "Invalid command passed to redis.acl_check_cmd()");
  lua_pushboolean(L, 1);
  return 1;
}

// Pushes the `redis` table.
void PushRedisTable(lua_State* L) {
  static constexpr std::pair<const char*, lua_CFunction> kFunctions[] = {
      {"call", RedisCall},
      {"pcall", RedisPCall},
      {"sha1hex", RedisSha1Hex},
      {"error_reply", RedisErrorReply},
      {"status_reply", RedisStatusReply},
      {"log", RedisLog},
      {"setresp", RedisSetResp},
      {"set_repl", RedisSetRepl},
      {"replicate_commands", RedisReplicateCommands},
      {"breakpoint", RedisBreakpoint},
      {"debug", RedisDebug},
      {"acl_check_cmd", RedisAclCheckCmd},
  };
  static constexpr std::pair<const char*, int> kConstants[] = {
      {"LOG_DEBUG", 0}, {"LOG_VERBOSE", 1}, {"LOG_NOTICE", 2},   {"LOG_WARNING", 3},
      {"REPL_NONE", 0}, {"REPL_AOF", 1},    {"REPL_SLAVE", 2},   {"REPL_REPLICA", 2},
      {"REPL_ALL", 3},  {"REDIS_VERSION_NUM", kRedisVersionNum},
  };
  lua_newtable(L);
  for (const auto& [name, function] : kFunctions) {
    lua_pushcfunction(L, function);
    lua_setfield(L, -2, name);
  }
  for (const auto& [name, value] : kConstants) {
    lua_pushinteger(L, value);
    lua_setfield(L, -2, name);
  }
  lua_pushlstring(L, kRedisVersion.data(), kRedisVersion.size());
  lua_setfield(L, -2, "REDIS_VERSION");
}

void OpenLibrary(lua_State* L, lua_CFunction open, const char* name) {
  lua_pushcfunction(L, open);
  lua_pushstring(L, name);
  lua_call(L, 1, 0);
}

}  // namespace

Impl::Impl(ScriptCache& c, const std::atomic<uint64_t>& limit_ms, KeyCheck key_check)
    : cache(c), time_limit_ms(limit_ms), key_error(std::move(key_check)), cache_generation(c.generation()) {
  OpenState();
}

Impl::~Impl() {
  if (lua != nullptr) lua_close(lua);
}

void Impl::OpenState() {
  lua = lua_newstate(Allocate, this);
  if (lua == nullptr) throw std::bad_alloc();
  lua_State* L = lua;
  lua_atpanic(L, Panic);
  lua_pushlightuserdata(L, this);
  lua_setfield(L, LUA_REGISTRYINDEX, "rampart.script");
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "rampart.readonly");
  lua_pushcfunction(L, ErrorHandler);
  lua_setfield(L, LUA_REGISTRYINDEX, "rampart.error_handler");
  // Slots that Eval and Compile set outside a protected call: they exist, so
  // setting them allocates nothing.
  for (const char* slot : {"rampart.result", "rampart.compile_error"}) {
    lua_pushboolean(L, 0);
    lua_setfield(L, LUA_REGISTRYINDEX, slot);
  }
  // The field names read after a run, outside any protected call: kept
  // alive, so that pushing one finds it and allocates nothing (script.cc).
  lua_newtable(L);
  for (const char* name : {"err", "ok", "source", "line"}) {
    lua_pushstring(L, name);
    lua_rawseti(L, -2, static_cast<int>(lua_objlen(L, -2) + 1));
  }
  lua_setfield(L, LUA_REGISTRYINDEX, "rampart.pinned");

  OpenLibrary(L, luaopen_base, "");
  OpenLibrary(L, luaopen_table, LUA_TABLIBNAME);
  OpenLibrary(L, luaopen_string, LUA_STRLIBNAME);
  OpenLibrary(L, luaopen_math, LUA_MATHLIBNAME);
  lua_pushvalue(L, LUA_GLOBALSINDEX);  // the globals behind the read-only proxy
  const int globals = lua_gettop(L);
  OpenGuardedLibraries(L, globals);
  lua_getfield(L, globals, "math");
  lua_pushcfunction(L, MathRandom);
  lua_setfield(L, -2, "random");
  lua_pushcfunction(L, MathRandomseed);
  lua_setfield(L, -2, "randomseed");
  lua_pop(L, 1);
  PushRedisTable(L);
  lua_setfield(L, globals, "redis");

  MakeReadOnly(L, globals);
  lua_settop(L, 0);
}

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// The flags of a shebang line ("#!lua flags=no-writes,allow-oom"), as
// Redis 7.0 reads them; sets compiled.no_writes.
Status ReadShebang(std::string_view line, Impl::Compiled& compiled) {
  bool first = true;
  while (!line.empty()) {
    while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
    size_t end = 0;
    while (end < line.size() && !IsSpace(line[end])) ++end;
    const std::string_view part = line.substr(0, end);
    line.remove_prefix(end);
    if (part.empty()) continue;
    if (first) {
      first = false;
      if (part != "#!lua") return InvalidArgument("ERR Unexpected engine in script shebang: ", part);
      continue;
    }
    if (!part.starts_with("flags=")) return InvalidArgument("ERR Unknown lua shebang option: ", part);
    std::string_view flags = part.substr(6);
    while (!flags.empty()) {  // "a,b," has an empty third flag, refused as Redis does
      const size_t comma = flags.find(',');
      const std::string_view flag = flags.substr(0, comma);
      if (flag == "no-writes") {
        compiled.no_writes = true;
      } else if (flag != "allow-oom" && flag != "allow-stale" && flag != "no-cluster" &&
                 flag != "allow-cross-slot-keys") {
        return InvalidArgument("ERR Unexpected flag in script shebang: ", flag);
      }
      if (comma == std::string_view::npos) break;
      flags.remove_prefix(comma + 1);
      if (flags.empty()) return InvalidArgument("ERR Unexpected flag in script shebang: ");
    }
  }
  return Status::Ok();
}

}  // namespace

namespace {

// What CompileProtected does under lua_cpcall: compiles `body` and keeps
// the function in the registry (`ref`), or leaves the message at the
// registry's "rampart.compile_error" (`status` non-zero).
struct Compiling {
  std::string_view body;
  int status = 0;
  int ref = LUA_NOREF;
};

int CompileProtected(lua_State* L) {
  auto* job = static_cast<Compiling*>(lua_touserdata(L, 1));
  job->status = luaL_loadbuffer(L, job->body.data(), job->body.size(), "@user_script");
  if (job->status != 0) {
    lua_setfield(L, LUA_REGISTRYINDEX, "rampart.compile_error");
    return 0;
  }
  job->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

}  // namespace

Result<Impl::Compiled> Impl::Compile(std::string_view body) {
  Compiled compiled;
  std::string code;
  if (body.starts_with("#!")) {
    const size_t newline = body.find('\n');
    if (newline == std::string_view::npos) return InvalidArgument("ERR Invalid script shebang");
    RAMPART_RETURN_IF_ERROR(ReadShebang(body.substr(0, newline), compiled));
    compiled.shebang = true;
    code = StrCat("--", body);  // the shebang line a comment: the lines keep their numbers
    body = code;
  }
  if (!body.empty() && body[0] == LUA_SIGNATURE[0]) {  // crafted bytecode can crash Lua 5.1
    return InvalidArgument("ERR Error compiling script (new function): user_script: binary chunks are not accepted");
  }
  Compiling job{.body = body};
  if (lua_cpcall(lua, CompileProtected, &job) != 0) {
    lua_settop(lua, 0);
    return InvalidArgument("ERR rampart: not enough memory to compile the script");
  }
  if (job.status != 0) {
    lua_getfield(lua, LUA_REGISTRYINDEX, "rampart.compile_error");
    const std::string message = lua_tostring(lua, -1) != nullptr ? lua_tostring(lua, -1) : "?";
    lua_settop(lua, 0);
    lua_pushboolean(lua, 0);
    lua_setfield(lua, LUA_REGISTRYINDEX, "rampart.compile_error");
    return InvalidArgument("ERR Error compiling script (new function): ", message);
  }
  compiled.ref = job.ref;
  return compiled;
}

namespace {

struct KeysAndArgv {
  Args keys, argv;
};

// Under lua_cpcall: the one argument is a KeysAndArgv.
int SetKeysAndArgvProtected(lua_State* L) {
  const auto* in = static_cast<const KeysAndArgv*>(lua_touserdata(L, 1));
  lua_getfield(L, LUA_REGISTRYINDEX, "rampart.globals");  // behind the read-only proxy
  const int globals = lua_gettop(L);
  for (const auto& [name, list] : {std::pair{"KEYS", in->keys}, std::pair{"ARGV", in->argv}}) {
    lua_createtable(L, static_cast<int>(list.size()), 0);
    for (size_t i = 0; i < list.size(); ++i) {
      lua_pushlstring(L, list[i].data(), list[i].size());
      lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, globals, name);
  }
  return 0;
}

}  // namespace

bool Impl::SetKeysAndArgv(Args keys, Args argv) {
  KeysAndArgv in{keys, argv};
  const bool ok = lua_cpcall(lua, SetKeysAndArgvProtected, &in) == 0;
  lua_settop(lua, 0);
  return ok;
}

void Impl::SetHook(bool on) {
  lua_sethook(lua, on ? TimeHook : nullptr, on ? LUA_MASKCOUNT : 0, kHookEveryInstructions);
}

}  // namespace rampart::proxy
