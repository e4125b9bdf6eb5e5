// Lua scripts (script.h): a ScriptRunner and a ScriptCache run EVAL, EVALSHA,
// EVAL_RO and EVALSHA_RO directly on DataViews, with no worker and no
// cluster. The views are seeded as the worker seeds them: the script's KEYS
// (absent unless a test stores a value), and keys the script did not declare
// only when a test passes them as `more_keys`. Replies are checked as exact
// RESP bytes, with Redis 7.0's error texts as script.cc writes them.
#include "proxy/script.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/command_test_util.h"
#include "proxy/data_view.h"
#include "proxy/resp.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {
namespace {

using namespace rampart::proxy::testing;  // command_test_util.h: replies, CommandHarness, kNow

std::string Str(std::string_view v) { return EncodeString(v, 0); }

std::string Text(size_t n, char salt = 'a') {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(salt + i % 23));
  return s;
}

// The error reply of a script that raised `message` on `line`: Redis 7.0
// appends where the error was raised, naming the script by its SHA1.
std::string ScriptErr(std::string_view script, std::string_view message, int line = 1) {
  return Err(std::string(message) + " script: " + Sha1Hex(script) + ", on @user_script:" + std::to_string(line) +
             ".");
}

// The string payload a view holds at `key`; nullopt when absent.
std::optional<std::string> StringIn(const DataView& view, std::string_view key) {
  auto found = view.Find(key);
  if (!found.ok() || !found->has_value()) return std::nullopt;
  return std::string((*found)->payload);
}
bool Dirty(const DataView& view, std::string_view key) {
  auto it = view.entries().find(key);
  return it != view.entries().end() && it->second.dirty;
}

class ScriptTest : public ::testing::Test {
 protected:
  // Runs `args` (EVAL and friends) on `view` in `protocol`; the reply bytes.
  std::string Run(DataView& view, std::vector<std::string_view> args, int protocol = 2,
                  std::span<const std::string> more_keys = {}, bool may_run_again = true) {
    std::string reply;
    resp::Writer out(&reply);
    out.SetProtocol(protocol);
    runner_.Eval(args, view, out, more_keys, may_run_again);
    return reply;
  }

  // `command` (EVAL by default) of `script` with `keys` and `argv` on view_,
  // each key seeded absent unless the view holds it already.
  std::string Eval(std::string_view script, std::vector<std::string_view> keys = {},
                   std::vector<std::string_view> argv = {}, std::string_view command = "EVAL", int protocol = 2) {
    for (std::string_view key : keys) {
      if (view_.entries().find(key) == view_.entries().end()) view_.Seed(key, std::nullopt);
    }
    const std::string numkeys = std::to_string(keys.size());
    std::vector<std::string_view> args = {command, script, numkeys};
    args.insert(args.end(), keys.begin(), keys.end());
    args.insert(args.end(), argv.begin(), argv.end());
    return Run(view_, args, protocol);
  }

  std::string Load(std::string_view body) {
    std::string reply;
    resp::Writer out(&reply);
    runner_.Load(body, out);
    return reply;
  }

  std::atomic<uint64_t> limit_ms_{0};  // no time limit unless a test sets one
  ScriptCache cache_;
  // The worker's rule for keys, in short: no page keys.
  ScriptRunner runner_{cache_, limit_ms_, [](std::string_view key) {
                         return key.starts_with(std::string_view("\0\1", 2)) ? std::string("ERR reserved key")
                                                                              : std::string();
                       }};
  DataView view_{kNow, 1};
};

// ---- The cache -------------------------------------------------------------

// Sha1Hex gives the standard digests, in lower-case hex.
TEST(ScriptCache, Sha1HexOfKnownInputs) {
  EXPECT_EQ(Sha1Hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

// Add returns the body's SHA1; Find takes it in any case; Clear forgets
// every body and moves the generation on.
TEST(ScriptCache, AddFindAndClear) {
  ScriptCache cache;
  const uint64_t generation = cache.generation();
  const std::string sha = cache.Add("return 1");
  EXPECT_EQ(sha, Sha1Hex("return 1"));
  EXPECT_EQ(cache.Add("return 1"), sha);  // a second Add keeps one copy
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Find(sha), "return 1");
  std::string upper = sha;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(cache.Find(upper), "return 1");
  EXPECT_EQ(cache.Find(Sha1Hex("return 2")), std::nullopt);
  cache.Clear();
  EXPECT_EQ(cache.Find(sha), std::nullopt);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.generation(), generation + 1);
}

