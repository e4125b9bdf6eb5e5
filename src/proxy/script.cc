// Running a script: EVAL's arguments, the cache, redis.call, and the
// conversions between Redis replies and Lua values (Redis 7.0's rules).
//
// Lua raises errors with longjmp, which skips C++ destructors: a function
// that may raise (RedisCommand, the error paths) keeps no C++ object with a
// destructor alive where Lua may raise.
#include "proxy/script.h"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/status.h"
#include "proxy/script_impl.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {
namespace {

// The connection commands a script may call (Redis allows these four; the
// others — CLIENT, CONFIG, AUTH, SUBSCRIBE, WAIT, ... — it refuses).
bool AllowedConnectionCommand(std::string_view name) {
  return name == "ping" || name == "echo" || name == "select" || name == "time";
}

// Why a script may not call `spec`, as the error reply's text; "" when it may.
std::string RefusalOf(const CommandSpec& spec, bool read_only) {
  const std::string_view name = spec.name;
  if (name == "publish" || name == "spublish" || name == "pubsub") {
    return StrCat("ERR rampart: ", name, " is not supported inside a script");
  }
  if (spec.kind == CommandKind::kServer) {
    return StrCat("ERR rampart: ", name, " (a whole-store command) is not supported inside a script");
  }
  if (spec.kind == CommandKind::kTransaction || IsBlocking(spec) || ScriptRunner::IsEval(name) ||
      name == "watch" || name == "unwatch" ||
      (spec.kind == CommandKind::kConnection && !AllowedConnectionCommand(name))) {
    return "ERR This Redis command is not allowed from script";
  }
  if (read_only && spec.kind == CommandKind::kWrite) {
    return "ERR Write commands are not allowed from read-only scripts.";
  }
  return "";
}

// A redis.call argument: a string, or a number formatted as Redis does
// ("%.17g"). False for any other type.
bool ArgumentAt(lua_State* L, int index, std::string& out) {
  if (lua_type(L, index) == LUA_TNUMBER) {
    char buf[64];
    const int n = std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(lua_tonumber(L, index)));
    out.assign(buf, static_cast<size_t>(n));
    return true;
  }
  if (lua_type(L, index) != LUA_TSTRING) return false;
  size_t len = 0;
  const char* s = lua_tolstring(L, index, &len);
  out.assign(s, len);
  return true;
}

// The line of `resp` up to CRLF (consumed); the whole rest when there is none.
std::string_view TakeLine(std::string_view& resp) {
  const size_t end = resp.find("\r\n");
  std::string_view line = resp.substr(0, end);
  resp.remove_prefix(end == std::string_view::npos ? resp.size() : end + 2);
  return line;
}

int64_t LengthOf(std::string_view digits) {
  int64_t n = -1;
  std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return n;
}

constexpr int kMaxReplyDepth = 200;


// Writes the Lua value at the top of the stack as a reply (Redis's
// luaReplyToRedisReply): see Eval's comment. Pops nothing.
void WriteLuaValue(lua_State* L, resp::Writer& out, int depth) {
  switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
      size_t len = 0;
      const char* s = lua_tolstring(L, -1, &len);
      return out.Bulk(std::string_view(s, len));
    }
    case LUA_TBOOLEAN:
      if (lua_toboolean(L, -1)) return out.Integer(1);
      return out.Null();
    case LUA_TNUMBER: {
      const double d = lua_tonumber(L, -1);
      if (std::isnan(d)) return out.Integer(0);
      if (d >= 9.2233720368547758e18) return out.Integer(INT64_MAX);
      if (d <= -9.2233720368547758e18) return out.Integer(INT64_MIN);
      return out.Integer(static_cast<int64_t>(d));
    }
    case LUA_TTABLE:
      break;
    default:
      return out.Null();
  }
  // Each level holds a few stack slots (Lua guarantees a C function only 20).
  if (depth >= kMaxReplyDepth || !lua_checkstack(L, 4)) return out.Error("ERR reached lua stack limit");
  for (const char* field : {"err", "ok"}) {  // an error or a status reply
    RawField(L, -1, field);
    const bool is = lua_type(L, -1) == LUA_TSTRING;
    if (is) {
      size_t len = 0;
      const char* text = lua_tolstring(L, -1, &len);
      const std::string_view s(text, len);
      // As it is: {err = '-x'} is "--x", as Redis sends it.
      field[0] == 'e' ? out.Error(s) : out.Simple(s);
    }
    lua_pop(L, 1);
    if (is) return;
  }
  size_t n = 0;  // an array up to its first nil
  while (true) {
    lua_rawgeti(L, -1, static_cast<int>(n + 1));
    const bool end = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (end) break;
    ++n;
  }
  out.Array(n);
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, -1, static_cast<int>(i));
    WriteLuaValue(L, out, depth + 1);
    lua_pop(L, 1);
  }
}

