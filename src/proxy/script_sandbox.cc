// The sandbox of a ScriptRunner's Lua state (script_impl.h: OpenGuardedLibraries,
// MakeReadOnly). Redis 7.0 patches its copies of Lua and of its libraries
// where Debian's are stock, so the holes they close are closed here, around
// the libraries: unpack's range, bit.tohex's width, cjson.encode's size and
// depth, binary chunks; and Redis 7.0's read-only tables are read-only
// proxies — a table whose __index and __newindex are C closures over the
// real one, never handed out, whose metatable is itself a read-only proxy.
//
// Lua raises errors with longjmp: the C functions here keep no C++ objects
// with destructors alive where they raise.
#include <cstdint>
#include <cstring>
#include <optional>

extern "C" {
#include <lauxlib.h>
#include <lua.h>

#include <lua-bitop.h>
#include <lua-cjson.h>
}

#include "proxy/script_impl.h"

namespace rampart::proxy {
namespace {

using Impl = ScriptRunner::Impl;

// Raises "<where>: <message>", where the Lua function `level` frames up is
// (1: the caller of the running C function).
int RaiseAt(lua_State* L, int level, const char* message) {
  luaL_where(L, level);
  lua_pushstring(L, message);
  lua_concat(L, 2);
  return lua_error(L);
}

// For a C closure wrapping a function (its upvalue 1): calls that with the
// closure's arguments; returns the count of results, which are on the stack.
int CallWrapped(lua_State* L, int results) {
  const int argc = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, argc, results);
  return lua_gettop(L);
}

int ReadonlyNewIndex(lua_State* L) { return RaiseAt(L, 1, "Attempt to modify a readonly table"); }

// __index of the globals: upvalue 1 is the table behind them.
int GlobalIndex(lua_State* L) {
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  if (!lua_isnil(L, -1)) return 1;
  luaL_where(L, 1);
  lua_pushfstring(L, "Script attempted to access nonexistent global variable '%s'",
                  lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?");
  lua_concat(L, 2);
  return lua_error(L);
}

// Records the table on top in the registry's set of read-only tables.
void MarkReadonly(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, "rampart.readonly");
  lua_pushvalue(L, -2);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

// __index of a library's proxy: upvalue 1 is the library.
int LibraryIndex(lua_State* L) {
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  return 1;
}

// Pushes a read-only proxy of the table at `index` (absolute), reading it
// through `reader` (a closure over it: the table is never handed out), and
// records it in the registry's set of read-only tables. getmetatable() of
// the proxy gives a read-only proxy of its metatable (so
// `getmetatable(_G).__index = t` fails as in Redis), or, for that one
// (`shown_metatable` false), false.
void PushProxy(lua_State* L, int index, lua_CFunction reader, bool shown_metatable) {
  lua_newtable(L);  // the proxy
  lua_newtable(L);  // its metatable
  const int mt = lua_gettop(L);
  lua_pushvalue(L, index);
  lua_pushcclosure(L, reader, 1);
  lua_setfield(L, mt, "__index");
  lua_pushcfunction(L, ReadonlyNewIndex);
  lua_setfield(L, mt, "__newindex");
  if (shown_metatable) {
    PushProxy(L, mt, LibraryIndex, false);
  } else {
    lua_pushboolean(L, 0);
  }
  lua_setfield(L, mt, "__metatable");
  lua_setmetatable(L, -2);
  MarkReadonly(L);
}

// `strict`: reading a missing field raises (the globals).
void PushReadonly(lua_State* L, int index, bool strict) {
  PushProxy(L, index, strict ? GlobalIndex : LibraryIndex, true);
}

bool IsReadonly(lua_State* L, int index) {
  lua_getfield(L, LUA_REGISTRYINDEX, "rampart.readonly");
  lua_pushvalue(L, index);
  lua_rawget(L, -2);
  const bool readonly = lua_toboolean(L, -1);
  lua_pop(L, 2);
  return readonly;
}

// setmetatable, refused on the read-only proxies with Redis's text.
// Upvalue 1 is Lua's own.
int ProtectedSetmetatable(lua_State* L) {
  if (lua_istable(L, 1) && IsReadonly(L, 1)) return RaiseAt(L, 1, "Attempt to modify a readonly table");
  return CallWrapped(L, 1);
}

// loadstring of text only: a binary chunk (string.dump's output) can be
// crafted to crash Lua 5.1, so it loads nothing (nil and a message), as in
// Redis. Upvalue 1 is Lua's own.
int TextLoadstring(lua_State* L) {
  size_t len = 0;
  const char* chunk = luaL_checklstring(L, 1, &len);
  if (len > 0 && chunk[0] == LUA_SIGNATURE[0]) {
    lua_pushnil(L);
    lua_pushliteral(L, "rampart: binary chunks are not loaded");
    return 2;
  }
  return CallWrapped(L, LUA_MULTRET);
}

// rawset, refused on the read-only proxies.
int ProtectedRawset(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  luaL_checkany(L, 3);
  if (IsReadonly(L, 1)) {
    lua_pushliteral(L, "Attempt to modify a readonly table");
    return lua_error(L);
  }
  lua_settop(L, 3);
  lua_rawset(L, 1);
  return 1;
}

// pcall, xpcall, coroutine.resume: upvalue 1 is Lua's own. A run that must
// stop (Run::stopped, timed_out) raises again past them.
int Guarded(lua_State* L) {
  const Impl& impl = ImplOf(L);  // before the call: after it the stack may have no free slot
  const int results = CallWrapped(L, LUA_MULTRET);
  if (impl.run.stopped || impl.run.timed_out) RaiseStopped(L);
  return results;
}

// pcall as Redis's: Guarded, and an error table with an `err` string comes
// back as that string (`local ok, e = pcall(redis.call, ...)` gives the text).
int ScriptPcall(lua_State* L) {
  Guarded(L);
  if (lua_gettop(L) >= 2 && lua_isboolean(L, 1) && !lua_toboolean(L, 1) && lua_istable(L, 2)) {
    lua_settop(L, 2);
    RawField(L, 2, "err");
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_replace(L, 2);
    } else {
      lua_pop(L, 1);
    }
  }
  return lua_gettop(L);
}

// unpack(t [, i [, j]]): Lua 5.1.5's own overflows its count for ranges
// such as (-2, 2147483647) and crashes; Redis's bundled Lua has this check.
int SafeUnpack(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int i = luaL_optint(L, 2, 1);
  const int e = luaL_opt(L, luaL_checkint, 3, static_cast<int>(lua_objlen(L, 1)));
  if (i > e) return 0;
  const unsigned n = static_cast<unsigned>(e) - static_cast<unsigned>(i);
  if (n >= static_cast<unsigned>(INT32_MAX) || !lua_checkstack(L, static_cast<int>(n + 1))) {
    return luaL_error(L, "too many results to unpack");
  }
  lua_rawgeti(L, 1, i);
  while (i++ < e) lua_rawgeti(L, 1, i);
  return static_cast<int>(n + 1);
}

// cjson.encode's buffer counts in int and grows by six times a string's
// length: past 2 GiB it overflows (Redis's CVE-2022-24834). Its output is
// bounded here before encoding: this is an upper bound of the bytes the
// value at `index` encodes to, walked without metamethods, stopping once past
// `budget`; nullopt when nested deeper than cjson encodes (it then raises).
constexpr size_t kMaxEncodeBytes = size_t{256} << 20;
constexpr int kMaxEncodeDepth = 1000;

std::optional<size_t> EncodeBound(lua_State* L, int index, int depth, size_t budget) {
  switch (lua_type(L, index)) {
    case LUA_TSTRING:
      return lua_objlen(L, index) * 6 + 2;
    case LUA_TTABLE:
      break;
    default:
      return size_t{32};  // numbers, booleans, null, and what cjson refuses
  }
  if (depth > kMaxEncodeDepth || !lua_checkstack(L, 3)) return std::nullopt;
  const int t = index < 0 ? lua_gettop(L) + index + 1 : index;
  size_t total = 2;
  lua_pushnil(L);
  while (total <= budget && lua_next(L, t) != 0) {
    const auto key = EncodeBound(L, -2, depth + 1, budget);
    const auto value = key ? EncodeBound(L, -1, depth + 1, budget) : std::nullopt;
    lua_pop(L, 1);
    if (!value) {
      lua_pop(L, 1);
      return std::nullopt;
    }
    total += *key + *value + 2;
  }
  if (total > budget) lua_pop(L, 1);  // the key lua_next left
  return total;
}

// cjson.encode: upvalue 1 is lua-cjson's.
int GuardedEncode(lua_State* L) {
  luaL_checkany(L, 1);
  const auto bound = EncodeBound(L, 1, 0, kMaxEncodeBytes);
  if (!bound) return luaL_error(L, "Cannot serialise, excessive nesting (%d)", kMaxEncodeDepth + 1);
  if (*bound > kMaxEncodeBytes) {
    return luaL_error(L, "rampart: cjson.encode's output could exceed %d MiB", static_cast<int>(kMaxEncodeBytes >> 20));
  }
  lua_settop(L, 1);
  return CallWrapped(L, 1);
}

// bit.tohex(x, n): lua-bitop negates n, and -2^31 (any n that is that
// mod 2^32) stays negative and overflows its buffer; Redis's copy clamps it.
// n as lua-bitop reads it (rounded, mod 2^32), clamped; upvalue 1 is lua-bitop's.
int GuardedToHex(lua_State* L) {
  if (lua_gettop(L) >= 2 && lua_isnumber(L, 2)) {  // numeric strings too: lua-bitop takes them
    const double shifted = lua_tonumber(L, 2) + 6755399441055744.0;  // 2^52 + 2^51: lua-bitop's rounding
    uint64_t bits = 0;
    std::memcpy(&bits, &shifted, sizeof bits);
    auto n = static_cast<int32_t>(static_cast<uint32_t>(bits));
    if (n == INT32_MIN) n = INT32_MIN + 1;
    lua_pushnumber(L, n);
    lua_replace(L, 2);
  }
  return CallWrapped(L, 1);
}

// cjson.encode_max_depth, decode_max_depth: at most kMaxEncodeDepth (deeper
// recursion in lua-cjson's C code could exhaust the thread's stack, and
// EncodeBound walks that deep only). Upvalue 1 is lua-cjson's.
int ClampedMaxDepth(lua_State* L) {
  if (lua_isnumber(L, 1) && lua_tonumber(L, 1) > kMaxEncodeDepth) {
    lua_pushinteger(L, kMaxEncodeDepth);
    lua_replace(L, 1);
  }
  return CallWrapped(L, LUA_MULTRET);
}

// Replaces field `name` of the table at `table` with a closure of `wrapper`
// over it (CallWrapped).
void Wrap(lua_State* L, int table, const char* name, lua_CFunction wrapper) {
  lua_getfield(L, table, name);
  lua_pushcclosure(L, wrapper, 1);
  lua_setfield(L, table, name);
}

}  // namespace