// ---- Reply conversions -----------------------------------------------------

// Lua → RESP: numbers truncated to integers, strings bulk, true 1, false and
// nil a null bulk, tables arrays up to their first nil, {ok=} and {err=}.
TEST_F(ScriptTest, LuaValuesBecomeReplies) {
  EXPECT_EQ(Eval("return 3.99"), Int(3));
  EXPECT_EQ(Eval("return -3.99"), Int(-3));
  EXPECT_EQ(Eval("return 'hi'"), Bulk("hi"));
  EXPECT_EQ(Eval("return true"), Int(1));
  EXPECT_EQ(Eval("return false"), kNil);
  EXPECT_EQ(Eval("return nil"), kNil);
  EXPECT_EQ(Eval("return {}"), Arr(0));
  EXPECT_EQ(Eval("return {1, 'a', {2, {3}}, nil, 5}"),
            Arr(3) + Int(1) + Bulk("a") + Arr(2) + Int(2) + Arr(1) + Int(3));
  EXPECT_EQ(Eval("return {ok = 'FINE'}"), Line('+', "FINE"));
  EXPECT_EQ(Eval("return {err = 'MYCODE went wrong'}"), Err("MYCODE went wrong"));
  EXPECT_EQ(Eval("return {1, {err = 'bad'}, {ok = 'good'}}"), Arr(3) + Int(1) + Err("bad") + Line('+', "good"));
  EXPECT_EQ(Eval("return redis.status_reply('PONG')"), Line('+', "PONG"));
  EXPECT_EQ(Eval("return redis.error_reply('boom')"), Err("ERR boom"));  // no code: ERR added
  EXPECT_EQ(Eval("return redis.error_reply('-CODE boom')"), Err("CODE boom"));
  EXPECT_EQ(Eval("return KEYS[1] .. ARGV[2]", {"k"}, {"a", "b"}), Bulk("kb"));
}

// For a RESP3 client false and nil are RESP3's null, inside arrays too.
TEST_F(ScriptTest, NullsInResp3) {
  EXPECT_EQ(Eval("return nil", {}, {}, "EVAL", 3), kNull3);
  EXPECT_EQ(Eval("return {1, false}", {}, {}, "EVAL", 3), Arr(2) + Int(1) + kNull3);
}

// RESP → Lua: a command's reply comes back as Lua values and converts back
// to the same reply (a status a {ok=} table, a missing key false, an
// integer a number, an array a table).
TEST_F(ScriptTest, CommandRepliesRoundTrip) {
  view_.Seed("h", EncodeHash({{"a", "1"}, {"b", "2"}}, 0));
  EXPECT_EQ(Eval("return redis.call('hgetall', KEYS[1])", {"h"}), Bulks({"a", "1", "b", "2"}));
  // A RESP3 client gets the array too: scripts speak RESP2.
  EXPECT_EQ(Eval("return redis.call('hgetall', KEYS[1])", {"h"}, {}, "EVAL", 3), Bulks({"a", "1", "b", "2"}));
  EXPECT_EQ(Eval("return redis.call('get', KEYS[1]) == false", {"missing"}), Int(1));
  EXPECT_EQ(Eval("return redis.call('set', KEYS[1], 'v')", {"s"}), kOk);
  EXPECT_EQ(Eval("return redis.call('set', KEYS[1], 'v').ok", {"s"}), Bulk("OK"));
  EXPECT_EQ(Eval("return redis.call('incr', KEYS[1]) + 10", {"n"}), Int(11));
  // A nil inside an array reply is false, not nil: the array keeps its length.
  EXPECT_EQ(Eval("return redis.call('hmget', KEYS[1], 'a', 'zz', 'b')", {"h"}), Arr(3) + Bulk("1") + kNil + Bulk("2"));
  // An error reply is an {err=} table (redis.pcall returns it as it is).
  view_.Seed("w", EncodeHash({{"a", "1"}}, 0));
  EXPECT_EQ(Eval("return redis.pcall('get', KEYS[1])", {"w"}), kWrongTypeReply);
  EXPECT_EQ(Eval("return redis.pcall('get', KEYS[1]).err", {"w"}), Bulk(kWrongType));
}