// The reply of a run that ended in an error: the error table's err, with
// " script: <sha>, on @user_script:<line>." when the error handler found
// where it was raised (Redis 7.0's format). Lua strings are read in place
// (no C++ string lives across a Lua call that may raise).
void WriteScriptError(lua_State* L, std::string_view sha, resp::Writer& out) {
  if (lua_type(L, -1) == LUA_TSTRING) return out.Error(StrCat("ERR ", lua_tostring(L, -1)));
  if (lua_type(L, -1) != LUA_TTABLE) return out.Error("ERR rampart: the script raised an error without an 'err' field");
  const int error = lua_gettop(L);
  RawField(L, error, "err");
  RawField(L, error, "source");
  RawField(L, error, "line");
  std::string_view err = "ERR rampart: the script raised an error without an 'err' field";
  size_t len = 0;
  if (lua_type(L, -3) == LUA_TSTRING) {
    const char* s = lua_tolstring(L, -3, &len);
    err = std::string_view(s, len);
  }
  if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TNUMBER) {
    out.Error(StrCat(err, " script: ", sha, ", on ", lua_tostring(L, -2), ":",
                     static_cast<int64_t>(lua_tonumber(L, -1)), "."));
  } else {
    out.Error(err);
  }
  lua_settop(L, error);
}

// What WriteRunResult converts, under lua_cpcall (the value is the
// registry's "rampart.result").
struct RunResult {
  bool failed = false;  // the run raised: an error object
  std::string_view sha;
  resp::Writer* out = nullptr;
};

int WriteRunResult(lua_State* L) {
  const auto* r = static_cast<const RunResult*>(lua_touserdata(L, 1));
  lua_getfield(L, LUA_REGISTRYINDEX, "rampart.result");
  if (r->failed) {
    WriteScriptError(L, r->sha, *r->out);
  } else {
    WriteLuaValue(L, *r->out, 0);
  }
  return 0;
}

int CollectGarbage(lua_State* L) {
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}

}  // namespace

std::string Sha1Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha1(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

std::string ScriptCache::Add(std::string_view body) {
  std::string sha = Sha1Hex(body);
  std::lock_guard lock(mutex_);
  bodies_.try_emplace(sha, body);
  return sha;
}

std::optional<std::string> ScriptCache::Find(std::string_view sha) const {
  const std::string key = Lower(sha);
  std::lock_guard lock(mutex_);
  auto it = bodies_.find(key);
  if (it == bodies_.end()) return std::nullopt;
  return it->second;
}

void ScriptCache::Clear() {
  std::lock_guard lock(mutex_);
  bodies_.clear();
  generation_.fetch_add(1, std::memory_order_release);
}

size_t ScriptCache::size() const {
  std::lock_guard lock(mutex_);
  return bodies_.size();
}

void RawField(lua_State* L, int table, const char* name) {
  const int t = table < 0 ? lua_gettop(L) + table + 1 : table;
  lua_pushstring(L, name);
  lua_rawget(L, t);
}

ScriptRunner::Impl& ImplOf(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, "rampart.script");
  auto* impl = static_cast<ScriptRunner::Impl*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return *impl;
}

void PushErrorTable(lua_State* L, std::string_view message) {
  std::string_view code = "ERR", text = message;
  if (!message.empty() && message[0] == '-') {  // "-CODE text", or "-text" without a code
    message.remove_prefix(1);
    const size_t space = message.find(' ');
    if (space == std::string_view::npos) {
      text = message;
    } else {
      code = message.substr(0, space);
      text = message.substr(space + 1);
    }
  }
  lua_newtable(L);
  lua_pushlstring(L, code.data(), code.size());
  lua_pushliteral(L, " ");
  lua_pushlstring(L, text.data(), text.size());
  lua_concat(L, 3);
  lua_setfield(L, -2, "err");
}