void OpenGuardedLibraries(lua_State* L, int globals) {
  lua_pushcfunction(L, luaopen_cjson);
  lua_call(L, 0, 1);
  const int cjson = lua_gettop(L);
  Wrap(L, cjson, "encode", GuardedEncode);
  Wrap(L, cjson, "encode_max_depth", ClampedMaxDepth);
  Wrap(L, cjson, "decode_max_depth", ClampedMaxDepth);
  lua_pushnil(L);  // cjson.new() would make a module without the guards
  lua_setfield(L, cjson, "new");
  lua_setfield(L, globals, "cjson");
  lua_pushcfunction(L, luaopen_bit);
  lua_call(L, 0, 1);
  Wrap(L, lua_gettop(L), "tohex", GuardedToHex);
  lua_setfield(L, globals, "bit");
  // `load` reads a chunk in pieces (loadstring, guarded below, is there);
  // newproxy makes userdata with finalizers, which run outside any run's
  // time limit and protection (Redis 7.0 removes it too).
  for (const char* name : {"print", "getfenv", "setfenv", "dofile", "loadfile", "load", "module", "require",
                           "newproxy"}) {
    lua_pushnil(L);
    lua_setfield(L, globals, name);
  }
  lua_pushcfunction(L, ProtectedRawset);
  lua_setfield(L, globals, "rawset");
  lua_pushcfunction(L, SafeUnpack);
  lua_setfield(L, globals, "unpack");
  Wrap(L, globals, "setmetatable", ProtectedSetmetatable);
  Wrap(L, globals, "loadstring", TextLoadstring);
  Wrap(L, globals, "pcall", ScriptPcall);
  Wrap(L, globals, "xpcall", Guarded);
  lua_getfield(L, globals, "coroutine");
  Wrap(L, lua_gettop(L), "resume", Guarded);
  lua_pop(L, 1);
}

void MakeReadOnly(lua_State* L, int globals) {
  // Every library read-only; strings' methods through the read-only string.
  for (const char* name : {"string", "table", "math", "coroutine", "cjson", "bit", "redis"}) {
    lua_getfield(L, globals, name);
    PushReadonly(L, lua_gettop(L), /*strict=*/false);
    lua_setfield(L, globals, name);
    lua_pop(L, 1);
  }
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  const int string_mt = lua_gettop(L);
  lua_getfield(L, globals, "string");
  lua_setfield(L, string_mt, "__index");
  PushReadonly(L, string_mt, /*strict=*/false);
  lua_setfield(L, string_mt, "__metatable");
  lua_pop(L, 2);

  // The globals: a strict read-only proxy, _G included; scripts compiled from
  // now on (and loadstring's chunks, and coroutines) see only it.
  PushReadonly(L, globals, /*strict=*/true);
  lua_pushvalue(L, -1);
  lua_setfield(L, globals, "_G");
  lua_replace(L, LUA_GLOBALSINDEX);
  lua_setfield(L, LUA_REGISTRYINDEX, "rampart.globals");  // the table behind it
}

}  // namespace rampart::proxy
