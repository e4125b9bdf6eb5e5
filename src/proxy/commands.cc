#include "proxy/commands.h"

#include <algorithm>
#include <cctype>

#include "common/status.h"
#include "proxy/commands_internal.h"

namespace rampart::proxy {
namespace {

using K = CommandKind;
namespace i = internal;

bool NeverRead(Args) { return false; }

// Sorted by name (FindCommand searches it).
constexpr CommandSpec kCommands[] = {
    {"auth", -2, K::kConnection},
    {"client", -2, K::kConnection},
    {"command", -1, K::kConnection},
    {"config", -2, K::kConnection},
    {"dbsize", 1, K::kServer},
    {"decr", 2, K::kWrite, 1, 1, 1, i::IncrBy},
    {"decrby", 3, K::kWrite, 1, 1, 1, i::IncrBy},
    {"del", -2, K::kWrite, 1, -1, 1, i::Del},
    {"discard", 1, K::kTransaction},
    {"echo", 2, K::kConnection},
    {"exec", 1, K::kTransaction},
    {"exists", -2, K::kRead, 1, -1, 1, i::Exists},
    {"expire", 3, K::kWrite, 1, 1, 1, i::Expire},
    {"flushall", -1, K::kServer},
    {"flushdb", -1, K::kServer},
    {"get", 2, K::kRead, 1, 1, 1, i::Get},
    {"getset", 3, K::kWrite, 1, 1, 1, i::GetSet},
    {"hdel", -3, K::kWrite, 1, 1, 1, i::HDel},
    {"hello", -1, K::kConnection},
    {"hexists", 3, K::kRead, 1, 1, 1, i::HExists},
    {"hget", 3, K::kRead, 1, 1, 1, i::HGet},
    {"hgetall", 2, K::kRead, 1, 1, 1, i::HGetAll},
    {"hlen", 2, K::kRead, 1, 1, 1, i::HLen},
    {"hmget", -3, K::kRead, 1, 1, 1, i::HMGet},
    {"hmset", -4, K::kWrite, 1, 1, 1, i::HSet},
    {"hset", -4, K::kWrite, 1, 1, 1, i::HSet},
    {"incr", 2, K::kWrite, 1, 1, 1, i::IncrBy},
    {"incrby", 3, K::kWrite, 1, 1, 1, i::IncrBy},
    {"info", -1, K::kServer},
    {"mget", -2, K::kRead, 1, -1, 1, i::MGet},
    {"mset", -3, K::kWrite, 1, -1, 2, i::MSet, NeverRead},
    {"multi", 1, K::kTransaction},
    {"persist", 2, K::kWrite, 1, 1, 1, i::Persist},
    {"pexpire", 3, K::kWrite, 1, 1, 1, i::Expire},
    {"ping", -1, K::kConnection},
    {"pttl", 2, K::kRead, 1, 1, 1, i::Ttl},
    {"quit", -1, K::kConnection},
    {"select", 2, K::kConnection},
    {"set", -3, K::kWrite, 1, 1, 1, i::Set, i::SetNeedsRead},
    {"strlen", 2, K::kRead, 1, 1, 1, i::StrLen},
    {"ttl", 2, K::kRead, 1, 1, 1, i::Ttl},
    {"type", 2, K::kRead, 1, 1, 1, i::Type},
    {"zadd", -4, K::kWrite, 1, 1, 1, i::ZAdd},
    {"zcard", 2, K::kRead, 1, 1, 1, i::ZCard},
    {"zrangebyscore", -4, K::kRead, 1, 1, 1, i::ZRangeByScore},
    {"zrem", -3, K::kWrite, 1, 1, 1, i::ZRem},
    {"zscore", 3, K::kRead, 1, 1, 1, i::ZScore},
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

std::string CheckArity(const CommandSpec& spec, Args args) {
  const int n = static_cast<int>(args.size());
  bool ok = spec.arity > 0 ? n == spec.arity : n >= -spec.arity;
  // MSET k v [k v ...]: pairs.
  if (ok && spec.key_step == 2 && (n - spec.first_key) % 2 != 0) ok = false;
  if (ok) return "";
  return StrCat("ERR wrong number of arguments for '", spec.name, "' command");
}

std::vector<std::string_view> KeysOf(const CommandSpec& spec, Args args) {
  std::vector<std::string_view> keys;
  if (spec.first_key == 0) return keys;
  const int n = static_cast<int>(args.size());
  const int last = spec.last_key < 0 ? n + spec.last_key : spec.last_key;
  for (int k = spec.first_key; k <= last && k < n; k += spec.key_step) keys.push_back(args[k]);
  return keys;
}

bool NeedsRead(const CommandSpec& spec, Args args) {
  return spec.needs_read == nullptr || spec.needs_read(args);
}

namespace internal {

bool ReplyIfError(const Status& s, resp::Writer& out) {
  if (s.ok()) return false;
  out.Error(s.message());
  return true;
}

}  // namespace internal
}  // namespace rampart::proxy