// ---- Writes, read-only runs ------------------------------------------------

// A script's writes land in the view (dirty entries) and it reads its own
// writes.
TEST_F(ScriptTest, WritesLandInTheViewAndAreReadBack) {
  const std::string script = "redis.call('set', KEYS[1], ARGV[1]); redis.call('append', KEYS[1], '!');"
                             "return redis.call('get', KEYS[1])";
  EXPECT_EQ(Eval(script, {"k"}, {"v"}), Bulk("v!"));
  EXPECT_TRUE(Dirty(view_, "k"));
  EXPECT_EQ(StringIn(view_, "k"), "v!");
}

// EVAL_RO refuses a write with Redis's text and where it was raised; the
// view keeps no write.
TEST_F(ScriptTest, EvalRoRefusesWrites) {
  const std::string script = "return redis.call('set', KEYS[1], 'v')";
  EXPECT_EQ(Eval(script, {"k"}, {}, "EVAL_RO"),
            ScriptErr(script, "ERR Write commands are not allowed from read-only scripts."));
  EXPECT_FALSE(Dirty(view_, "k"));
  // redis.pcall hands the refusal back as an error table instead.
  EXPECT_EQ(Eval("return redis.pcall('set', KEYS[1], 'v')", {"k"}, {}, "EVAL_RO"),
            Err("ERR Write commands are not allowed from read-only scripts."));
  view_.Seed("r", Str("x"));
  EXPECT_EQ(Eval("return redis.call('get', KEYS[1])", {"r"}, {}, "eval_ro"), Bulk("x"));  // reads run
}

// ---- Runs that stop --------------------------------------------------------

// A command on a key not in KEYS stops the run and names the key; given that
// key as more_keys (the worker read and locked it), the script runs to the end.
TEST_F(ScriptTest, UndeclaredKeyStopsTheRun) {
  const std::string script = "redis.call('set', KEYS[1], 'x'); return redis.call('get', 'other')";
  EXPECT_EQ(Eval(script, {"k"}), Err("ERR rampart: the script's run stopped to read more"));  // dropped
  EXPECT_EQ(runner_.undeclared(), std::vector<std::string>{"other"});

  DataView view(kNow);
  view.Seed("k", std::nullopt);
  view.Seed("other", Str("there"));
  const std::vector<std::string> more = {"other"};
  EXPECT_EQ(Run(view, {"EVAL", script, "1", "k"}, 2, more), Bulk("there"));
  EXPECT_TRUE(runner_.undeclared().empty());
  EXPECT_EQ(StringIn(view, "k"), "x");
}

// A script reading a long string whose chunks the view does not hold stops
// (missing() lists them); on a view holding them it runs to the end.
TEST_F(ScriptTest, MissingDataStopsTheRun) {
  CommandHarness h;
  h.set_max_value_bytes(64);
  ASSERT_EQ(h.Run({"SET", "long", Text(300)}), kOk);  // a header and five chunks
  DataView header_only(kNow);
  header_only.set_max_value_bytes(64);
  header_only.Seed("long", h.store().at("long"));
  const std::string script = "return redis.call('strlen', KEYS[1]) .. ':' .. redis.call('get', KEYS[1])";
  EXPECT_EQ(Run(header_only, {"EVAL", script, "1", "long"}), Err("ERR rampart: the script's run stopped to read more"));
  EXPECT_FALSE(header_only.missing().empty());
  EXPECT_TRUE(runner_.undeclared().empty());

  DataView full = h.View();
  EXPECT_EQ(Run(full, {"EVAL", script, "1", "long"}), Bulk("300:" + Text(300)));
  EXPECT_TRUE(full.missing().empty());
}