void RaiseStopped(lua_State* L) {
  ScriptRunner::Impl& impl = ImplOf(L);
  if (impl.run.timed_out) {
    lua_newtable(L);
    lua_pushfstring(L, "ERR rampart: the script ran longer than %d ms (busy-reply-threshold) and was stopped; "
                    "what it wrote before stands",
                    static_cast<int>(impl.run.limit_ms));
    lua_setfield(L, -2, "err");
  } else {
    lua_pushliteral(L, "rampart: the run stopped to read more");
  }
  lua_error(L);
  __builtin_unreachable();
}

// redis.call / redis.pcall: the command's reply as Lua values; a command
// error raised (call) or returned as {err = ...} (pcall). Its C++ state
// lives in Impl::call (no local with a destructor), so that a Lua error
// raised while the reply is pushed (out of memory) skips nothing.
int ScriptRunner::Impl::RedisCommand(lua_State* L, bool raise) {
  if (run.data == nullptr) return luaL_error(L, "rampart: redis.call outside a script's run");
  if (run.stopped || run.timed_out) RaiseStopped(L);
  CallBuffers& c = call;
  PrepareCall(L);
  if (run.stopped) RaiseStopped(L);
  bool failed = !c.refusal.empty();
  if (failed) {
    PushErrorTable(L, c.refusal);  // "-ERR text": code and text as they are
  } else {
    std::string_view rest = c.reply;
    failed = !rest.empty() && rest[0] == '-';
    PushReply(L, rest, 0);
  }
  if (failed && raise) return lua_error(L);
  return 1;
}

// The C++ half of redis.call: the arguments, the checks, the command run on
// the view; into `call`. Raises nothing.
void ScriptRunner::Impl::PrepareCall(lua_State* L) {
  CallBuffers& c = call;
  const int argc = lua_gettop(L);
  c.argv.resize(static_cast<size_t>(argc));
  c.refusal.clear();
  c.reply.clear();
  for (int i = 0; i < argc; ++i) {
    if (!ArgumentAt(L, i + 1, c.argv[static_cast<size_t>(i)])) {
      c.refusal = "-ERR Lua redis lib command arguments must be strings or integers";
      return;
    }
  }
  if (argc == 0) {
    c.refusal = "-ERR Please specify at least one argument for this redis lib call";
    return;
  }
  c.args.assign(c.argv.begin(), c.argv.end());
  const CommandSpec* spec = FindCommand(c.argv[0]);
  const int stats = CommandStatsIndex(spec, c.args.size(), c.args.size() >= 2 ? c.args[1] : std::string_view());
  if (spec == nullptr || NamesUnknownSubcommand(*spec, c.args)) {
    c.refusal = "-ERR Unknown Redis command called from script";
  } else if (!CheckArity(*spec, c.args).empty()) {
    c.refusal = "-ERR Wrong number of args calling Redis command from script";
  } else if (std::string why = RefusalOf(*spec, run.read_only); !why.empty()) {
    c.refusal = StrCat("-", why);
  }
  if (!c.refusal.empty()) {
    if (spec != nullptr) run.calls.push_back({stats, /*rejected=*/true, /*failed=*/false});
    return;
  }
  for (std::string_view key : KeysOf(*spec, c.args)) {
    if (std::find(run.keys.begin(), run.keys.end(), key) != run.keys.end()) continue;
    if (std::string why = key_error(key); !why.empty()) {
      c.refusal = StrCat("-", why);
      run.calls.push_back({stats, /*rejected=*/true, /*failed=*/false});
    } else if (!run.may_run_again) {
      c.refusal = StrCat("-ERR rampart: the script called a command on key '", key,
                         "', which is not in its KEYS (inside MULTI a script must declare its keys)");
      run.calls.push_back({stats, /*rejected=*/true, /*failed=*/false});
    } else {
      run.undeclared.emplace_back(key);
      run.stopped = true;
    }
    return;
  }
  resp::Writer out(&c.reply);  // scripts speak RESP2 (redis.setresp(2))
  if (spec->apply != nullptr) {
    ApplyCommand(*spec, c.args, *run.data, out);
  } else if (spec->name == "time") {  // SELECT and TIME have no Apply (PING and ECHO have)
    TimeReply(out);
  } else {
    SelectReply(c.args[1], out);
  }
  run.calls.push_back({stats, /*rejected=*/false, /*failed=*/!c.reply.empty() && c.reply[0] == '-'});
  if (!run.data->missing().empty()) run.stopped = true;
}

