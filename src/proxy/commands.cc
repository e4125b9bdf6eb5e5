#include "proxy/commands.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <chrono>
#include <functional>
#include <limits>
#include <vector>

#include "common/status.h"
#include "proxy/commands_internal.h"
#include "proxy/notify.h"

namespace rampart::proxy {
namespace {

using K = CommandKind;
namespace i = internal;

bool NeverRead(Args) { return false; }

// Sorted by name (FindCommand searches it).
constexpr CommandSpec kCommands[] = {
    {"append", 3, K::kWrite, 1, 1, 1, i::Append},
    {"auth", -2, K::kConnection},
    {"bitcount", -2, K::kRead, 1, 1, 1, i::BitCount},
    {"bitfield", -2, K::kWrite, 1, 1, 1, i::BitField},
    {"bitfield_ro", -2, K::kRead, 1, 1, 1, i::BitField},
    {"bitop", -4, K::kWrite, 2, -1, 1, i::BitOp},
    {"bitpos", -3, K::kRead, 1, 1, 1, i::BitPos},
    {"blmove", 6, K::kWrite, 1, 2, 1, i::BLMove},
    {"blmpop", -5, K::kWrite, 0, 0, 1, i::BLMPop, nullptr, i::BlockingMultiPopKeys},
    {"blpop", -3, K::kWrite, 1, -2, 1, i::BLPop},
    {"brpop", -3, K::kWrite, 1, -2, 1, i::BRPop},
    {"brpoplpush", 4, K::kWrite, 1, 2, 1, i::BRPopLPush},
    {"bzmpop", -5, K::kWrite, 0, 0, 1, i::BZMPop, nullptr, i::BlockingMultiPopKeys},
    {"bzpopmax", -3, K::kWrite, 1, -2, 1, i::BZPopMax},
    {"bzpopmin", -3, K::kWrite, 1, -2, 1, i::BZPopMin},
    {"client", -2, K::kConnection},
    {"command", -1, K::kConnection},
    {"config", -2, K::kConnection},
    {"copy", -3, K::kWrite, 1, 2, 1, i::Copy},
    {"dbsize", 1, K::kServer},
    {"decr", 2, K::kWrite, 1, 1, 1, i::IncrBy},
    {"decrby", 3, K::kWrite, 1, 1, 1, i::IncrBy},
    {"del", -2, K::kWrite, 1, -1, 1, i::Del},
    {"discard", 1, K::kTransaction},
    {"dump", 2, K::kRead, 1, 1, 1, i::Dump},
    {"echo", 2, K::kConnection, 0, 0, 0, i::Ping},
    {"eval", -3, K::kWrite, 0, 0, 1, nullptr, nullptr, i::EvalKeys},  // run by ScriptRunner
    {"eval_ro", -3, K::kRead, 0, 0, 1, nullptr, nullptr, i::EvalKeys},
    {"evalsha", -3, K::kWrite, 0, 0, 1, nullptr, nullptr, i::EvalKeys},
    {"evalsha_ro", -3, K::kRead, 0, 0, 1, nullptr, nullptr, i::EvalKeys},
    {"exec", 1, K::kTransaction},
    {"exists", -2, K::kRead, 1, -1, 1, i::Exists},
    {"expire", -3, K::kWrite, 1, 1, 1, i::Expire},
    {"expireat", -3, K::kWrite, 1, 1, 1, i::Expire},
    {"expiretime", 2, K::kRead, 1, 1, 1, i::Ttl},
    {"flushall", -1, K::kServer},
    {"flushdb", -1, K::kServer},
    {"function", -2, K::kConnection},
    {"geoadd", -5, K::kWrite, 1, 1, 1, i::GeoAdd},
    {"geodist", -4, K::kRead, 1, 1, 1, i::GeoDist},
    {"geohash", -2, K::kRead, 1, 1, 1, i::GeoHash},
    {"geopos", -2, K::kRead, 1, 1, 1, i::GeoPos},
    {"georadius", -6, K::kWrite, 0, 0, 1, i::GeoRadius, nullptr, i::GeoRadiusKeys},
    {"georadius_ro", -6, K::kRead, 1, 1, 1, i::GeoRadius},
    {"georadiusbymember", -5, K::kWrite, 0, 0, 1, i::GeoRadiusByMember, nullptr, i::GeoRadiusKeys},
    {"georadiusbymember_ro", -5, K::kRead, 1, 1, 1, i::GeoRadiusByMember},
    {"geosearch", -7, K::kRead, 1, 1, 1, i::GeoSearch},
    {"geosearchstore", -8, K::kWrite, 1, 2, 1, i::GeoSearchStore},
    {"get", 2, K::kRead, 1, 1, 1, i::Get},
    {"getbit", 3, K::kRead, 1, 1, 1, i::GetBit},
    {"getdel", 2, K::kWrite, 1, 1, 1, i::GetDel},
    {"getex", -2, K::kWrite, 1, 1, 1, i::GetEx},
    {"getrange", 4, K::kRead, 1, 1, 1, i::GetRange},
    {"getset", 3, K::kWrite, 1, 1, 1, i::GetSet},
    {"hdel", -3, K::kWrite, 1, 1, 1, i::HDel},
    {"hello", -1, K::kConnection},
    {"hexists", 3, K::kRead, 1, 1, 1, i::HExists},
    {"hget", 3, K::kRead, 1, 1, 1, i::HGet},
    {"hgetall", 2, K::kRead, 1, 1, 1, i::HGetAll},
    {"hincrby", 4, K::kWrite, 1, 1, 1, i::HIncrBy},
    {"hincrbyfloat", 4, K::kWrite, 1, 1, 1, i::HIncrByFloat},
    {"hkeys", 2, K::kRead, 1, 1, 1, i::HKeys},
    {"hlen", 2, K::kRead, 1, 1, 1, i::HLen},
    {"hmget", -3, K::kRead, 1, 1, 1, i::HMGet},
    {"hmset", -4, K::kWrite, 1, 1, 1, i::HSet},
    {"hrandfield", -2, K::kRead, 1, 1, 1, i::HRandField},
    {"hscan", -3, K::kRead, 1, 1, 1, i::HScan},
    {"hset", -4, K::kWrite, 1, 1, 1, i::HSet},
    {"hsetnx", 4, K::kWrite, 1, 1, 1, i::HSetNx},
    {"hstrlen", 3, K::kRead, 1, 1, 1, i::HStrLen},
    {"hvals", 2, K::kRead, 1, 1, 1, i::HVals},
    {"incr", 2, K::kWrite, 1, 1, 1, i::IncrBy},
    {"incrby", 3, K::kWrite, 1, 1, 1, i::IncrBy},
    {"incrbyfloat", 3, K::kWrite, 1, 1, 1, i::IncrByFloat},
    {"info", -1, K::kServer},
    {"keys", 2, K::kServer},
    {"lcs", -3, K::kRead, 1, 2, 1, i::Lcs},
    {"lindex", 3, K::kRead, 1, 1, 1, i::LIndex},
    {"linsert", 5, K::kWrite, 1, 1, 1, i::LInsert},
    {"llen", 2, K::kRead, 1, 1, 1, i::LLen},
    {"lmove", 5, K::kWrite, 1, 2, 1, i::LMove},
    {"lmpop", -4, K::kWrite, 0, 0, 1, i::LMPop, nullptr, i::MultiPopKeys},
    {"lpop", -2, K::kWrite, 1, 1, 1, i::ListPop},
    {"lpos", -3, K::kRead, 1, 1, 1, i::LPos},
    {"lpush", -3, K::kWrite, 1, 1, 1, i::ListPush},
    {"lpushx", -3, K::kWrite, 1, 1, 1, i::ListPush},
    {"lrange", 4, K::kRead, 1, 1, 1, i::LRange},
    {"lrem", 4, K::kWrite, 1, 1, 1, i::LRem},
    {"lset", 4, K::kWrite, 1, 1, 1, i::LSet},
    {"ltrim", 4, K::kWrite, 1, 1, 1, i::LTrim},
    {"memory", -2, K::kRead, 0, 0, 1, i::Memory, nullptr, i::MemoryKeys},
    {"mget", -2, K::kRead, 1, -1, 1, i::MGet},
    {"mset", -3, K::kWrite, 1, -1, 2, i::MSet, NeverRead},
    {"msetnx", -3, K::kWrite, 1, -1, 2, i::MSetNx},
    {"multi", 1, K::kTransaction},
    {"object", -2, K::kRead, 0, 0, 1, i::Object, nullptr, i::ObjectKeys},
    {"persist", 2, K::kWrite, 1, 1, 1, i::Persist},
    {"pexpire", -3, K::kWrite, 1, 1, 1, i::Expire},
    {"pexpireat", -3, K::kWrite, 1, 1, 1, i::Expire},
    {"pexpiretime", 2, K::kRead, 1, 1, 1, i::Ttl},
    {"pfadd", -2, K::kWrite, 1, 1, 1, i::PfAdd},
    {"pfcount", -2, K::kRead, 1, -1, 1, i::PfCount},
    {"pfmerge", -2, K::kWrite, 1, -1, 1, i::PfMerge},
    {"ping", -1, K::kConnection, 0, 0, 0, i::Ping},
    {"psetex", 4, K::kWrite, 1, 1, 1, i::SetEx, NeverRead},
    {"psubscribe", -2, K::kConnection},
    {"pttl", 2, K::kRead, 1, 1, 1, i::Ttl},
    {"publish", 3, K::kConnection},
    {"pubsub", -2, K::kConnection},
    {"punsubscribe", -1, K::kConnection},
    {"quit", -1, K::kConnection},
    {"rampart.publish", 3, K::kConnection},
    {"rampart.spublish", 3, K::kConnection},
    {"randomkey", 1, K::kServer},
    {"rename", 3, K::kWrite, 1, 2, 1, i::Rename},
    {"renamenx", 3, K::kWrite, 1, 2, 1, i::Rename},
    {"restore", -4, K::kWrite, 1, 1, 1, i::Restore},
    {"rpop", -2, K::kWrite, 1, 1, 1, i::ListPop},
    {"rpoplpush", 3, K::kWrite, 1, 2, 1, i::RPopLPush},
    {"rpush", -3, K::kWrite, 1, 1, 1, i::ListPush},
    {"rpushx", -3, K::kWrite, 1, 1, 1, i::ListPush},
    {"sadd", -3, K::kWrite, 1, 1, 1, i::SAdd},
    {"scan", -2, K::kServer},
    {"scard", 2, K::kRead, 1, 1, 1, i::SCard},
    {"script", -2, K::kConnection},
    {"sdiff", -2, K::kRead, 1, -1, 1, i::SCombine},
    {"sdiffstore", -3, K::kWrite, 1, -1, 1, i::SCombineStore},
    {"select", 2, K::kConnection},
    {"set", -3, K::kWrite, 1, 1, 1, i::Set, i::SetNeedsRead},
    {"setbit", 4, K::kWrite, 1, 1, 1, i::SetBit},
    {"setex", 4, K::kWrite, 1, 1, 1, i::SetEx, NeverRead},
    {"setnx", 3, K::kWrite, 1, 1, 1, i::SetNx},
    {"setrange", 4, K::kWrite, 1, 1, 1, i::SetRange},
    {"sinter", -2, K::kRead, 1, -1, 1, i::SCombine},
    {"sintercard", -3, K::kRead, 0, 0, 1, i::SInterCard, nullptr, i::ReplyAlgebraKeys},
    {"sinterstore", -3, K::kWrite, 1, -1, 1, i::SCombineStore},
    {"sismember", 3, K::kRead, 1, 1, 1, i::SIsMember},
    {"slowlog", -2, K::kConnection},
    {"smembers", 2, K::kRead, 1, 1, 1, i::SMembers},
    {"smismember", -3, K::kRead, 1, 1, 1, i::SMIsMember},
    {"smove", 4, K::kWrite, 1, 2, 1, i::SMove},
    {"sort", -2, K::kWrite, 0, 0, 1, i::Sort, nullptr, i::SortKeys},
    {"sort_ro", -2, K::kRead, 1, 1, 1, i::SortRo},
    {"spop", -2, K::kWrite, 1, 1, 1, i::SPop},
    {"spublish", 3, K::kConnection},
    {"srandmember", -2, K::kRead, 1, 1, 1, i::SRandMember},
    {"srem", -3, K::kWrite, 1, 1, 1, i::SRem},
    {"sscan", -3, K::kRead, 1, 1, 1, i::SScan},
    {"ssubscribe", -2, K::kConnection},
    {"strlen", 2, K::kRead, 1, 1, 1, i::StrLen},
    {"subscribe", -2, K::kConnection},
    {"substr", 4, K::kRead, 1, 1, 1, i::GetRange},
    {"sunion", -2, K::kRead, 1, -1, 1, i::SCombine},
    {"sunionstore", -3, K::kWrite, 1, -1, 1, i::SCombineStore},
    {"sunsubscribe", -1, K::kConnection},
    {"time", 1, K::kConnection},
    {"touch", -2, K::kRead, 1, -1, 1, i::Exists},
    {"ttl", 2, K::kRead, 1, 1, 1, i::Ttl},
    {"type", 2, K::kRead, 1, 1, 1, i::Type},
    {"unlink", -2, K::kWrite, 1, -1, 1, i::Del},
    {"unsubscribe", -1, K::kConnection},
    {"unwatch", 1, K::kConnection},
    {"wait", 3, K::kConnection},
    {"watch", -2, K::kRead, 1, -1, 1, i::Watch},
    {"zadd", -4, K::kWrite, 1, 1, 1, i::ZAdd},
    {"zcard", 2, K::kRead, 1, 1, 1, i::ZCard},
    {"zcount", 4, K::kRead, 1, 1, 1, i::ZCount},
    {"zdiff", -3, K::kRead, 0, 0, 1, i::ZDiff, nullptr, i::ReplyAlgebraKeys},
    {"zdiffstore", -4, K::kWrite, 0, 0, 1, i::ZDiffStore, nullptr, i::StoreAlgebraKeys},
    {"zincrby", 4, K::kWrite, 1, 1, 1, i::ZIncrBy},
    {"zinter", -3, K::kRead, 0, 0, 1, i::ZInter, nullptr, i::ReplyAlgebraKeys},
    {"zintercard", -3, K::kRead, 0, 0, 1, i::ZInterCard, nullptr, i::ReplyAlgebraKeys},
    {"zinterstore", -4, K::kWrite, 0, 0, 1, i::ZInterStore, nullptr, i::StoreAlgebraKeys},
    {"zlexcount", 4, K::kRead, 1, 1, 1, i::ZLexCount},
    {"zmpop", -4, K::kWrite, 0, 0, 1, i::ZMPop, nullptr, i::MultiPopKeys},
    {"zmscore", -3, K::kRead, 1, 1, 1, i::ZMScore},
    {"zpopmax", -2, K::kWrite, 1, 1, 1, i::ZPop},
    {"zpopmin", -2, K::kWrite, 1, 1, 1, i::ZPop},
    {"zrandmember", -2, K::kRead, 1, 1, 1, i::ZRandMember},
    {"zrange", -4, K::kRead, 1, 1, 1, i::ZRange},
    {"zrangebylex", -4, K::kRead, 1, 1, 1, i::ZRangeByLex},
    {"zrangebyscore", -4, K::kRead, 1, 1, 1, i::ZRangeByScore},
    {"zrangestore", -5, K::kWrite, 1, 2, 1, i::ZRangeStore},
    {"zrank", 3, K::kRead, 1, 1, 1, i::ZRank},
    {"zrem", -3, K::kWrite, 1, 1, 1, i::ZRem},
    {"zremrangebylex", 4, K::kWrite, 1, 1, 1, i::ZRemRangeByLex},
    {"zremrangebyrank", 4, K::kWrite, 1, 1, 1, i::ZRemRangeByRank},
    {"zremrangebyscore", 4, K::kWrite, 1, 1, 1, i::ZRemRangeByScore},
    {"zrevrange", -4, K::kRead, 1, 1, 1, i::ZRevRange},
    {"zrevrangebylex", -4, K::kRead, 1, 1, 1, i::ZRevRangeByLex},
    {"zrevrangebyscore", -4, K::kRead, 1, 1, 1, i::ZRevRangeByScore},
    {"zrevrank", 3, K::kRead, 1, 1, 1, i::ZRank},
    {"zscan", -3, K::kRead, 1, 1, 1, i::ZScan},
    {"zscore", 3, K::kRead, 1, 1, 1, i::ZScore},
    {"zunion", -3, K::kRead, 0, 0, 1, i::ZUnion, nullptr, i::ReplyAlgebraKeys},
    {"zunionstore", -4, K::kWrite, 0, 0, 1, i::ZUnionStore, nullptr, i::StoreAlgebraKeys},
};

constexpr bool SortedByName() {
  for (size_t n = 1; n < std::size(kCommands); ++n) {
    if (!(kCommands[n - 1].name < kCommands[n].name)) return false;
  }
  return true;
}
static_assert(SortedByName(), "kCommands must be sorted by name");

}  // namespace

const CommandSpec* FindCommand(std::string_view name) {
  char lower[32];
  if (name.empty() || name.size() > sizeof(lower)) return nullptr;
  for (size_t n = 0; n < name.size(); ++n) {
    lower[n] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[n])));
  }
  const std::string_view key(lower, name.size());
  auto it = std::lower_bound(std::begin(kCommands), std::end(kCommands), key,
                             [](const CommandSpec& c, std::string_view k) { return c.name < k; });
  return it != std::end(kCommands) && it->name == key ? &*it : nullptr;
}