// No protected call — pcall, redis.pcall, xpcall, coroutine.resume,
// coroutine.wrap — can swallow a stop: the run stops and what the script
// would have written after it is not in the view.
TEST_F(ScriptTest, ProtectedCallsCannotSwallowAStop) {
  CommandHarness h;
  h.set_max_value_bytes(64);
  ASSERT_EQ(h.Run({"SET", "long", Text(300)}), kOk);
  const std::vector<std::string> catches = {
      "pcall(redis.call, 'get', KEYS[1])",
      "redis.pcall('get', KEYS[1])",
      "xpcall(function() return redis.call('get', KEYS[1]) end, function(e) return e end)",
      "coroutine.resume(coroutine.create(function() redis.call('get', KEYS[1]) end))",
      "pcall(coroutine.wrap(function() redis.call('get', KEYS[1]) end))",
      "pcall(function() pcall(redis.call, 'get', KEYS[1]) end)",
      "pcall(redis.call, 'get', 'undeclared')",
  };
  for (const std::string& attempt : catches) {
    DataView view(kNow);
    view.set_max_value_bytes(64);
    view.Seed("long", h.store().at("long"));
    view.Seed("before", std::nullopt);
    view.Seed("after", std::nullopt);
    const std::string script =
        "redis.call('set', KEYS[2], '1'); " + attempt + "; redis.call('set', KEYS[3], '1'); return 'done'";
    const std::string reply = Run(view, {"EVAL", script, "3", "long", "before", "after"});
    EXPECT_EQ(reply.rfind("-ERR rampart: the script", 0), 0u) << attempt << " → " << reply;
    EXPECT_TRUE(!view.missing().empty() || !runner_.undeclared().empty()) << attempt;
    EXPECT_TRUE(Dirty(view, "before")) << attempt;
    EXPECT_FALSE(Dirty(view, "after")) << attempt;
  }
}

// ---- The sandbox -----------------------------------------------------------

// Globals and libraries are read-only, with Redis 7.0's texts.
TEST_F(ScriptTest, GlobalsAreReadOnly) {
  const std::string set_global = "x = 1";
  EXPECT_EQ(Eval(set_global), ScriptErr(set_global, "ERR user_script:1: Attempt to modify a readonly table"));
  const std::string read_unknown = "return y";
  EXPECT_EQ(Eval(read_unknown),
            ScriptErr(read_unknown, "ERR user_script:1: Script attempted to access nonexistent global variable 'y'"));
  const std::string raw = "rawset(_G, 'x', 1)";
  EXPECT_EQ(Eval(raw), ScriptErr(raw, "ERR Attempt to modify a readonly table"));
  const std::string lib = "string.foo = 1";
  EXPECT_EQ(Eval(lib), ScriptErr(lib, "ERR user_script:1: Attempt to modify a readonly table"));
  const std::string mt = "setmetatable(_G, {})";
  EXPECT_EQ(Eval(mt).rfind("-ERR ", 0), 0u);
  const std::string string_mt = "getmetatable('').__index.foo = 1";
  EXPECT_EQ(Eval(string_mt), ScriptErr(string_mt, "ERR user_script:1: Attempt to modify a readonly table"));
  EXPECT_EQ(Eval("local t = {}; rawset(t, 'a', 5); return t.a"), Int(5));  // other tables are not
}

// Nothing a script does is left for the next one, whatever it tried.
TEST_F(ScriptTest, NothingLeaksToTheNextScript) {
  Eval("pcall(function() x = 1 end); pcall(rawset, _G, 'x', 1); pcall(function() string.foo = 1 end);"
       "pcall(function() redis.call = nil end); pcall(function() math.random = nil end);"
       "pcall(function() getmetatable('').__index.upper = nil end)");
  EXPECT_EQ(Eval("return tostring(pcall(function() return x end)) .. ',' .. type(string.foo) .. ','"
                 " .. type(redis.call) .. ',' .. type(math.random) .. ',' .. ('a'):upper()"),
            Bulk("false,nil,function,function,A"));
}

