#include "proxy/notify.h"

namespace rampart::proxy::notify {
namespace {

struct Class {
  char c;
  uint32_t flag;
};
// FormatFlags's order after "A" (Redis's keyspaceEventsFlagsToString).
constexpr Class kClasses[] = {{'g', kGeneric}, {'$', kString}, {'l', kList},    {'s', kSet},
                              {'h', kHash},    {'z', kZset},   {'x', kExpired}, {'e', kEvicted},
                              {'t', kStream},  {'d', kModule}, {'n', kNew}};

}  // namespace

std::optional<uint32_t> ParseFlags(std::string_view classes) {
  uint32_t flags = 0;
  for (char c : classes) {
    uint32_t flag = 0;
    switch (c) {
      case 'A': flag = kAll; break;
      case 'K': flag = kKeyspace; break;
      case 'E': flag = kKeyevent; break;
      case 'm': flag = kKeyMiss; break;
      default:
        for (const Class& k : kClasses) {
          if (k.c == c) flag = k.flag;
        }
        if (flag == 0) return std::nullopt;
    }
    flags |= flag;
  }
  return flags;
}

std::string FormatFlags(uint32_t flags) {
  std::string s;
  if ((flags & kAll) == kAll) {
    s += 'A';  // and no 'n', as Redis 7.0 spells it (the flag itself stays set)
  } else {
    for (const Class& k : kClasses) {
      if (flags & k.flag) s += k.c;
    }
  }
  if (flags & kKeyspace) s += 'K';
  if (flags & kKeyevent) s += 'E';
  if (flags & kKeyMiss) s += 'm';
  return s;
}

std::string KeyspaceChannel(std::string_view key) {
  std::string channel = "__keyspace@0__:";
  channel.append(key);
  return channel;
}

std::string KeyeventChannel(std::string_view event) {
  std::string channel = "__keyevent@0__:";
  channel.append(event);
  return channel;
}

}  // namespace rampart::proxy::notify