std::span<const CommandSpec> AllCommands() { return kCommands; }

namespace {

// Redis 7.0.15's COMMAND INFO for the containers the proxy serves (also the
// subcommands it does not serve, marked so, for Redis's arity errors and
// counts), and CLIENT SETINFO and NO-TOUCH of Redis 7.2, which it serves.
constexpr SubcommandSpec kSubcommands[] = {
    {"client", "caching", 3, false}, {"client", "getname", 2}, {"client", "getredir", 2, false},
    {"client", "help", 2}, {"client", "id", 2}, {"client", "info", 2}, {"client", "kill", -3},
    {"client", "list", -2}, {"client", "no-evict", 3}, {"client", "no-touch", 3},
    {"client", "pause", -3, false}, {"client", "reply", 3}, {"client", "setinfo", 4}, {"client", "setname", 3},
    {"client", "tracking", -3, false}, {"client", "trackinginfo", 2, false}, {"client", "unblock", -3},
    {"client", "unpause", 2, false},
    {"command", "count", 2}, {"command", "docs", -2}, {"command", "getkeys", -4},
    {"command", "getkeysandflags", -4, false}, {"command", "help", 2}, {"command", "info", -2},
    {"command", "list", -2},
    {"config", "get", -3}, {"config", "help", 2}, {"config", "resetstat", 2}, {"config", "rewrite", 2, false},
    {"config", "set", -4},
    {"function", "delete", 3}, {"function", "dump", 2, false}, {"function", "flush", -2},
    {"function", "help", 2}, {"function", "kill", 2}, {"function", "list", -2},
    {"function", "load", -3, false}, {"function", "restore", -3, false}, {"function", "stats", 2, false},
    {"memory", "doctor", 2, false}, {"memory", "help", 2}, {"memory", "malloc-stats", 2, false},
    {"memory", "purge", 2, false}, {"memory", "stats", 2, false}, {"memory", "usage", -3},
    {"object", "encoding", 3}, {"object", "freq", 3}, {"object", "help", 2}, {"object", "idletime", 3},
    {"object", "refcount", 3},
    {"pubsub", "channels", -2}, {"pubsub", "help", 2}, {"pubsub", "numpat", 2}, {"pubsub", "numsub", -2},
    {"pubsub", "shardchannels", -2}, {"pubsub", "shardnumsub", -2},
    {"script", "debug", 3, false}, {"script", "exists", -3}, {"script", "flush", -2}, {"script", "help", 2},
    {"script", "kill", 2}, {"script", "load", 3},
    {"slowlog", "get", -2}, {"slowlog", "help", 2}, {"slowlog", "len", 2}, {"slowlog", "reset", 2},
};

// The index of `spec` in kCommands, or -1: the sweeper's internal commands
// are not in the table (std::less: a total order also for pointers into
// other objects).
int TableIndex(const CommandSpec* spec) {
  if (spec == nullptr || std::less<>{}(spec, std::begin(kCommands)) || !std::less<>{}(spec, std::end(kCommands))) {
    return -1;
  }
  return static_cast<int>(spec - kCommands);
}

}  // namespace