// print, dofile, loadfile, getfenv, setfenv, module and require are absent
// (reading them is reading an unknown global).
TEST_F(ScriptTest, RemovedFunctionsAreAbsent) {
  EXPECT_EQ(Eval("local found = {}"
                 " for _, n in ipairs({'print', 'dofile', 'loadfile', 'getfenv', 'setfenv', 'module', 'require'}) do"
                 "   if pcall(function() return _G[n] end) then found[#found + 1] = n end"
                 " end return found"),
            Arr(0));
}

// loadstring works, and its chunks see the same read-only globals.
TEST_F(ScriptTest, LoadstringSeesTheSameGlobals) {
  EXPECT_EQ(Eval("return loadstring('return 1 + ARGV[1]')()", {}, {"41"}), Int(42));
  EXPECT_EQ(Eval("local ok, e = pcall(loadstring('z = 1')); return e"),
            Bulk("[string \"z = 1\"]:1: Attempt to modify a readonly table"));
  EXPECT_EQ(Eval("return loadstring('return redis.call')() == redis.call"), Int(1));
}

// cjson, bit and Redis's math.random are there.
TEST_F(ScriptTest, Libraries) {
  EXPECT_EQ(Eval("return cjson.encode({1, 2, 'x'})"), Bulk("[1,2,\"x\"]"));
  EXPECT_EQ(Eval("return cjson.decode('{\"a\":5}').a"), Int(5));
  EXPECT_EQ(Eval("return bit.band(12, 10)"), Int(8));
  EXPECT_EQ(Eval("return bit.tohex(255, 4)"), Bulk("00ff"));
  EXPECT_EQ(Eval("math.randomseed(7); return tostring(math.random())"), Bulk("0.26644419658298"));
  EXPECT_EQ(Eval("return redis.sha1hex('abc')"), Bulk(Sha1Hex("abc")));
}

// A returned table nested deeper than the reply may go (each level needs Lua
// stack: found overrunning it at about 45 levels before lua_checkstack):
// 200 levels, then an error element; the runner goes on.
// A returned table is read without metamethods: _G (a read-only proxy) and a
// table whose __index raises or calls redis are empty arrays, not an abort.
TEST_F(ScriptTest, ReturnedTablesAreReadRaw) {
  EXPECT_EQ(Eval("return _G"), Arr(0));
  EXPECT_EQ(Eval("local a = {}; setmetatable(a, {__index = function() foo() end}) return a"), Arr(0));
  EXPECT_EQ(Eval("local a = {}; setmetatable(a, {__index = function() redis.call('set', KEYS[1], '1') end}) "
                 "return a", {"k"}),
            Arr(0));
  EXPECT_FALSE(Dirty(view_, "k"));
  const std::string raising = "error(setmetatable({}, {__index = function() foo() end}))";
  EXPECT_EQ(Eval(raising), ScriptErr(raising, "ERR rampart: the script raised an error without an 'err' field", 1));
}

// unpack's ranges that overflow Lua 5.1.5's count are an error, not a crash
// (as in Redis's Lua); ordinary ranges give nils where the table has none.
TEST_F(ScriptTest, UnpackChecksItsRange) {
  for (const char* range : {"-2, 2147483647", "0, 2147483647", "-2147483648, -2"}) {
    const std::string script = std::string("return {unpack({1,2,3}, ") + range + ")}";
    EXPECT_NE(Eval(script).find("too many results to unpack"), std::string::npos) << range;
  }
  EXPECT_EQ(Eval("return {unpack({1,2,3}, -1, -2)}"), Arr(0));
  EXPECT_EQ(Eval("return select('#', unpack({1,2,3}, -1, 5))"), Int(7));
}

// bit.tohex with n = -2^31 (lua-bitop overflowed its buffer) gives 8 digits,
// upper case, as Redis's patched copy does.
TEST_F(ScriptTest, BitTohexOfMinimumWidth) {
  EXPECT_EQ(Eval("return bit.tohex(65535, -2147483648)"), Bulk("0000FFFF"));
  EXPECT_EQ(Eval("return bit.tohex(65535, 2147483648)"), Bulk("0000FFFF"));
  EXPECT_EQ(Eval("return bit.tohex(255, 4)"), Bulk("00ff"));
}

