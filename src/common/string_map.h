// StringMap<V>: an unordered_map keyed by std::string that is looked up by
// std::string_view without building a temporary string (heterogeneous
// lookup), for the key indexes on the datapath (kv::Partition, kv::LockTable,
// the GET* address cache).
//
//   StringMap<int> m;
//   m.emplace("k", 1);
//   auto it = m.find(std::string_view("k"));   // no allocation
//
// Thread-safety: that of std::unordered_map.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rampart {

struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <typename V>
using StringMap = std::unordered_map<std::string, V, TransparentStringHash, std::equal_to<>>;

}  // namespace rampart
