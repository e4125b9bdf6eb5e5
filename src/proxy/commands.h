// The command table of the proxy: every Redis command it answers, its arity
// and keys (Redis's conventions), what kind of work it is, and — for the data
// commands — how it applies to a DataView.
//
// Kinds:
//   kConnection  answered by the worker from the session alone (PING, AUTH,
//                HELLO, CLIENT, COMMAND, CONFIG, SELECT, QUIT, ECHO, TIME)
//   kTransaction MULTI, EXEC, DISCARD
//   kRead        reads its keys; one read transaction
//   kWrite       writes its keys under the proxy's locks; reads them first
//                (read-modify-write) when NeedsRead says so
//   kServer      whole-store work: DBSIZE, FLUSHDB, FLUSHALL, INFO, KEYS, SCAN, RANDOMKEY
//
// Thread-safety: the table is immutable; Apply functions touch only their
// arguments.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/data_view.h"
#include "proxy/resp.h"

namespace rampart::proxy {

enum class CommandKind { kConnection, kTransaction, kRead, kWrite, kServer };

using Args = std::span<const std::string_view>;  // args[0] is the command name

struct CommandSpec {
  std::string_view name;  // lower case
  int arity;              // > 0: exactly; < 0: at least -arity (name included)
  CommandKind kind;
  // Keys: args[first_key], then every key_step-th up to last_key (< 0: from
  // the end, -1 = the last argument). first_key 0: no keys.
  int first_key = 0;
  int last_key = 0;
  int key_step = 1;
  // kRead, kWrite: the command's effect. Writes its reply to `out`.
  void (*apply)(Args args, DataView& data, resp::Writer& out) = nullptr;
  // kWrite: whether the current values must be read first. nullptr: always.
  bool (*needs_read)(Args args) = nullptr;
  // Commands whose keys follow a count (ZUNIONSTORE dst numkeys k1 k2 ...):
  // the keys, replacing first_key/last_key/key_step. nullptr: those apply.
  std::vector<std::string_view> (*keys_of)(Args args) = nullptr;
};

// A subcommand of a container command (CONFIG GET, CLIENT ID, OBJECT
// ENCODING, …) as Redis 7.0 lists it: its arity (the container's name and
// the subcommand's counted) is checked before the command runs (CheckArity),
// and INFO commandstats counts it on its own line (`cmdstat_config|get`).
struct SubcommandSpec {
  std::string_view container;  // lower case, a CommandSpec's name
  std::string_view name;       // lower case
  int arity;                   // as CommandSpec::arity
  bool served = true;          // false: answered "ERR rampart: … is not supported"
};

// The Redis version the proxy speaks (INFO's redis_version, HELLO's version,
// a script's redis.REDIS_VERSION), and that as 0x00MMmmpp.
inline constexpr std::string_view kRedisVersion = "7.0.0";
inline constexpr int kRedisVersionNum = 0x070000;

// ASCII lower case (command and option names).
std::string Lower(std::string_view s);
// The replies of TIME ([unix seconds, microseconds within the second] as
// bulk strings, the proxy's clock) and SELECT (only DB 0 exists): connection
// commands without a view that a script may call too.
void TimeReply(resp::Writer& out);
void SelectReply(std::string_view db, resp::Writer& out);

// The spec of a command name (any case), or nullptr.
const CommandSpec* FindCommand(std::string_view name);
// Every command, for COMMAND / COMMAND DOCS / COMMAND COUNT.
std::span<const CommandSpec> AllCommands();

// The subcommands of the containers the proxy serves, and the one `name`
// (any case) names of `spec`: nullptr when `spec` is no container or Redis
// 7.0 knows no such subcommand of it.
std::span<const SubcommandSpec> AllSubcommands();
const SubcommandSpec* FindSubcommand(const CommandSpec& spec, std::string_view name);
// Whether `spec` has subcommands (CONFIG, CLIENT, …).
bool IsContainer(const CommandSpec& spec);
// Whether the call `args` of `spec` names a subcommand Redis 7.0 does not
// know: a container called with one (`CONFIG NOSUCH`). Such a call is
// refused before it runs.
bool NamesUnknownSubcommand(const CommandSpec& spec, std::span<const std::string_view> args);

// The error for subcommand `name` of container `spec` when the container's
// command does not run it: Redis 7.0's "ERR unknown subcommand 'x'. Try
// CONFIG HELP." when Redis has no such subcommand; for one the proxy does not
// serve "ERR rampart: CLIENT PAUSE is not supported"; for one it serves but
// with arguments it does not take, Redis's "ERR unknown subcommand or wrong
// number of arguments for 'kill'. Try CLIENT HELP.".
std::string SubcommandError(const CommandSpec& spec, std::string_view name);
// CONFIG HELP and the like: the served subcommands of `spec`, one a line.
// REQUIRES: IsContainer(spec).
void SubcommandHelp(const CommandSpec& spec, resp::Writer& out);

// Where INFO commandstats counts a command of `argc` arguments whose second
// is `second` (when argc >= 2): an index into AllCommands() followed by
// AllSubcommands() — a container's known subcommand on its own line, the
// container when no subcommand is named (CONFIG alone, rejected for its
// arity) — or -1: an unknown subcommand (Redis counts only its error), or
// none of the table's commands (the sweeper's).
int CommandStatsIndex(const CommandSpec* spec, size_t argc, std::string_view second);
// The number of those indexes, and the name INFO gives one ("get", "config|get").
size_t CommandStatsSlots();
std::string CommandStatsName(size_t index);

// "" when args fit the arity, a known subcommand's too, else the Redis error
// "ERR wrong number of arguments for 'get' command" ('config|get' for a
// subcommand).
std::string CheckArity(const CommandSpec& spec, Args args);
// The keys of a command (REQUIRES: arity checked). Views into args.
std::vector<std::string_view> KeysOf(const CommandSpec& spec, Args args);
// Whether a kWrite command reads its keys first.
bool NeedsRead(const CommandSpec& spec, Args args);
// Runs data command `spec` (REQUIRES: it has an apply) on `data` into
// `out`, with the keyspace events Redis's key lookups send (notify.h), when
// `data` records them: first a write command's keys that hold an expired
// value are removed ("expired", as Redis's lookup for a write removes them);
// then, unless the reply is an error, a read command records "keymiss" for
// each key it names that is missing (OBJECT, WATCH and MEMORY USAGE look
// their keys up without it, as in Redis). The worker's jobs and scripts'
// redis.call run commands through it.
void ApplyCommand(const CommandSpec& spec, Args args, DataView& data, resp::Writer& out);
// The blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP): they may park their session (worker_block.cc), so they
// neither lead nor join another job of their keys. What the worker needs to
// know of them: where their timeout is. (At the timeout every one answers a
// null array, BLMOVE and BRPOPLPUSH too, as Redis 7.0's
// replyToBlockedClientTimedOut does; `_` in RESP3.)
struct BlockingRule {
  bool timeout_first = false;  // the first argument (BLMPOP, BZMPOP), else the last
};
// The rule of a blocking command, or nullptr for any other.
const BlockingRule* BlockingOf(const CommandSpec& spec);
inline bool IsBlocking(const CommandSpec& spec) { return BlockingOf(spec) != nullptr; }

}  // namespace rampart::proxy