// cjson.encode refuses a value whose output could pass 256 MiB (lua-cjson's
// buffer overflows its int past 2 GiB) and encodes the rest.
TEST_F(ScriptTest, CjsonEncodeIsBounded) {
  const std::string reply = Eval("local s = string.rep('x', 50 * 1024 * 1024); return cjson.encode({s, s, s, s, s, s})");
  EXPECT_NE(reply.find("rampart: cjson.encode's output could exceed 256 MiB"), std::string::npos) << reply;
  EXPECT_EQ(Eval("return cjson.encode({a = {1, 2, 'x'}})"), Bulk(R"({"a":[1,2,"x"]})"));
  EXPECT_NE(Eval("local t = {}; t[1] = t; return cjson.encode(t)").find("excessive nesting"), std::string::npos);
}

// The read-only proxies hide what is behind them: their metatables are
// read-only too, setmetatable on them fails with Redis's text, and a
// library's table cannot be reached through getmetatable to be changed.
TEST_F(ScriptTest, MetatablesOfTheProxiesAreReadOnly) {
  for (const char* body : {"setmetatable(_G, {})", "local g = getmetatable(_G); g.__index = {}",
                           "getmetatable('').__index.upper = nil"}) {
    EXPECT_NE(Eval(body).find("Attempt to modify a readonly table"), std::string::npos) << body;
  }
  // A library proxy's __index is a function: nothing behind it to index.
  EXPECT_NE(Eval("getmetatable(string).__index.upper = nil").find("attempt to index field '__index' (a function value)"),
            std::string::npos);
  EXPECT_EQ(Eval("return ('abc'):upper() .. string.upper('d')"), Bulk("ABCD"));
}

// A binary chunk (string.dump's bytes, which can be crafted to crash Lua 5.1)
// is not loaded: loadstring gives nil, as in Redis; text chunks load.
TEST_F(ScriptTest, BinaryChunksAreNotLoaded) {
  const std::string reply = Eval("return loadstring(string.dump(function() return 1 end))()");
  EXPECT_NE(reply.find("attempt to call a nil value"), std::string::npos) << reply;
  EXPECT_EQ(Eval("return loadstring('return 7')()"), Int(7));
}

// Inside MULTI (no second run) a key not in KEYS is an error at its call,
// which pcall catches; a key the worker refuses is refused at its call too.
TEST_F(ScriptTest, UndeclaredKeysWithoutARunAgain) {
  view_.Seed("k", std::nullopt);
  const std::string script = "redis.call('set', KEYS[1], 'a') return redis.call('get', 'other')";
  EXPECT_EQ(Run(view_, {"EVAL", script, "1", "k"}, 2, {}, /*may_run_again=*/false),
            ScriptErr(script, "ERR rampart: the script called a command on key 'other', which is not in its KEYS "
                              "(inside MULTI a script must declare its keys)"));
  EXPECT_TRUE(runner_.undeclared().empty());
  EXPECT_EQ(StringIn(view_, "k"), "a");  // what it wrote before the error stands, as after any error
  EXPECT_EQ(Run(view_, {"EVAL", "return redis.pcall('get', 'other').err ~= nil", "0"}, 2, {}, false), Int(1));
  const std::string page = "return redis.call('set', '\\0\\1' .. 'victim', 'junk')";  // Lua's escapes
  EXPECT_EQ(Eval(page), ScriptErr(page, "ERR reserved key"));
  EXPECT_TRUE(runner_.undeclared().empty());
}

// What a hostile script could use to crash Lua 5.1 or outlive its run is not
// there: a bytecode body, newproxy (finalizers), cjson.new (unguarded
// encode), decode/encode depths past 1000, tohex's width as a string.
TEST_F(ScriptTest, NoWayAroundTheGuards) {
  const std::string bytecode = Eval("return string.dump(function() return 42 end)");
  ASSERT_EQ(bytecode[0], '$');
  const std::string body = bytecode.substr(bytecode.find("\r\n") + 2, bytecode.size() - bytecode.find("\r\n") - 4);
  EXPECT_NE(Eval(body).find("binary chunks are not accepted"), std::string::npos);
  EXPECT_NE(Load(body).find("binary chunks are not accepted"), std::string::npos);
  EXPECT_NE(Eval("return newproxy(true)").find("nonexistent global variable 'newproxy'"), std::string::npos);
  EXPECT_EQ(Eval("return cjson.new == nil"), Int(1));
  EXPECT_EQ(Eval("return cjson.encode_max_depth(5000)"), Int(1000));
  EXPECT_EQ(Eval("return cjson.decode_max_depth(5000)"), Int(1000));
  EXPECT_EQ(Eval("return bit.tohex(65535, '-2147483648')"), Bulk("0000FFFF"));
}

