// The keys the proxy writes besides the users' keys: the pages of paged
// collections (collection.h). A page key is
//
//   "\x00\x01" | collection id (u64, big-endian) | page id (u64, big-endian) | user key
//
// so that a page lives on the same kv partitions as its collection's header
// (HashRing places internal keys by their user key) and a collection's pages
// are told from the pages of an earlier collection at the same key by the
// id. User keys that start with the prefix are refused by the proxy.
// Layout persisted in the kv tier — DO NOT CHANGE (docs/collections.md).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rampart::proxy {

inline constexpr std::string_view kInternalPrefix{"\x00\x01", 2};
inline constexpr size_t kPageKeyOverhead = 2 + 8 + 8;

inline bool IsInternalKey(std::string_view key) {
  return key.size() >= kPageKeyOverhead && key.substr(0, 2) == kInternalPrefix;
}

inline std::string PageKey(uint64_t collection, uint64_t page, std::string_view user_key) {
  std::string key(kInternalPrefix);
  key.reserve(kPageKeyOverhead + user_key.size());
  for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>(collection >> shift));
  for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>(page >> shift));
  key.append(user_key);
  return key;
}

struct PageKeyParts {
  uint64_t collection = 0;
  uint64_t page = 0;
  std::string_view user_key;
};
// REQUIRES: IsInternalKey(key).
inline PageKeyParts ParsePageKey(std::string_view key) {
  PageKeyParts parts;
  for (size_t i = 0; i < 8; ++i) {
    parts.collection = parts.collection << 8 | static_cast<uint8_t>(key[2 + i]);
    parts.page = parts.page << 8 | static_cast<uint8_t>(key[10 + i]);
  }
  parts.user_key = key.substr(kPageKeyOverhead);
  return parts;
}

// The key whose placement a key follows: an internal key's user key, else
// the key itself.
inline std::string_view PlacementKey(std::string_view key) {
  return IsInternalKey(key) ? key.substr(kPageKeyOverhead) : key;
}

}  // namespace rampart::proxy
