// The command table and the data commands, applied to a DataView with no
// network, the way Worker::ApplyCommands applies them: the view is seeded with
// the stored values of the keys the command declares (KeysOf), the command
// replies through a resp::Writer, and what it would store is the view's dirty
// entries afterwards.
#include "proxy/commands.h"
#include "proxy/script.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "proxy/collection.h"
#include "proxy/command_test_util.h"
#include "proxy/data_view.h"
#include "proxy/resp.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {
namespace {

using namespace std::string_literals;
using namespace std::string_view_literals;
using namespace rampart::proxy::testing;  // command_test_util.h: replies, Store, kNow

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// ---- Stored values ---------------------------------------------------------

std::string Str(std::string_view v, uint64_t expire_at_ms = 0) { return EncodeString(v, expire_at_ms); }
std::string Hash(const HashFields& fields, uint64_t expire_at_ms = 0) { return EncodeHash(fields, expire_at_ms); }
std::string Zset(const std::vector<std::pair<std::string, double>>& members, uint64_t expire_at_ms = 0) {
  SortedSet set;
  for (const auto& [member, score] : members) set.Add(member, score);
  return set.Encode(expire_at_ms);
}
// A value the proxy did not write: shorter than the stored header.
const std::string kForeign = "plain";

// A paged collection held in its header (a small one) as text, the same as
// the whole-value formats: "hash {a=1}", "zset {a:1}", "set {a b}",
// "list [a b]".
std::string DescribePaged(const std::string& stored, ValueType type) {
  DataView view(0);  // at time 0 nothing has expired
  view.Seed("k", stored);
  auto c = Collection::Open(view, "k", type);
  if (!c.ok()) return "bad collection: " + c.status().ToString();
  const size_t tree = type == ValueType::kPagedZset ? kByScore : 0;
  const char* open = type == ValueType::kPagedHash   ? "hash {"
                     : type == ValueType::kPagedZset ? "zset {"
                     : type == ValueType::kPagedSet  ? "set {"
                                                     : "list [";
  std::string text = open;
  const Status walked = c->tree(tree).ForEach(0, false, [&](uint64_t, const TreeEntryRef& e) {
    if (text.back() != '{' && text.back() != '[') text += " ";
    switch (type) {
      case ValueType::kPagedHash: text += StrCat(e.key, "=", e.value); break;
      case ValueType::kPagedZset:
        text += std::string(MemberOfKey(e.key)) + ":" + FormatScore(ScoreOfKey(e.key));
        break;
      case ValueType::kPagedSet: text += e.key; break;
      default: text += e.value; break;
    }
    return true;
  });
  if (!walked.ok()) return "paged collection: " + walked.ToString();
  return text + (type == ValueType::kList ? "]" : "}");
}

// A stored value as text, for readable expectations: "string v",
// "hash {a=1 b=2}", "zset {a:1 b:2.5}", each with " expire=now+N" when it
// expires; "deleted" for a delete.
std::string Describe(const std::optional<std::string>& stored) {
  if (!stored.has_value()) return "deleted";
  auto v = DecodeStored(*stored);
  if (!v.ok()) return "undecodable: " + v.status().ToString();
  std::string text;
  switch (v->type) {
    case ValueType::kString:
      text = "string " + std::string(v->payload);
      break;
    case ValueType::kHash: {
      auto fields = DecodeHash(v->payload);
      if (!fields.ok()) return "bad hash: " + fields.status().ToString();
      text = "hash {";
      for (const auto& [f, value] : *fields) text += (text.back() == '{' ? "" : " ") + f + "=" + value;
      text += "}";
      break;
    }
    case ValueType::kZset: {
      auto set = SortedSet::Decode(v->payload);
      if (!set.ok()) return "bad zset: " + set.status().ToString();
      text = "zset {";
      constexpr double kInf = std::numeric_limits<double>::infinity();
      for (const auto& [m, score] : set->RangeByScore({-kInf, false}, {kInf, false}, 0, -1)) {
        text += (text.back() == '{' ? "" : " ") + std::string(m) + ":" + FormatScore(score);
      }
      text += "}";
      break;
    }
    default:
      text = DescribePaged(*stored, v->type);
      break;
  }
  if (v->expire_at_ms != 0) {
    const int64_t delta = static_cast<int64_t>(v->expire_at_ms - kNow);
    text += " expire=now" + std::string(delta >= 0 ? "+" : "") + std::to_string(delta);
  }
  return text;
}

// The writes a view holds (its dirty entries), described.
using Writes = std::map<std::string, std::string>;
Writes WritesOf(const DataView& view) {
  Writes w;
  for (const auto& [key, entry] : view.entries()) {
    if (entry.dirty) w[key] = Describe(entry.stored);
  }
  return w;
}

// ---- Running commands ------------------------------------------------------

// Applies one data command to `view` as ApplyCommands does; the reply bytes.
std::string Apply(DataView& view, std::vector<std::string_view> args, int protocol = 2) {
  const CommandSpec* spec = FindCommand(args[0]);
  if (spec == nullptr || spec->apply == nullptr) {
    ADD_FAILURE() << "not a data command: " << args[0];
    return "";
  }
  EXPECT_EQ(CheckArity(*spec, args), "");
  std::string reply;
  resp::Writer out(&reply);
  out.SetProtocol(protocol);
  spec->apply(args, view, out);
  return reply;
}

struct Ran {
  std::string reply;
  DataView view;
  Writes writes() const { return WritesOf(view); }
};

// One command on a fresh view seeded like the worker seeds one: every key the
// command declares, with its value in `store` or absent.
Ran Exec(const Store& store, std::vector<std::string_view> args, int protocol = 2) {
  Ran r{"", DataView(kNow)};
  const CommandSpec* spec = FindCommand(args[0]);
  if (spec == nullptr) {
    ADD_FAILURE() << "unknown command " << args[0];
    return r;
  }
  for (std::string_view key : KeysOf(*spec, args)) {
    auto it = store.find(key);
    r.view.Seed(key, it == store.end() ? std::nullopt : std::optional<std::string>(it->second));
  }
  r.reply = Apply(r.view, args, protocol);
  return r;
}

// One command on a store: the reply it must give and the writes it must
// leave (none unless listed).
struct Case {
  std::vector<std::string_view> args;
  std::string reply;
  Writes writes = {};
};
void ExpectCases(const Store& store, const std::vector<Case>& cases, int protocol = 2) {
  for (const Case& c : cases) {
    std::string command;
    for (std::string_view a : c.args) command.append(a).append(" ");
    Ran r = Exec(store, c.args, protocol);
    EXPECT_EQ(r.reply, c.reply) << command << "(RESP" << protocol << ")";
    EXPECT_EQ(r.writes(), c.writes) << command;
  }
}

using Commands = std::vector<std::vector<std::string_view>>;  // in tables, "$" stands for the key

// ---- The table -------------------------------------------------------------

TEST(CommandTable, FindCommandIgnoresCaseAndRefusesUnknownNames) {
  const CommandSpec* get = FindCommand("get");
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(get->name, "get");
  EXPECT_EQ(get->kind, CommandKind::kRead);
  EXPECT_EQ(FindCommand("GET"), get);
  EXPECT_EQ(FindCommand("gEt"), get);
  ASSERT_NE(FindCommand("ZrangeByScore"), nullptr);
  EXPECT_EQ(FindCommand("ZRANGEBYSCORE")->name, "zrangebyscore");
  EXPECT_EQ(FindCommand("MULTI")->kind, CommandKind::kTransaction);
  EXPECT_EQ(FindCommand("Ping")->kind, CommandKind::kConnection);
  EXPECT_EQ(FindCommand("flushall")->kind, CommandKind::kServer);
  EXPECT_EQ(FindCommand("incr")->kind, CommandKind::kWrite);
  for (std::string_view unknown : {""sv, "ge"sv, "gett"sv, "nosuch"sv, "get "sv, "lpushy"sv, "get\0"sv}) {
    EXPECT_EQ(FindCommand(unknown), nullptr) << unknown;
  }
  EXPECT_EQ(FindCommand(std::string(33, 'a')), nullptr);
  EXPECT_EQ(FindCommand(std::string(10000, 'G')), nullptr);
}

TEST(CommandTable, EveryEntryIsFoundByItsNameAndDataCommandsApply) {
  ASSERT_FALSE(AllCommands().empty());
  for (const CommandSpec& spec : AllCommands()) {
    std::string upper(spec.name);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(FindCommand(spec.name), &spec) << spec.name;
    EXPECT_EQ(FindCommand(upper), &spec) << upper;
    EXPECT_NE(spec.arity, 0) << spec.name;
    const bool data = spec.kind == CommandKind::kRead || spec.kind == CommandKind::kWrite;
    // Data commands apply to a view, but EVAL and friends, which a
    // ScriptRunner runs; of the others only PING and ECHO do (queued in MULTI).
    const bool queueable = spec.name == "ping" || spec.name == "echo";
    const bool script = ScriptRunner::IsEval(spec.name);
    EXPECT_EQ(spec.apply != nullptr, (data && !script) || queueable) << spec.name;
    EXPECT_EQ(spec.first_key != 0 || spec.keys_of != nullptr, data) << spec.name;
  }
}

// Exactly the commands that may park a session are blocking (they must
// never run joined with another job: a joined job may not block).
TEST(CommandTable, BlockingCommands) {
  size_t blocking = 0;
  for (const CommandSpec& spec : AllCommands()) {
    if (!IsBlocking(spec)) continue;
    ++blocking;
    EXPECT_EQ(spec.kind, CommandKind::kWrite) << spec.name;
    EXPECT_EQ(spec.name[0], 'b') << spec.name;
  }
  EXPECT_EQ(blocking, 8u);
  for (std::string_view name : {"lpop", "lmpop", "zmpop", "zpopmin", "lmove", "rpoplpush", "bitcount"}) {
    EXPECT_FALSE(IsBlocking(*FindCommand(name))) << name;
  }
}

TEST(CommandTable, CheckArityExactAtLeastAndMsetPairs) {
  auto arity = [](std::vector<std::string_view> args) { return CheckArity(*FindCommand(args[0]), args); };
  for (auto args : Commands{{"GET", "k"}, {"DEL", "a", "b", "c"}, {"SET", "k", "v", "EX", "1"}, {"PING"},
                            {"MSET", "k", "v"}, {"MSET", "k", "v", "k2", "v2"}}) {
    EXPECT_EQ(arity(args), "") << args[0] << " " << args.size();
  }
  for (auto args : Commands{{"GET"}, {"get", "k", "x"}, {"DEL"}, {"SET", "k"}, {"HSET", "h", "f"}, {"MSET", "k"},
                            {"MSET", "k", "v", "k2"}, {"mset", "a", "1", "b", "2", "c"}}) {
    EXPECT_EQ(arity(args), StrCat("ERR wrong number of arguments for '", FindCommand(args[0])->name, "' command"))
        << args[0] << " " << args.size();
  }
  EXPECT_EQ(arity({"GET"}), "ERR wrong number of arguments for 'get' command");
}

TEST(CommandTable, SubcommandsAreCheckedCountedAndNamedAsRedis) {
  for (const SubcommandSpec& sub : AllSubcommands()) {  // every container is a command of the table
    const CommandSpec* container = FindCommand(sub.container);
    ASSERT_NE(container, nullptr) << sub.container;
    EXPECT_TRUE(IsContainer(*container));
    EXPECT_EQ(FindSubcommand(*container, sub.name), &sub);
  }
  const CommandSpec& config = *FindCommand("config");
  EXPECT_FALSE(IsContainer(*FindCommand("get")));
  EXPECT_EQ(FindSubcommand(config, "GeT")->name, "get");
  EXPECT_EQ(FindSubcommand(config, "nosuch"), nullptr);
  using V = std::vector<std::string_view>;
  EXPECT_EQ(CheckArity(config, V{"config"}), "ERR wrong number of arguments for 'config' command");
  EXPECT_EQ(CheckArity(config, V{"config", "get"}), "ERR wrong number of arguments for 'config|get' command");
  EXPECT_EQ(CheckArity(config, V{"config", "get", "a", "b"}), "");
  EXPECT_EQ(CheckArity(config, V{"config", "nosuch"}), "");  // the command answers it
  EXPECT_EQ(SubcommandError(config, "nosuch"), "ERR unknown subcommand 'nosuch'. Try CONFIG HELP.");
  EXPECT_EQ(SubcommandError(config, "Rewrite"), "ERR rampart: CONFIG REWRITE is not supported");
  EXPECT_EQ(SubcommandError(*FindCommand("client"), "kill"),  // served, but not with those arguments
            "ERR unknown subcommand or wrong number of arguments for 'kill'. Try CLIENT HELP.");
  EXPECT_EQ(SubcommandError(config, std::string(300, 'x')).size(),
            std::string("ERR unknown subcommand ''. Try CONFIG HELP.").size() + 128);
  // Where commandstats counts: the command, a known subcommand's own line,
  // the container alone, nowhere for an unknown subcommand.
  const int get = CommandStatsIndex(FindCommand("get"), 2, "k");
  ASSERT_GE(get, 0);
  EXPECT_EQ(CommandStatsName(static_cast<size_t>(get)), "get");
  const int config_get = CommandStatsIndex(&config, 3, "GET");
  ASSERT_GE(config_get, 0);
  EXPECT_EQ(CommandStatsName(static_cast<size_t>(config_get)), "config|get");
  EXPECT_LT(static_cast<size_t>(config_get), CommandStatsSlots());
  EXPECT_EQ(CommandStatsName(static_cast<size_t>(CommandStatsIndex(&config, 1, {}))), "config");
  EXPECT_EQ(CommandStatsIndex(&config, 2, "nosuch"), -1);
  EXPECT_EQ(CommandStatsIndex(nullptr, 1, {}), -1);
}

TEST(CommandTable, KeysOfFollowsFirstLastAndStep) {
  using Keys = std::vector<std::string_view>;
  auto keys = [](std::vector<std::string_view> args) { return KeysOf(*FindCommand(args[0]), args); };
  EXPECT_EQ(keys({"MSET", "k1", "v1", "k2", "v2", "k3", "v3"}), (Keys{"k1", "k2", "k3"}));
  EXPECT_EQ(keys({"DEL", "a", "b", "a"}), (Keys{"a", "b", "a"}));
  EXPECT_EQ(keys({"MGET", "a", "b", "c"}), (Keys{"a", "b", "c"}));
  EXPECT_EQ(keys({"EXISTS", "x"}), (Keys{"x"}));
  EXPECT_EQ(keys({"ZRANGEBYSCORE", "z", "0", "10", "LIMIT", "0", "5"}), (Keys{"z"}));
  EXPECT_EQ(keys({"SET", "k", "v", "EX", "10"}), (Keys{"k"}));
  EXPECT_EQ(keys({"HSET", "h", "f", "v"}), (Keys{"h"}));
  EXPECT_EQ(keys({"ZADD", "z", "1", "m"}), (Keys{"z"}));
  EXPECT_EQ(keys({"PING"}), Keys{});
  EXPECT_EQ(keys({"ECHO", "notakey"}), Keys{});
  // The views point into args.
  std::vector<std::string_view> args = {"GET", "key"};
  EXPECT_EQ(KeysOf(*FindCommand("get"), args)[0].data(), args[1].data());
}

TEST(CommandTable, NeedsReadOnlyWhenTheWriteDependsOnTheOldValue) {
  auto needs = [](std::vector<std::string_view> args) { return NeedsRead(*FindCommand(args[0]), args); };
  EXPECT_FALSE(needs({"SET", "k", "v"}));
  EXPECT_FALSE(needs({"SET", "k", "v", "EX", "10"}));
  EXPECT_FALSE(needs({"SET", "k", "v", "px", "10"}));
  EXPECT_FALSE(needs({"SET", "k", "v", "EXAT", "10"}));
  for (std::string_view option : {"NX", "xx", "Get", "KEEPTTL", "keepttl"}) {
    EXPECT_TRUE(needs({"SET", "k", "v", option})) << option;
    EXPECT_TRUE(needs({"SET", "k", "v", "EX", "10", option})) << option;
  }
  EXPECT_FALSE(needs({"MSET", "a", "1"}));
  EXPECT_FALSE(needs({"MSET", "a", "1", "b", "2"}));
  for (auto* name : {"INCR", "DECR", "DEL", "GETSET", "EXPIRE", "PERSIST", "HSET", "HDEL", "ZADD", "ZREM"}) {
    EXPECT_TRUE(needs({name, "k", "1", "2"})) << name;
  }
}

// ---- DataView --------------------------------------------------------------

TEST(DataView, AbsentExpiredAndLiveValues) {
  DataView view(kNow);
  view.Seed("absent", std::nullopt);
  view.Seed("live", Str("v"));
  view.Seed("later", Str("v", kNow + 1));
  view.Seed("now", Str("v", kNow));
  view.Seed("before", Str("v", kNow - 1));
  for (const char* key : {"absent", "now", "before", "never-seeded"}) {
    auto v = view.Find(key);
    ASSERT_TRUE(v.ok()) << key;
    EXPECT_FALSE(v->has_value()) << key;
  }
  for (const char* key : {"live", "later"}) {
    auto v = view.Find(key);
    ASSERT_TRUE(v.ok() && v->has_value()) << key;
    EXPECT_EQ((*v)->payload, "v");
  }
  EXPECT_EQ(view.now_ms(), kNow);
  EXPECT_TRUE(WritesOf(view).empty());
}

TEST(DataView, FindTypedAndForeignBytes) {
  DataView view(kNow);
  view.Seed("h", Hash({{"f", "v"}}));
  view.Seed("raw", kForeign);
  view.Seed("unknown-type", "x12345678payload");
  auto typed = view.FindTyped("h", ValueType::kString);
  EXPECT_EQ(typed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(typed.status().message(), kWrongType);
  EXPECT_TRUE(view.FindTyped("h", ValueType::kHash).ok());
  auto raw = view.Find("raw");
  EXPECT_EQ(raw.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(raw.status().message(),
            "ERR key \"raw\" holds a value not written through the proxy (stored value: 5 bytes, shorter "
            "than the 9-byte header)");
  EXPECT_EQ(view.Find("unknown-type").status().code(), StatusCode::kCorruption);
}

TEST(DataView, PutAndDeleteAreDirtyAndReadBack) {
  DataView view(kNow);
  view.Seed("a", Str("old"));
  view.Seed("b", Str("x"));
  view.Put("a", Str("new"));
  view.Delete("b");
  view.Put("c", Str("c"));
  EXPECT_EQ(WritesOf(view), (Writes{{"a", "string new"}, {"b", "deleted"}, {"c", "string c"}}));
  EXPECT_EQ((*view.Find("a"))->payload, "new");
  EXPECT_FALSE(view.Find("b")->has_value());
}

TEST(DataView, RawTakesGuessesBeforeCallingAKeyMissing) {
  DataView view(kNow);
  const std::string cached = "page bytes";
  int asked = 0;
  view.set_guesses([&](std::string_view key) -> const std::string* {
    ++asked;
    return key == "cached" ? &cached : nullptr;
  });
  auto hit = view.Raw("cached");
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(**hit, "page bytes");
  EXPECT_EQ(view.Raw("cached").value(), std::optional<std::string_view>("page bytes"));
  EXPECT_EQ(view.Raw("other").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(view.guessed(), std::vector<std::string>{"cached"});  // once, though asked twice
  EXPECT_EQ(view.missing(), std::vector<std::string>{"other"});
  EXPECT_EQ(asked, 2);  // the second Raw("cached") found the seeded copy
  EXPECT_TRUE(WritesOf(view).empty());  // a guess is not a write
}

TEST(DataView, WithoutGuessesAnUnseededKeyIsMissing) {
  DataView view(kNow);
  EXPECT_EQ(view.Raw("k").status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(view.guessed().empty());
  EXPECT_EQ(view.missing(), std::vector<std::string>{"k"});
}

// ---- Strings ---------------------------------------------------------------

TEST(CommandStrings, GetValueNilAndExpired) {
  const Store store = {{"k", Str("v\r\n\0x"s)}, {"old", Str("v", kNow)}, {"h", Hash({{"f", "v"}})}};
  ExpectCases(store, {{{"GET", "k"}, "$5\r\nv\r\n\0x\r\n"s},
                      {{"get", "missing"}, kNil},
                      {{"GET", "old"}, kNil},
                      {{"GET", "h"}, kWrongTypeReply}});
  ExpectCases(store, {{{"GET", "missing"}, kNull3}}, 3);
}

TEST(CommandStrings, SetPlainReplacesAnyValueAndItsExpiry) {
  const Store store = {{"s", Str("old", kNow + 5000)}, {"h", Hash({{"f", "v"}})}};
  ExpectCases(store, {{{"SET", "s", "new"}, kOk, {{"s", "string new"}}},
                      {{"SET", "h", "new"}, kOk, {{"h", "string new"}}},
                      {{"set", "absent", "new"}, kOk, {{"absent", "string new"}}},
                      {{"SET", "e", ""}, kOk, {{"e", "string "}}}});
}

TEST(CommandStrings, SetExpiryOptions) {
  ExpectCases({}, {{{"SET", "k", "v", "EX", "10"}, kOk, {{"k", "string v expire=now+10000"}}},
                   {{"SET", "k", "v", "ex", "1"}, kOk, {{"k", "string v expire=now+1000"}}},
                   {{"SET", "k", "v", "PX", "1500"}, kOk, {{"k", "string v expire=now+1500"}}},
                   {{"SET", "k", "v", "pX", "1"}, kOk, {{"k", "string v expire=now+1"}}},
                   {{"SET", "k", "v", "EXAT", "1700000100"}, kOk, {{"k", "string v expire=now+100000"}}},
                   {{"SET", "k", "v", "PXAT", "1700000000123"}, kOk, {{"k", "string v expire=now+123"}}},
                   {{"SET", "k", "v", "pxat", "1700000000000"}, kOk, {{"k", "string v expire=now+0"}}}});
  // A value written already expired reads absent in the same view.
  Ran r = Exec({}, {"SET", "k", "v", "PXAT", "1699999999000"});
  EXPECT_EQ(Apply(r.view, {"GET", "k"}), kNil);
  EXPECT_EQ(Apply(r.view, {"EXISTS", "k"}), Int(0));
}

TEST(CommandStrings, SetKeepTtl) {
  const Store store = {{"k", Str("old", kNow + 7000)}, {"old", Str("x", kNow)}};
  ExpectCases(store, {{{"SET", "k", "new", "KEEPTTL"}, kOk, {{"k", "string new expire=now+7000"}}},
                      {{"SET", "absent", "v", "keepttl"}, kOk, {{"absent", "string v"}}},
                      {{"SET", "old", "v", "KEEPTTL"}, kOk, {{"old", "string v"}}},
                      {{"SET", "k", "new", "KEEPTTL", "GET"}, Bulk("old"), {{"k", "string new expire=now+7000"}}}});
}

TEST(CommandStrings, SetNxXx) {
  const Store store = {{"k", Str("old")}, {"h", Hash({{"f", "v"}})}, {"old", Str("x", kNow)}};
  ExpectCases(store, {{{"SET", "k", "new", "NX"}, kNil},
                      {{"SET", "h", "new", "NX"}, kNil},  // exists, whatever its type
                      {{"SET", "absent", "v", "NX", "EX", "5"}, kOk, {{"absent", "string v expire=now+5000"}}},
                      {{"SET", "old", "v", "NX"}, kOk, {{"old", "string v"}}},
                      {{"SET", "absent", "v", "XX"}, kNil},
                      {{"SET", "old", "v", "XX"}, kNil},
                      {{"SET", "k", "new", "xx"}, kOk, {{"k", "string new"}}},
                      {{"SET", "h", "new", "XX"}, kOk, {{"h", "string new"}}}});
  ExpectCases(store, {{{"SET", "k", "new", "nx"}, kNull3}}, 3);
}

TEST(CommandStrings, SetGet) {
  const Store store = {{"k", Str("old", kNow + 1000)}, {"h", Hash({{"f", "v"}})}, {"old", Str("x", kNow)}};
  ExpectCases(store, {{{"SET", "k", "new", "GET"}, Bulk("old"), {{"k", "string new"}}},
                      {{"SET", "absent", "v", "get"}, kNil, {{"absent", "string v"}}},
                      {{"SET", "old", "v", "GET"}, kNil, {{"old", "string v"}}},
                      {{"SET", "h", "v", "GET"}, kWrongTypeReply},
                      // With NX / XX: the old value whether or not it writes.
                      {{"SET", "k", "new", "NX", "GET"}, Bulk("old")},
                      {{"SET", "absent", "v", "GET", "XX"}, kNil},
                      {{"SET", "k", "new", "XX", "GET", "PX", "10"}, Bulk("old"), {{"k", "string new expire=now+10"}}}});
  ExpectCases(store, {{{"SET", "absent", "v", "GET"}, kNull3, {{"absent", "string v"}}}}, 3);
}

TEST(CommandStrings, SetOptionErrors) {
  const Store store = {{"k", Str("old")}};
  const std::vector<std::vector<std::string_view>> syntax = {
      {"NX", "XX"}, {"xx", "nx"}, {"EX", "10", "PX", "10"}, {"KEEPTTL", "EX", "10"},
      {"EX", "10", "KEEPTTL"}, {"EX"}, {"PXAT"}, {"FOO"}, {"NX", "bar"}, {"EXX", "1"}, {"10"},
  };
  std::vector<Case> cases;
  for (const auto& options : syntax) {
    cases.push_back({{"SET", "k", "v"}, kSyntax});
    cases.back().args.insert(cases.back().args.end(), options.begin(), options.end());
  }
  const std::string invalid = Err("ERR invalid expire time in 'set' command");
  for (auto [option, amount] : std::vector<std::pair<std::string_view, std::string_view>>{
           {"EX", "0"}, {"EX", "-5"}, {"PX", "0"}, {"px", "-1"}, {"EXAT", "0"}, {"PXAT", "-1"},
           {"EX", "9223372036854776"}, {"EXAT", "9223372036854776"}}) {  // * 1000 overflows int64
    cases.push_back({{"SET", "k", "v", option, amount}, invalid});
  }
  for (std::string_view amount : {"abc", "1.5", "", " 1", "99999999999999999999"}) {
    cases.push_back({{"SET", "k", "v", "EX", amount}, kNotInteger});
  }
  // Absolute: no clock is added, so the largest whole seconds fit.
  cases.push_back({{"SET", "k", "v", "EXAT", "9223372036854775"}, kOk, {{"k", "string v expire=now+9223370336854775000"}}});
  ExpectCases(store, cases);
}

TEST(CommandStrings, SetRelativeExpiryBeyondInt64IsInvalidLikeRedis) {
  // Redis adds the clock to PX / EX and refuses a sum past LLONG_MAX
  // (getExpireMillisecondsOrReply); the stored expiry would not fit TTL's math.
  const std::string invalid = Err("ERR invalid expire time in 'set' command");
  ExpectCases({}, {{{"SET", "k", "v", "PX", "9223372036854775807"}, invalid},
                   {{"SET", "k", "v", "EX", "9223372036854775"}, invalid},  // * 1000 fits, + now not
                   {{"SET", "k", "v", "PX", "9223370000000000000"}, kOk,    // fits with the clock
                    {{"k", "string v expire=now+9223370000000000000"}}}});
}

TEST(CommandStrings, MGetAndMSet) {
  const Store store = {{"a", Str("1")}, {"h", Hash({{"f", "v"}})}, {"old", Str("x", kNow)}, {"raw", kForeign},
                       {"b", Str("")},  {"t", Str("old", kNow + 100)}};
  ExpectCases(store, {{{"MGET", "a", "missing", "h", "old", "raw", "b", "a"},
                       Arr(7) + Bulk("1") + kNil + kNil + kNil + kNil + Bulk("") + Bulk("1")},
                      {{"MSET", "t", "1", "h", "2", "c", "3", "t", "4"},
                       kOk,
                       {{"t", "string 4"}, {"h", "string 2"}, {"c", "string 3"}}}});
  ExpectCases(store, {{{"MGET", "missing", "a"}, Arr(2) + kNull3 + Bulk("1")}}, 3);
}

TEST(CommandStrings, DelAndExistsCountKeysOnce) {
  const Store store = {{"a", Str("1")}, {"h", Hash({{"f", "v"}})}, {"old", Str("x", kNow)}};
  ExpectCases(store, {{{"DEL", "a", "a", "h", "missing", "old"}, Int(2), {{"a", "deleted"}, {"h", "deleted"}}},
                      {{"DEL", "missing"}, Int(0)},
                      {{"EXISTS", "a", "a", "h", "missing", "old"}, Int(3)},
                      {{"exists", "missing"}, Int(0)}});
}

TEST(CommandStrings, IncrDecrFamily) {
  const Store store = {{"n", Str("10")}, {"neg", Str("-3")}, {"ttl", Str("7", kNow + 9000)}, {"old", Str("5", kNow)}};
  ExpectCases(store, {
      {{"INCR", "n"}, Int(11), {{"n", "string 11"}}},
      {{"incr", "absent"}, Int(1), {{"absent", "string 1"}}},
      {{"DECR", "absent"}, Int(-1), {{"absent", "string -1"}}},
      {{"Decr", "neg"}, Int(-4), {{"neg", "string -4"}}},
      {{"INCRBY", "n", "5"}, Int(15), {{"n", "string 15"}}},
      {{"INCRBY", "n", "-15"}, Int(-5), {{"n", "string -5"}}},
      {{"DECRBY", "n", "3"}, Int(7), {{"n", "string 7"}}},
      {{"decrby", "n", "-5"}, Int(15), {{"n", "string 15"}}},
      {{"INCR", "ttl"}, Int(8), {{"ttl", "string 8 expire=now+9000"}}},  // keeps the TTL
      {{"INCR", "old"}, Int(1), {{"old", "string 1"}}},                  // expired: from 0, no TTL
      {{"INCRBY", "absent", "-9223372036854775808"}, Int(kMin), {{"absent", "string -9223372036854775808"}}},
      {{"DECRBY", "absent", "9223372036854775807"}, Int(-kMax), {{"absent", "string -9223372036854775807"}}},
  });
}

TEST(CommandStrings, IncrErrorsWriteNothing) {
  const Store store = {{"max", Str(std::to_string(kMax))}, {"min", Str(std::to_string(kMin))},
                       {"text", Str("abc")}, {"space", Str(" 1")}, {"float", Str("1.5")}, {"empty", Str("")},
                       {"zero", Str("0")}, {"h", Hash({{"f", "1"}})}};
  const std::string overflow = Err("ERR increment or decrement would overflow");
  ExpectCases(store, {
      {{"INCR", "max"}, overflow},
      {{"INCRBY", "max", "1"}, overflow},
      {{"DECR", "min"}, overflow},
      {{"INCRBY", "min", "-1"}, overflow},
      {{"DECRBY", "min", "1"}, overflow},
      {{"DECRBY", "zero", "-9223372036854775808"}, Err("ERR decrement would overflow")},
      {{"INCR", "text"}, kNotInteger},
      {{"INCR", "space"}, kNotInteger},
      {{"INCR", "float"}, kNotInteger},
      {{"INCR", "empty"}, kNotInteger},
      {{"INCRBY", "zero", "abc"}, kNotInteger},
      {{"INCRBY", "zero", "1.0"}, kNotInteger},
      {{"INCRBY", "zero", "9223372036854775808"}, kNotInteger},
      {{"INCR", "h"}, kWrongTypeReply},
      {{"DECRBY", "h", "1"}, kWrongTypeReply},
  });
}

TEST(CommandStrings, GetSetAndStrLen) {
  const Store store = {{"k", Str("old", kNow + 500)}, {"h", Hash({{"f", "v"}})}};
  ExpectCases(store, {{{"GETSET", "k", "new"}, Bulk("old"), {{"k", "string new"}}},  // the TTL goes
                      {{"getset", "absent", "v"}, kNil, {{"absent", "string v"}}},
                      {{"GETSET", "h", "v"}, kWrongTypeReply},
                      {{"STRLEN", "k"}, Int(3)},
                      {{"STRLEN", "absent"}, Int(0)},
                      {{"STRLEN", "h"}, kWrongTypeReply}});
  ExpectCases(store, {{{"GETSET", "absent", "v"}, kNull3, {{"absent", "string v"}}}}, 3);
}

// ---- Expiry ----------------------------------------------------------------

TEST(CommandTtl, TtlAndPttl) {
  const Store store = {{"forever", Str("v")},          {"gone", Str("v", kNow)},
                       {"s10", Str("v", kNow + 10000)}, {"ms1499", Str("v", kNow + 1499)},
                       {"ms1500", Str("v", kNow + 1500)}, {"ms1", Str("v", kNow + 1)},
                       {"h", Hash({{"f", "v"}}, kNow + 3000)}};
  const std::vector<std::tuple<std::string_view, int64_t, int64_t>> expected = {
      {"absent", -2, -2}, {"gone", -2, -2},   {"forever", -1, -1}, {"s10", 10, 10000},
      {"ms1499", 1, 1499}, {"ms1500", 2, 1500}, {"ms1", 0, 1},       {"h", 3, 3000},
  };
  std::vector<Case> cases;
  for (const auto& [key, ttl, pttl] : expected) {
    cases.push_back({{"TTL", key}, Int(ttl)});
    cases.push_back({{"pttl", key}, Int(pttl)});
  }
  ExpectCases(store, cases);
}

TEST(CommandTtl, ExpirePexpirePersist) {
  const Store store = {{"s", Str("v")}, {"h", Hash({{"f", "v"}}, kNow + 5)}, {"gone", Str("v", kNow)},
                       {"z", Zset({{"m", 1}})}};
  ExpectCases(store, {
      {{"EXPIRE", "s", "10"}, Int(1), {{"s", "string v expire=now+10000"}}},
      {{"PEXPIRE", "h", "1500"}, Int(1), {{"h", "hash {f=v} expire=now+1500"}}},
      {{"expire", "z", "1"}, Int(1), {{"z", "zset {m:1} expire=now+1000"}}},
      {{"EXPIRE", "absent", "10"}, Int(0)},
      {{"EXPIRE", "gone", "10"}, Int(0)},
      {{"EXPIRE", "s", "0"}, Int(1), {{"s", "deleted"}}},  // a non-positive TTL deletes
      {{"PEXPIRE", "s", "-1"}, Int(1), {{"s", "deleted"}}},
      {{"EXPIRE", "s", "soon"}, kNotInteger},
      {{"PERSIST", "h"}, Int(1), {{"h", "hash {f=v}"}}},
      {{"PERSIST", "s"}, Int(0)},
      {{"PERSIST", "absent"}, Int(0)},
      {{"persist", "gone"}, Int(0)},
  });
}

TEST(CommandTtl, ExpireBeyondInt64IsInvalidLikeRedis) {
  // Redis (expireGenericCommand) refuses a TTL whose unit conversion or
  // addition to the clock overflows, and keeps the key.
  ExpectCases({{"s", Str("v")}},
              {{{"EXPIRE", "s", "9223372036854775807"}, Err("ERR invalid expire time in 'expire' command")},
               {{"EXPIRE", "s", "-9223372036854775808"}, Err("ERR invalid expire time in 'expire' command")},
               {{"PEXPIRE", "s", "9223372036854775807"}, Err("ERR invalid expire time in 'pexpire' command")}});
}

TEST(CommandTtl, TtlOfAFarExpiryDoesNotOverflow) {
  // What SET k v PX 9223372036854775807 and PEXPIRE k 9223372036854775807
  // store today; TTL's rounding (ms + 500) must not overflow on it.
  const Store store = {{"far", Str("v", kNow + static_cast<uint64_t>(kMax))}};
  ExpectCases(store, {{{"PTTL", "far"}, Int(kMax)},
                      {{"TTL", "far"}, Int(kMax / 1000 + 1)}});  // 9223372036854775.807 s, rounded
}

TEST(CommandTtl, TypeOfEachKind) {
  const Store store = {{"s", Str("v")}, {"h", Hash({{"f", "v"}})}, {"z", Zset({{"m", 1}})},
                       {"gone", Str("v", kNow)}};
  ExpectCases(store, {{{"TYPE", "s"}, "+string\r\n"},
                      {{"TYPE", "h"}, "+hash\r\n"},
                      {{"type", "z"}, "+zset\r\n"},
                      {{"TYPE", "gone"}, "+none\r\n"},
                      {{"TYPE", "absent"}, "+none\r\n"}});
}

// ---- Hashes ----------------------------------------------------------------

TEST(CommandHash, HsetCountsNewFieldsAndHmsetRepliesOk) {
  const Store store = {{"h", Hash({{"a", "1"}}, kNow + 4000)}, {"gone", Hash({{"x", "1"}}, kNow)}};
  ExpectCases(store, {
      {{"HSET", "new", "a", "1", "b", "2"}, Int(2), {{"new", "hash {a=1 b=2}"}}},
      {{"HSET", "h", "a", "9", "c", "3"}, Int(1), {{"h", "hash {a=9 c=3} expire=now+4000"}}},  // keeps the TTL
      {{"hset", "h", "c", "1", "c", "2"}, Int(1), {{"h", "hash {a=1 c=2} expire=now+4000"}}},
      {{"HSET", "gone", "y", "2"}, Int(1), {{"gone", "hash {y=2}"}}},
      {{"HMSET", "h", "a", "1", "b", "2"}, kOk, {{"h", "hash {a=1 b=2} expire=now+4000"}}},
      {{"HSET", "h", "a", "1", "b"}, Err("ERR wrong number of arguments for 'hset' command")},
      {{"hmset", "h", "a", "1", "b"}, Err("ERR wrong number of arguments for 'hmset' command")},
  });
}

TEST(CommandHash, Reads) {
  const Store store = {{"h", Hash({{"b", "2"}, {"a", "1"}, {"e", ""}})}, {"gone", Hash({{"a", "1"}}, kNow)}};
  const std::string fields = Bulk("a") + Bulk("1") + Bulk("b") + Bulk("2") + Bulk("e") + Bulk("");
  ExpectCases(store, {
      {{"HGET", "h", "a"}, Bulk("1")},
      {{"HGET", "h", "e"}, Bulk("")},
      {{"HGET", "h", "zz"}, kNil},
      {{"HGET", "gone", "a"}, kNil},
      {{"HMGET", "h", "b", "zz", "a"}, Arr(3) + Bulk("2") + kNil + Bulk("1")},
      {{"HMGET", "absent", "a", "b"}, Arr(2) + kNil + kNil},
      {{"HGETALL", "h"}, Arr(6) + fields},
      {{"HGETALL", "absent"}, Arr(0)},
      {{"HLEN", "h"}, Int(3)},
      {{"HLEN", "absent"}, Int(0)},
      {{"HEXISTS", "h", "e"}, Int(1)},
      {{"HEXISTS", "h", "zz"}, Int(0)},
      {{"HEXISTS", "absent", "a"}, Int(0)},
  });
  ExpectCases(store, {{{"HGET", "absent", "a"}, kNull3},
                      {{"HMGET", "h", "zz", "a"}, Arr(2) + kNull3 + Bulk("1")},
                      {{"HGETALL", "h"}, "%3\r\n" + fields},
                      {{"hgetall", "gone"}, "%0\r\n"}},
              3);
}

TEST(CommandHash, HdelRemovingTheLastFieldDeletesTheKey) {
  ExpectCases({{"h", Hash({{"a", "1"}, {"b", "2"}}, kNow + 100)}},
              {{{"HDEL", "h", "a", "a", "zz"}, Int(1), {{"h", "hash {b=2} expire=now+100"}}},
               {{"HDEL", "h", "b", "a"}, Int(2), {{"h", "deleted"}}},
               {{"HDEL", "h", "zz"}, Int(0)},
               {{"hdel", "absent", "a"}, Int(0)}});
}

// ---- Sorted sets -----------------------------------------------------------

TEST(CommandZset, ZaddAddsUpdatesAndCounts) {
  const std::string ttl = " expire=now+60000";
  ExpectCases({{"z", Zset({{"a", 1}, {"b", 2}}, kNow + 60000)}}, {
      {{"ZADD", "new", "1", "a", "2.5", "b"}, Int(2), {{"new", "zset {a:1 b:2.5}"}}},
      {{"ZADD", "z", "5", "a", "3", "c"}, Int(1), {{"z", "zset {b:2 c:3 a:5}" + ttl}}},
      {{"ZADD", "z", "CH", "5", "a", "3", "c", "2", "b"}, Int(2), {{"z", "zset {b:2 c:3 a:5}" + ttl}}},
      {{"ZADD", "z", "1", "a", "2", "b"}, Int(0)},  // unchanged: no write
      {{"ZADD", "z", "ch", "1", "a"}, Int(0)},
      {{"ZADD", "z", "NX", "9", "a", "3", "c"}, Int(1), {{"z", "zset {a:1 b:2 c:3}" + ttl}}},
      {{"ZADD", "z", "XX", "9", "a", "3", "c"}, Int(0), {{"z", "zset {b:2 a:9}" + ttl}}},
      {{"ZADD", "z", "xx", "ch", "9", "a", "3", "c"}, Int(1), {{"z", "zset {b:2 a:9}" + ttl}}},
      {{"ZADD", "absent", "XX", "1", "a"}, Int(0)},
      {{"ZADD", "z", "1", "d", "4", "d"}, Int(1), {{"z", "zset {a:1 b:2 d:4}" + ttl}}},
      {{"ZADD", "z", "-inf", "lo", "+inf", "hi"}, Int(2), {{"z", "zset {lo:-inf a:1 b:2 hi:inf}" + ttl}}},
  });
}

TEST(CommandZset, ZaddErrorsWriteNothing) {
  ExpectCases({{"z", Zset({{"a", 1}})}, {"s", Str("v")}}, {
      {{"ZADD", "z", "NX", "XX", "1", "a"}, Err("ERR XX and NX options at the same time are not compatible")},
      {{"ZADD", "z", "1", "a", "2"}, kSyntax},
      {{"ZADD", "z", "NX", "1"}, kSyntax},
      {{"ZADD", "z", "NX", "CH"}, kSyntax},
      {{"ZADD", "z", "abc", "a"}, kNotFloat},
      {{"ZADD", "z", "nan", "a"}, kNotFloat},
      {{"ZADD", "z", "1", "a", "1.5x", "b"}, kNotFloat},  // nothing of the valid pair either
      {{"ZADD", "z", "", "a"}, kNotFloat},
      {{"ZADD", "s", "1", "a"}, kWrongTypeReply},
  });
}

TEST(CommandZset, ZremRemovingTheLastMemberDeletesTheKey) {
  ExpectCases({{"z", Zset({{"a", 1}, {"b", 2}}, kNow + 10)}},
              {{{"ZREM", "z", "a", "a", "zz"}, Int(1), {{"z", "zset {b:2} expire=now+10"}}},
               {{"ZREM", "z", "b", "a"}, Int(2), {{"z", "deleted"}}},
               {{"ZREM", "z", "zz"}, Int(0)},
               {{"zrem", "absent", "a"}, Int(0)}});
}

TEST(CommandZset, ZscoreAndZcard) {
  const Store store = {{"z", Zset({{"a", 2.5}, {"b", 3}, {"c", -1e300}})}};
  ExpectCases(store, {{{"ZSCORE", "z", "a"}, Bulk("2.5")},
                      {{"ZSCORE", "z", "b"}, Bulk("3")},
                      {{"ZSCORE", "z", "c"}, Bulk("-1.0000000000000001e+300")},
                      {{"ZSCORE", "z", "zz"}, kNil},
                      {{"ZCARD", "z"}, Int(3)},
                      {{"zcard", "absent"}, Int(0)}});
  ExpectCases(store, {{{"ZSCORE", "z", "a"}, ",2.5\r\n"},
                      {{"ZSCORE", "z", "b"}, ",3\r\n"},
                      {{"ZSCORE", "absent", "a"}, kNull3}},
              3);
}

std::string Members(const std::vector<std::string>& names) {
  std::string reply = Arr(names.size());
  for (const auto& n : names) reply += Bulk(n);
  return reply;
}

TEST(CommandZset, ZrangeByScoreBoundsLimitAndScores) {
  const Store store = {{"z", Zset({{"a", 1}, {"b", 2}, {"c", 2}, {"d", 3.5}, {"e", 5}})}};
  ExpectCases(store, {
      {{"ZRANGEBYSCORE", "z", "2", "3.5"}, Members({"b", "c", "d"})},
      {{"ZRANGEBYSCORE", "z", "(2", "3.5"}, Members({"d"})},
      {{"ZRANGEBYSCORE", "z", "2", "(3.5"}, Members({"b", "c"})},
      {{"ZRANGEBYSCORE", "z", "(1", "(5"}, Members({"b", "c", "d"})},
      {{"ZRANGEBYSCORE", "z", "-inf", "+inf"}, Members({"a", "b", "c", "d", "e"})},
      {{"ZRANGEBYSCORE", "z", "(2", "(2"}, Members({})},
      {{"ZRANGEBYSCORE", "z", "4", "2"}, Members({})},
      {{"ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "1", "2"}, Members({"b", "c"})},
      {{"ZRANGEBYSCORE", "z", "-inf", "inf", "limit", "3", "-1"}, Members({"d", "e"})},
      {{"ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "0", "0"}, Members({})},
      {{"ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "-1", "2"}, Members({})},
      {{"ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "9", "2"}, Members({})},
      {{"ZRANGEBYSCORE", "absent", "-inf", "inf"}, Members({})},
      // WITHSCORES in RESP2: member, score, flat.
      {{"ZRANGEBYSCORE", "z", "(1", "3.5", "WITHSCORES"},
       Arr(6) + Bulk("b") + Bulk("2") + Bulk("c") + Bulk("2") + Bulk("d") + Bulk("3.5")},
      {{"ZRANGEBYSCORE", "z", "5", "5", "LIMIT", "0", "1", "WITHSCORES"}, Arr(2) + Bulk("e") + Bulk("5")},
  });
  // RESP3: [member, double] pairs; without scores as in RESP2.
  ExpectCases(store, {
      {{"ZRANGEBYSCORE", "z", "(1", "3.5", "withscores", "LIMIT", "1", "5"},
       Arr(2) + Arr(2) + Bulk("c") + ",2\r\n" + Arr(2) + Bulk("d") + ",3.5\r\n"},
      {{"ZRANGEBYSCORE", "z", "1", "1"}, Members({"a"})},
      {{"ZRANGEBYSCORE", "absent", "0", "1", "WITHSCORES"}, Arr(0)},
  }, 3);
}

TEST(CommandZset, ZrangeByScoreErrors) {
  const std::string not_float = Err("ERR min or max is not a float");
  ExpectCases({{"z", Zset({{"a", 1}})}, {"s", Str("v")}}, {
      {{"ZRANGEBYSCORE", "z", "x", "1"}, not_float},
      {{"ZRANGEBYSCORE", "z", "0", "(x"}, not_float},
      {{"ZRANGEBYSCORE", "z", "(", "1"}, not_float},
      {{"ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "0"}, kSyntax},
      {{"ZRANGEBYSCORE", "z", "0", "1", "LIMIT"}, kSyntax},
      {{"ZRANGEBYSCORE", "z", "0", "1", "BOGUS"}, kSyntax},
      {{"ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "a", "1"}, kNotInteger},
      {{"ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "0", "1.5"}, kNotInteger},
      {{"ZRANGEBYSCORE", "s", "0", "1"}, kWrongTypeReply},
  });
}

// ---- Types and foreign values ----------------------------------------------

TEST(CommandTypes, EveryTypedCommandRefusesTheWrongType) {
  const Store store = {{"s", Str("v")}, {"h", Hash({{"f", "v"}})}, {"z", Zset({{"m", 1}})}};
  const std::pair<Commands, std::vector<std::string_view>> groups[] = {
      {{{"GET", "$"}, {"SET", "$", "v", "GET"}, {"INCR", "$"}, {"INCRBY", "$", "2"}, {"DECR", "$"},
        {"DECRBY", "$", "2"}, {"GETSET", "$", "v"}, {"STRLEN", "$"}},
       {"h", "z"}},
      {{{"HSET", "$", "f", "v"}, {"HMSET", "$", "f", "v"}, {"HGET", "$", "f"}, {"HMGET", "$", "f"},
        {"HGETALL", "$"}, {"HDEL", "$", "f"}, {"HLEN", "$"}, {"HEXISTS", "$", "f"}},
       {"s", "z"}},
      {{{"ZADD", "$", "1", "m"}, {"ZREM", "$", "m"}, {"ZSCORE", "$", "m"}, {"ZCARD", "$"},
        {"ZRANGEBYSCORE", "$", "0", "1"}},
       {"s", "h"}},
  };
  std::vector<Case> cases;
  for (const auto& [commands, keys] : groups) {
    for (std::string_view key : keys) {
      for (auto args : commands) {
        args[1] = key;
        cases.push_back({args, kWrongTypeReply});
      }
    }
  }
  ExpectCases(store, cases);
  ExpectCases(store, cases, 3);
}

TEST(CommandTypes, ValuesNotWrittenByTheProxyGetAnErrorReply) {
  const Store store = {{"short", kForeign},
                       {"type", "?12345678xyz"},
                       {"h", EncodeStored(ValueType::kHash, 0, "\x05"s)},  // a damaged payload
                       {"z", EncodeStored(ValueType::kZset, 0, "\x01\x00\x00\x00"s)}};
  const Commands commands = {
      {"GET", "$"}, {"SET", "$", "v", "NX"}, {"SET", "$", "v", "XX"}, {"SET", "$", "v", "GET"},
      {"SET", "$", "v", "KEEPTTL"}, {"INCR", "$"}, {"DECRBY", "$", "2"}, {"GETSET", "$", "v"},
      {"STRLEN", "$"}, {"TTL", "$"}, {"PTTL", "$"}, {"EXPIRE", "$", "10"}, {"PEXPIRE", "$", "10"},
      {"PERSIST", "$"}, {"TYPE", "$"}, {"HSET", "$", "f", "v"}, {"HMSET", "$", "f", "v"},
      {"HGET", "$", "f"}, {"HMGET", "$", "f"}, {"HGETALL", "$"}, {"HDEL", "$", "f"}, {"HLEN", "$"},
      {"HEXISTS", "$", "f"}, {"ZADD", "$", "1", "m"}, {"ZREM", "$", "m"}, {"ZSCORE", "$", "m"},
      {"ZCARD", "$"}, {"ZRANGEBYSCORE", "$", "0", "1"},
  };
  // An undecodable value: every command that decodes it says so; a readable
  // header over a damaged payload: the hash and sorted-set commands say so.
  for (std::string_view key : {"short", "type", "h", "z"}) {
    for (auto args : commands) {
      if ((key == "h" && args[0][0] != 'H') || (key == "z" && args[0][0] != 'Z')) continue;
      args[1] = key;
      Ran r = Exec(store, args);
      const std::string prefix = key == "h"   ? "-ERR rampart: hash \"h\" is damaged: "
                                 : key == "z" ? "-ERR rampart: zset \"z\" is damaged: "
                                              : StrCat("-ERR key \"", key, "\" holds a value not written through the proxy (");
      EXPECT_EQ(r.reply.substr(0, prefix.size()), prefix) << args[0] << " on " << key << ": " << r.reply;
      EXPECT_EQ(r.reply.find("\r\n"), r.reply.size() - 2) << args[0] << " on " << key;
      EXPECT_EQ(r.writes(), Writes{}) << args[0] << " on " << key;
    }
  }
  // What needs no decoding still works on them, as Redis would on any type.
  ExpectCases(store, {{{"SET", "short", "v"}, kOk, {{"short", "string v"}}},
                      {{"MSET", "short", "1", "type", "2"}, kOk, {{"short", "string 1"}, {"type", "string 2"}}},
                      {{"DEL", "short", "type", "absent"}, Int(2), {{"short", "deleted"}, {"type", "deleted"}}},
                      {{"EXISTS", "short", "type", "absent"}, Int(2)},
                      {{"MGET", "short", "type"}, Arr(2) + kNil + kNil}});
}

// ---- Several commands on one view (a MULTI block) --------------------------

TEST(CommandSequence, CommandsOnOneViewSeeEachOthersWrites) {
  DataView view(kNow);
  view.Seed("k", std::nullopt);
  view.Seed("h", std::nullopt);
  view.Seed("z", Zset({{"a", 1}}));
  EXPECT_EQ(Apply(view, {"SET", "k", "10", "EX", "100"}), kOk);
  EXPECT_EQ(Apply(view, {"INCR", "k"}), Int(11));
  EXPECT_EQ(Apply(view, {"INCRBY", "k", "5"}), Int(16));
  EXPECT_EQ(Apply(view, {"GET", "k"}), Bulk("16"));
  EXPECT_EQ(Apply(view, {"TTL", "k"}), Int(100));
  EXPECT_EQ(Apply(view, {"SET", "k", "x", "NX"}), kNil);
  EXPECT_EQ(Apply(view, {"HSET", "h", "f", "1"}), Int(1));
  EXPECT_EQ(Apply(view, {"HSET", "h", "f", "2", "g", "3"}), Int(1));
  EXPECT_EQ(Apply(view, {"HDEL", "h", "f"}), Int(1));
  EXPECT_EQ(Apply(view, {"ZADD", "z", "2", "b"}), Int(1));
  EXPECT_EQ(Apply(view, {"ZREM", "z", "a"}), Int(1));
  EXPECT_EQ(Apply(view, {"ZRANGEBYSCORE", "z", "-inf", "inf", "WITHSCORES"}), Arr(2) + Bulk("b") + Bulk("2"));
  EXPECT_EQ(WritesOf(view),
            (Writes{{"k", "string 16 expire=now+100000"}, {"h", "hash {g=3}"}, {"z", "zset {b:2}"}}));

  EXPECT_EQ(Apply(view, {"PERSIST", "k"}), Int(1));
  EXPECT_EQ(Apply(view, {"TTL", "k"}), Int(-1));
  EXPECT_EQ(Apply(view, {"DEL", "k", "h"}), Int(2));
  EXPECT_EQ(Apply(view, {"EXISTS", "k", "h", "z"}), Int(1));
  EXPECT_EQ(Apply(view, {"GET", "k"}), kNil);
  EXPECT_EQ(Apply(view, {"TYPE", "h"}), "+none\r\n");
  EXPECT_EQ(Apply(view, {"ZREM", "z", "b"}), Int(1));
  EXPECT_EQ(Apply(view, {"ZCARD", "z"}), Int(0));
  EXPECT_EQ(WritesOf(view), (Writes{{"k", "deleted"}, {"h", "deleted"}, {"z", "deleted"}}));
  // Writing a deleted key again makes it live.
  EXPECT_EQ(Apply(view, {"GETSET", "k", "back"}), kNil);
  EXPECT_EQ(Apply(view, {"STRLEN", "k"}), Int(4));
  EXPECT_EQ(WritesOf(view).at("k"), "string back");
}

TEST(CommandSequence, OneWriterCarriesAMultiBlockReply) {
  // ApplyCommands replies a MULTI block as one array on one writer.
  DataView view(kNow);
  view.Seed("k", Str("1"));
  std::string reply;
  resp::Writer out(&reply);
  out.SetProtocol(3);
  const std::vector<std::vector<std::string_view>> block = {
      {"INCR", "k"}, {"GET", "k"}, {"GET", "missing"}, {"INCR", "missing"}};
  out.Array(block.size());
  for (const auto& args : block) FindCommand(args[0])->apply(args, view, out);
  EXPECT_EQ(reply, Arr(4) + Int(2) + Bulk("2") + kNull3 + Int(1));
  EXPECT_EQ(WritesOf(view), (Writes{{"k", "string 2"}, {"missing", "string 1"}}));
}

}  // namespace
}  // namespace rampart::proxy