// RESP2 → Lua (Redis's rules): an integer a number, a bulk string a string,
// a null (bulk or array) false, an array a table, a status {ok = ...}, an
// error {err = ...}.
void ScriptRunner::Impl::PushReply(lua_State* L, std::string_view& resp, int depth) {
  if (resp.empty()) {
    lua_pushboolean(L, 0);
    return;
  }
  const char type = resp[0];
  resp.remove_prefix(1);
  const std::string_view line = TakeLine(resp);
  switch (type) {
    case '+':
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      lua_setfield(L, -2, "ok");
      return;
    case '-':  // the line is in `resp`, which the caller keeps: one byte back is its '-'
      return PushErrorTable(L, std::string_view(line.data() - 1, line.size() + 1));
    case ':':
      lua_pushnumber(L, static_cast<lua_Number>(LengthOf(line)));
      return;
    case '$': {
      const int64_t n = LengthOf(line);
      if (n < 0 || static_cast<uint64_t>(n) > resp.size()) {
        lua_pushboolean(L, 0);
        return;
      }
      lua_pushlstring(L, resp.data(), static_cast<size_t>(n));
      resp.remove_prefix(std::min(resp.size(), static_cast<size_t>(n) + 2));
      return;
    }
    case '*': {
      const int64_t n = LengthOf(line);
      if (n < 0 || depth >= kMaxReplyDepth || !lua_checkstack(L, 4)) {
        lua_pushboolean(L, 0);
        return;
      }
      lua_createtable(L, static_cast<int>(std::min<int64_t>(n, 1 << 20)), 0);
      for (int64_t i = 1; i <= n; ++i) {
        PushReply(L, resp, depth + 1);
        lua_rawseti(L, -2, static_cast<int>(i));
      }
      return;
    }
    default:
      lua_pushboolean(L, 0);
  }
}

bool ScriptRunner::IsEval(std::string_view name) {
  return name == "eval" || name == "evalsha" || name == "eval_ro" || name == "evalsha_ro";
}

ScriptRunner::ScriptRunner(ScriptCache& cache, const std::atomic<uint64_t>& time_limit_ms, KeyCheck key_error)
    : impl_(std::make_unique<Impl>(cache, time_limit_ms, std::move(key_error))) {}

ScriptRunner::~ScriptRunner() = default;

const std::vector<std::string>& ScriptRunner::undeclared() const { return impl_->run.undeclared; }

const std::vector<ScriptRunner::Call>& ScriptRunner::calls() const { return impl_->run.calls; }

Result<ScriptRunner::Impl::Compiled> ScriptRunner::Impl::CompiledFor(const std::string& sha,
                                                                   std::optional<std::string_view> body) {
  if (cache_generation != cache.generation()) {  // SCRIPT FLUSH
    for (const auto& [old, c] : compiled) luaL_unref(lua, LUA_REGISTRYINDEX, c.ref);
    compiled.clear();
    cache_generation = cache.generation();
  }
  // Compiled here since the last FLUSH: the cache has the body (it is added
  // before the first run), so neither the cache nor the body is needed.
  if (auto it = compiled.find(sha); it != compiled.end()) return it->second;
  std::optional<std::string> cached;
  if (!body.has_value()) {
    cached = cache.Find(sha);
    if (!cached.has_value()) return NotFound("NOSCRIPT No matching script. Please use EVAL.");
    body = *cached;
  }
  RAMPART_ASSIGN_OR_RETURN(Compiled c, Compile(*body));
  cache.Add(*body);
  compiled.emplace(sha, c);
  return c;
}

void ScriptRunner::Load(std::string_view body, resp::Writer& out) {
  const std::string sha = Sha1Hex(body);
  auto compiled = impl_->CompiledFor(sha, body);
  if (!compiled.ok()) return out.Error(compiled.status().message());
  out.Bulk(sha);
}