std::span<const SubcommandSpec> AllSubcommands() { return kSubcommands; }

bool IsContainer(const CommandSpec& spec) {
  static const std::vector<bool> containers = [] {
    std::vector<bool> out(std::size(kCommands));
    for (const SubcommandSpec& sub : kSubcommands) out[FindCommand(sub.container) - kCommands] = true;
    return out;
  }();
  const int i = TableIndex(&spec);
  return i >= 0 && containers[static_cast<size_t>(i)];
}

namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

bool NamesUnknownSubcommand(const CommandSpec& spec, Args args) {
  return args.size() >= 2 && IsContainer(spec) && FindSubcommand(spec, args[1]) == nullptr;
}

std::string SubcommandError(const CommandSpec& spec, std::string_view name) {
  const SubcommandSpec* known = FindSubcommand(spec, name);
  if (known == nullptr) return StrCat("ERR unknown subcommand '", name.substr(0, 128), "'. Try ", Upper(spec.name), " HELP.");
  if (!known->served) return StrCat("ERR rampart: ", Upper(known->container), " ", Upper(known->name), " is not supported");
  return StrCat("ERR unknown subcommand or wrong number of arguments for '", name.substr(0, 128), "'. Try ",
                Upper(spec.name), " HELP.");
}

namespace {

// HELP's lines for `container`: its served subcommands, one a line.
std::vector<std::string> HelpLines(std::string_view container) {
  std::vector<std::string> lines = {StrCat(Upper(container), " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")};
  for (const SubcommandSpec& sub : kSubcommands) {
    if (sub.container == container && sub.served && sub.name != "help") lines.push_back(Upper(sub.name));
  }
  lines.push_back("HELP");
  lines.push_back("    Prints this help.");
  return lines;
}

}  // namespace

