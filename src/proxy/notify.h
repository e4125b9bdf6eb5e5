// Keyspace notifications (docs/proxy.md, "Keyspace notifications"): the
// event classes of Redis 7.0's `notify-keyspace-events`, with its bit values,
// its parsing and its spelling for CONFIG GET. A command records its events
// in its DataView (DataView::Notify); the worker publishes them on
// `__keyspace@0__:<key>` and `__keyevent@0__:<event>` once the write that
// made them is done.
//
// Thread-safety: pure functions and constants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rampart::proxy::notify {

inline constexpr uint32_t kKeyspace = 1u << 0;  // K: __keyspace@0__:<key> <event>
inline constexpr uint32_t kKeyevent = 1u << 1;  // E: __keyevent@0__:<event> <key>
inline constexpr uint32_t kGeneric = 1u << 2;   // g: DEL, EXPIRE, RENAME, ...
inline constexpr uint32_t kString = 1u << 3;    // $
inline constexpr uint32_t kList = 1u << 4;      // l
inline constexpr uint32_t kSet = 1u << 5;       // s
inline constexpr uint32_t kHash = 1u << 6;      // h
inline constexpr uint32_t kZset = 1u << 7;      // z
inline constexpr uint32_t kExpired = 1u << 8;   // x: a key removed because it expired
inline constexpr uint32_t kEvicted = 1u << 9;   // e: never sent (rampart does not evict)
inline constexpr uint32_t kStream = 1u << 10;   // t: never sent (no streams)
inline constexpr uint32_t kKeyMiss = 1u << 11;  // m: a read of a missing key
inline constexpr uint32_t kModule = 1u << 13;   // d: never sent (no modules)
inline constexpr uint32_t kNew = 1u << 14;      // n: a key added to the keyspace
// A: every class but m and n.
inline constexpr uint32_t kAll =
    kGeneric | kString | kList | kSet | kHash | kZset | kExpired | kEvicted | kStream | kModule;

// The characters Redis takes, in its error text's order.
inline constexpr std::string_view kClassCharacters = "Ag$lshzxeKEtmdn";

// The flags of a `notify-keyspace-events` value; nullopt when a character
// names no class (Redis: "Invalid event class character").
std::optional<uint32_t> ParseFlags(std::string_view classes);
// The value CONFIG GET answers for `flags`, spelt as Redis 7.0 spells it:
// "A" for every class of A (and then no "n", though n stays on), else the
// classes one by one; then K, E, m.
std::string FormatFlags(uint32_t flags);
// Whether any event is published at all (K or E, and a class).
inline bool Publishing(uint32_t flags) {
  return (flags & (kKeyspace | kKeyevent)) != 0 && (flags & ~(kKeyspace | kKeyevent)) != 0;
}

// The channels of an event (database 0, the only one).
std::string KeyspaceChannel(std::string_view key);
std::string KeyeventChannel(std::string_view event);

}  // namespace rampart::proxy::notify