// pcall gives an error table's text, as Redis's pcall does.
TEST_F(ScriptTest, PcallGivesTheErrorText) {
  Eval("redis.call('set', KEYS[1], 'text')", {"k"});
  EXPECT_EQ(Eval("local ok, e = pcall(redis.call, 'incr', KEYS[1]) return {tostring(ok), e}", {"k"}),
            Arr(2) + Bulk("false") + Bulk("ERR value is not an integer or out of range"));
  EXPECT_EQ(Eval("local ok, e = pcall(error, {code = 1}) return type(e)"), Bulk("table"));  // no err: as it is
}

TEST_F(ScriptTest, DeeplyNestedReply) {
  const std::string reply =
      Eval("local t = {}; local cur = t; for i = 1, 300 do cur[1] = {}; cur = cur[1] end; return t");
  std::string expected;
  for (int i = 0; i < 200; ++i) expected += Arr(1);
  EXPECT_EQ(reply, expected + Err("ERR reached lua stack limit"));
  EXPECT_EQ(Eval("return 1"), Int(1));
}

// redis.log with more arguments than a C function's 20 guaranteed stack
// slots (it once pushed them all and wrote past the Lua stack).
TEST_F(ScriptTest, LogWithManyArguments) {
  EXPECT_EQ(Eval("local t = {}; for i = 1, 300 do t[i] = 'w' end; redis.log(redis.LOG_DEBUG, unpack(t)); return 1"),
            Int(1));
  EXPECT_EQ(Eval("return 2"), Int(2));
}

// ---- The time limit --------------------------------------------------------

// A script running past the limit is stopped with an error, even one that
// loops on pcall; the runner then runs the next script.
TEST_F(ScriptTest, TimeLimitStopsLoops) {
  limit_ms_ = 100;
  for (const std::string script :
       {"while true do end", "while true do pcall(function() while true do end end) end",
        "while true do coroutine.resume(coroutine.create(function() while true do end end)) end"}) {
    const auto start = std::chrono::steady_clock::now();
    const std::string reply = Eval(script);
    EXPECT_EQ(reply.rfind("-ERR rampart: the script ran longer than 100 ms", 0), 0u) << script << " → " << reply;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << script;
  }
  EXPECT_EQ(Eval("return 1"), Int(1));
}

// ---- Compiling, shebangs ---------------------------------------------------