void SubcommandHelp(const CommandSpec& spec, resp::Writer& out) {
  // Built once: per command of the table its HELP lines (none for a
  // command that is no container), and views of them for the writer.
  static const std::vector<std::vector<std::string>> lines = [] {
    std::vector<std::vector<std::string>> out(std::size(kCommands));
    for (size_t i = 0; i < out.size(); ++i) {
      if (IsContainer(kCommands[i])) out[i] = HelpLines(kCommands[i].name);
    }
    return out;
  }();
  static const std::vector<std::vector<std::string_view>> views = [] {
    std::vector<std::vector<std::string_view>> out;
    for (const std::vector<std::string>& of_one : lines) out.emplace_back(of_one.begin(), of_one.end());
    return out;
  }();
  assert(IsContainer(spec));
  out.SimpleLines(views[static_cast<size_t>(TableIndex(&spec))]);
}

int CommandStatsIndex(const CommandSpec* spec, size_t argc, std::string_view second) {
  const int i = TableIndex(spec);
  if (i < 0 || argc < 2 || !IsContainer(*spec)) return i;
  const SubcommandSpec* sub = FindSubcommand(*spec, second);
  return sub == nullptr ? -1 : static_cast<int>(std::size(kCommands) + (sub - kSubcommands));
}

size_t CommandStatsSlots() { return std::size(kCommands) + std::size(kSubcommands); }