// EVAL script numkeys key... arg...: runs the script as Impl::Run says. Its
// return value becomes the reply: a string a bulk string, a number an
// integer (truncated), true 1, false and nil a null, {err = e} the error e,
// {ok = s} the status s, another table an array of its elements up to the
// first nil (each converted likewise). A raised error is replied as
// WriteScriptError says.
void ScriptRunner::Eval(Args args, DataView& data, resp::Writer& out, std::span<const std::string> more_keys,
                        bool may_run_again) {
  Impl& impl = *impl_;
  impl.run = Impl::Run{};
  const std::string name = Lower(args[0]);
  auto numkeys = ParseInt64(args[2]);
  if (!numkeys.ok()) return out.Error("ERR value is not an integer or out of range");
  if (*numkeys < 0) return out.Error("ERR Number of keys can't be negative");
  if (static_cast<uint64_t>(*numkeys) > args.size() - 3) {
    return out.Error("ERR Number of keys can't be greater than number of args");
  }
  const bool by_sha = name.starts_with("evalsha");
  const std::string sha = by_sha ? Lower(args[1]) : Sha1Hex(args[1]);
  auto compiled = impl.CompiledFor(sha, by_sha ? std::nullopt : std::optional<std::string_view>(args[1]));
  if (!compiled.ok()) return out.Error(compiled.status().message());
  const bool ro_command = name.ends_with("_ro");
  if (ro_command && compiled->shebang && !compiled->no_writes) {
    return out.Error("ERR Can not execute a script with write flag using *_ro command.");
  }
  Impl::Run& run = impl.run;
  run.data = &data;
  run.sha = sha;
  run.read_only = ro_command || compiled->no_writes;
  run.may_run_again = may_run_again;
  const size_t n = static_cast<size_t>(*numkeys);
  run.keys.assign(args.begin() + 3, args.begin() + 3 + static_cast<ptrdiff_t>(n));
  run.keys.insert(run.keys.end(), more_keys.begin(), more_keys.end());
  run.limit_ms = impl.time_limit_ms.load(std::memory_order_relaxed);
  run.deadline_ms = run.limit_ms > 0 ? SteadyMs() + run.limit_ms : 0;
  impl.rand48 = data.Random() & ((uint64_t{1} << 48) - 1);  // the same in every run of the job
  lua_State* L = impl.lua;
  if (!impl.SetKeysAndArgv(args.subspan(3, n), args.subspan(3 + n))) {
    lua_settop(L, 0);
    return out.Error("ERR rampart: no memory left for the script's KEYS and ARGV");
  }

  lua_getfield(L, LUA_REGISTRYINDEX, "rampart.error_handler");
  lua_rawgeti(L, LUA_REGISTRYINDEX, compiled->ref);
  impl.SetHook(run.deadline_ms > 0);
  const int status = lua_pcall(L, 0, 1, -2);
  impl.SetHook(false);
  run.data = nullptr;  // a redis.call after this (none can come) finds no view
  if (run.stopped && !run.timed_out) {
    lua_settop(L, 0);
    return out.Error("ERR rampart: the script's run stopped to read more");  // dropped by the worker
  }
  // The conversion may raise (out of memory): under lua_cpcall, into a
  // buffer of its own, so a failure leaves no half reply.
  lua_setfield(L, LUA_REGISTRYINDEX, "rampart.result");  // its slot exists: allocates nothing
  lua_settop(L, 0);
  std::string reply;
  resp::Writer reply_out(&reply);
  reply_out.SetProtocol(out.protocol());
  RunResult result{.failed = status != 0, .sha = sha, .out = &reply_out};
  if (lua_cpcall(L, WriteRunResult, &result) == 0) {
    out.out()->append(reply);
  } else {
    out.Error("ERR rampart: not enough memory for the script's reply");
  }
  lua_settop(L, 0);
  lua_pushboolean(L, 0);
  lua_setfield(L, LUA_REGISTRYINDEX, "rampart.result");
  run.sha = {};
  run.keys.clear();
  if (impl.lua_bytes > kMaxLuaBytes / 2) lua_cpcall(L, CollectGarbage, nullptr);
}

}  // namespace rampart::proxy