// A script that does not compile gets Redis's text with Lua's message.
TEST_F(ScriptTest, CompileErrors) {
  EXPECT_EQ(Eval("return ("), Err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"));
  EXPECT_EQ(Load("x ="), Err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"));
  EXPECT_EQ(cache_.size(), 0u);  // neither is cached
}

// #!lua flags=no-writes makes EVAL read-only; other flags Redis knows are taken.
TEST_F(ScriptTest, ShebangFlags) {
  const std::string no_writes = "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'v')";
  EXPECT_EQ(Eval(no_writes, {"k"}), ScriptErr(no_writes, "ERR Write commands are not allowed from read-only scripts.", 2));
  EXPECT_FALSE(Dirty(view_, "k"));
  EXPECT_EQ(Eval("#!lua flags=allow-oom,no-cluster\nreturn redis.call('set', KEYS[1], 'v')", {"k"}), kOk);
  EXPECT_EQ(Eval("#!lua\nreturn 1"), Int(1));
}

// Unknown engines, flags and options get Redis's texts.
TEST_F(ScriptTest, ShebangErrors) {
  EXPECT_EQ(Eval("#!lua flags=no-writes,bogus\nreturn 1"), Err("ERR Unexpected flag in script shebang: bogus"));
  EXPECT_EQ(Eval("#!python\nreturn 1"), Err("ERR Unexpected engine in script shebang: #!python"));
  EXPECT_EQ(Eval("#!lua name=x\nreturn 1"), Err("ERR Unknown lua shebang option: name=x"));
  EXPECT_EQ(Eval("#!lua flags=no-writes,\nreturn 1"), Err("ERR Unexpected flag in script shebang: "));
  EXPECT_EQ(Eval("#!lua"), Err("ERR Invalid script shebang"));  // no line after it
  EXPECT_EQ(Eval("#!lua\r\nreturn 1"), Int(1));  // split at any white space
  // A script with a shebang may write unless it says no-writes: EVAL_RO refuses it.
  EXPECT_EQ(Eval("#!lua\nreturn 1", {}, {}, "EVAL_RO"),
            Err("ERR Can not execute a script with write flag using *_ro command."));
  EXPECT_EQ(Eval("#!lua flags=no-writes\nreturn 1", {}, {}, "EVAL_RO"), Int(1));
}

// The shebang line counts: an error on the script's line 2 says line 2.
TEST_F(ScriptTest, LineNumbersAfterAShebang) {
  const std::string script = "#!lua\nerror('x')";
  EXPECT_EQ(Eval(script), ScriptErr(script, "ERR user_script:2: x", 2));
}

// ---- EVALSHA ---------------------------------------------------------------

// EVALSHA of an unknown SHA1 is NOSCRIPT; after Load it runs (EVALSHA_RO
// too); after the cache is cleared it is NOSCRIPT again, though this runner
// had compiled it.
TEST_F(ScriptTest, EvalshaFollowsTheCache) {
  const std::string body = "return redis.call('get', KEYS[1])";
  const std::string sha = Sha1Hex(body);
  view_.Seed("k", Str("v"));
  const std::string noscript = Err("NOSCRIPT No matching script. Please use EVAL.");
  EXPECT_EQ(Eval(sha, {"k"}, {}, "EVALSHA"), noscript);
  EXPECT_EQ(Load(body), Bulk(sha));
  EXPECT_EQ(Eval(sha, {"k"}, {}, "EVALSHA"), Bulk("v"));
  std::string upper = sha;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(Eval(upper, {"k"}, {}, "evalsha_ro"), Bulk("v"));
  cache_.Clear();
  EXPECT_EQ(Eval(sha, {"k"}, {}, "EVALSHA"), noscript);
  // EVAL caches the body for EVALSHA.
  EXPECT_EQ(Eval(body, {"k"}), Bulk("v"));
  EXPECT_EQ(Eval(sha, {"k"}, {}, "EVALSHA"), Bulk("v"));
}

// ---- numkeys ---------------------------------------------------------------

// numkeys negative, past the arguments or not an integer: Redis's texts.
TEST_F(ScriptTest, NumkeysErrors) {
  EXPECT_EQ(Run(view_, {"EVAL", "return 1", "-1"}), Err("ERR Number of keys can't be negative"));
  EXPECT_EQ(Run(view_, {"EVAL", "return 1", "2", "k"}), Err("ERR Number of keys can't be greater than number of args"));
  EXPECT_EQ(Run(view_, {"EVAL", "return 1", "x"}), kNotInteger);
  EXPECT_EQ(Run(view_, {"EVALSHA", Sha1Hex("nothing"), "1.5"}), kNotInteger);
}

// ---- Memory ----------------------------------------------------------------

// A script past the Lua memory cap ends in an error reply, and the runner
// runs the next script.
TEST_F(ScriptTest, MemoryCapEndsInAnError) {
  const std::string reply =
      Eval("local s = string.rep('x', 1024 * 1024); local t = {}; for i = 1, 2000 do t[i] = s .. i end; return #t");
  EXPECT_EQ(reply, Err("ERR not enough memory"));  // Lua's memory error, as Redis replies it
  EXPECT_EQ(Eval("return #string.rep('y', 1000)"), Int(1000));
}

}  // namespace
}  // namespace rampart::proxy