std::string CommandStatsName(size_t index) {
  if (index < std::size(kCommands)) return std::string(kCommands[index].name);
  const SubcommandSpec& sub = kSubcommands[index - std::size(kCommands)];
  return StrCat(sub.container, "|", sub.name);
}

const SubcommandSpec* FindSubcommand(const CommandSpec& spec, std::string_view name) {
  if (!IsContainer(spec)) return nullptr;
  for (const SubcommandSpec& sub : kSubcommands) {
    if (sub.container == spec.name && internal::EqualsNoCase(name, sub.name)) return &sub;
  }
  return nullptr;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

void TimeReply(resp::Writer& out) {
  const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  out.Array(2);
  out.Bulk(std::to_string(us / 1'000'000));
  out.Bulk(std::to_string(us % 1'000'000));
}

void SelectReply(std::string_view db, resp::Writer& out) {
  if (db == "0") return out.Simple("OK");
  out.Error("ERR DB index is out of range");
}

std::string CheckArity(const CommandSpec& spec, Args args) {
  const int n = static_cast<int>(args.size());
  bool ok = spec.arity > 0 ? n == spec.arity : n >= -spec.arity;
  // MSET k v [k v ...]: pairs.
  if (ok && spec.key_step == 2 && (n - spec.first_key) % 2 != 0) ok = false;
  if (!ok) return StrCat("ERR wrong number of arguments for '", spec.name, "' command");
  const SubcommandSpec* sub = n >= 2 ? FindSubcommand(spec, args[1]) : nullptr;
  if (sub == nullptr || (sub->arity > 0 ? n == sub->arity : n >= -sub->arity)) return "";
  return StrCat("ERR wrong number of arguments for '", sub->container, "|", sub->name, "' command");
}

std::vector<std::string_view> KeysOf(const CommandSpec& spec, Args args) {
  if (spec.keys_of != nullptr) return spec.keys_of(args);
  std::vector<std::string_view> keys;
  if (spec.first_key == 0) return keys;
  const int n = static_cast<int>(args.size());
  const int last = spec.last_key < 0 ? n + spec.last_key : spec.last_key;
  for (int k = spec.first_key; k <= last && k < n; k += spec.key_step) keys.push_back(args[k]);
  return keys;
}

const BlockingRule* BlockingOf(const CommandSpec& spec) {
  static constexpr BlockingRule kLast{}, kFirst{.timeout_first = true};
  static constexpr std::pair<std::string_view, const BlockingRule*> kBlocking[] = {
      {"blmove", &kLast},      {"blmpop", &kFirst}, {"blpop", &kLast},    {"brpop", &kLast},
      {"brpoplpush", &kLast}, {"bzmpop", &kFirst}, {"bzpopmax", &kLast}, {"bzpopmin", &kLast}};
  for (const auto& [name, rule] : kBlocking) {
    if (name == spec.name) return rule;
  }
  return nullptr;
}

bool NeedsRead(const CommandSpec& spec, Args args) {
  return spec.needs_read == nullptr || spec.needs_read(args);
}

namespace {

// The keys of `spec` that Redis's lookups of a write would find expired and
// remove: those the view holds with an expired value it did not write.
void RemoveExpiredKeys(const CommandSpec& spec, Args args, DataView& data) {
  for (std::string_view k : KeysOf(spec, args)) {
    if (data.HoldsExpired(k)) data.Delete(k);  // records "expired"
  }
}

void NoteKeyMisses(const CommandSpec& spec, Args args, DataView& data) {
  if (spec.name == "object" || spec.name == "watch" || spec.name == "memory") return;
  for (std::string_view k : KeysOf(spec, args)) {
    auto found = data.FindStored(k);
    if (found.ok() && !found->has_value()) internal::NotifyKeyMiss(data, k);
  }
}

}  // namespace

void ApplyCommand(const CommandSpec& spec, Args args, DataView& data, resp::Writer& out) {
  const uint32_t flags = data.notify_flags();
  if (flags == 0) return spec.apply(args, data, out);
  if (spec.kind == CommandKind::kWrite && (flags & notify::kExpired) != 0) RemoveExpiredKeys(spec, args, data);
  const size_t at = out.out()->size();
  spec.apply(args, data, out);
  const bool error = out.out()->size() > at && (*out.out())[at] == '-';
  if (spec.kind == CommandKind::kRead && (flags & notify::kKeyMiss) != 0 && !error) {
    NoteKeyMisses(spec, args, data);
  }
}

namespace internal {

bool ReplyIfError(const Status& s, resp::Writer& out) {
  if (s.ok()) return false;
  out.Error(s.message());
  return true;
}

void NotifyKeyMiss(DataView& data, std::string_view key) { data.Notify(notify::kKeyMiss, "keymiss", key); }

void NotifyStored(DataView& data, uint32_t cls, std::string_view event, std::string_view key, bool stored,
                  bool existed) {
  if (stored) {
    data.Notify(cls, event, key);
  } else if (existed) {
    data.Notify(notify::kGeneric, "del", key);
  }
}

bool HoldsValue(const DataView& data, std::string_view key) {
  auto v = data.FindStored(key);
  return !v.ok() || v->has_value();
}

Result<int64_t> ParseRandomCount(std::string_view s) {
  RAMPART_ASSIGN_OR_RETURN(int64_t count, ParseInt64(s));
  if (count == std::numeric_limits<int64_t>::min()) {  // Redis's range is -LONG_MAX..LONG_MAX
    return InvalidArgument(
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807");
  }
  if (count < -kMaxRandomCount || count > kMaxRandomCount) {
    return InvalidArgument("ERR value is out of range: rampart takes counts from -", kMaxRandomCount,
                           " to ", kMaxRandomCount);
  }
  return count;
}

}  // namespace internal
}  // namespace rampart::proxy
