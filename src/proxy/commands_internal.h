// The data commands' Apply and NeedsRead functions, private to the command
// table (commands.cc). Strings and keys in commands_strings.cc, hashes and
// sorted sets in commands_collections.cc.
#pragma once

#include <cctype>

#include "proxy/commands.h"

namespace rampart::proxy::internal {

// Replies the error of a failed lookup or parse (its message is the Redis
// error text) and returns true when `s` is not OK.
bool ReplyIfError(const Status& s, resp::Writer& out);

// Whether `a` equals `lower` ignoring the case of `a` (option names).
// REQUIRES: `lower` is lower case.
inline bool EqualsNoCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t n = 0; n < a.size(); ++n) {
    if (std::tolower(static_cast<unsigned char>(a[n])) != lower[n]) return false;
  }
  return true;
}

#define RAMPART_PROXY_APPLY(name) void name(Args args, DataView& data, resp::Writer& out)
RAMPART_PROXY_APPLY(Get);
RAMPART_PROXY_APPLY(Set);
RAMPART_PROXY_APPLY(MGet);
RAMPART_PROXY_APPLY(MSet);
RAMPART_PROXY_APPLY(Del);
RAMPART_PROXY_APPLY(Exists);
RAMPART_PROXY_APPLY(IncrBy);  // INCR, INCRBY, DECR, DECRBY by args[0]
RAMPART_PROXY_APPLY(GetSet);
RAMPART_PROXY_APPLY(StrLen);
RAMPART_PROXY_APPLY(Ttl);     // TTL, PTTL
RAMPART_PROXY_APPLY(Expire);  // EXPIRE, PEXPIRE
RAMPART_PROXY_APPLY(Persist);
RAMPART_PROXY_APPLY(Type);
RAMPART_PROXY_APPLY(HSet);    // HSET, HMSET
RAMPART_PROXY_APPLY(HGet);
RAMPART_PROXY_APPLY(HMGet);
RAMPART_PROXY_APPLY(HGetAll);
RAMPART_PROXY_APPLY(HDel);
RAMPART_PROXY_APPLY(HLen);
RAMPART_PROXY_APPLY(HExists);
RAMPART_PROXY_APPLY(ZAdd);
RAMPART_PROXY_APPLY(ZRem);
RAMPART_PROXY_APPLY(ZScore);
RAMPART_PROXY_APPLY(ZCard);
RAMPART_PROXY_APPLY(ZRangeByScore);
#undef RAMPART_PROXY_APPLY

bool SetNeedsRead(Args args);

}  // namespace rampart::proxy::internal
