#include "proxy/page_cache.h"

#include "proxy/collection.h"
#include "proxy/internal_keys.h"

namespace rampart::proxy {

void PageCache::Offer(std::string_view key, const std::optional<std::string>& value) {
  auto it = index_.find(key);
  if (it != index_.end()) Drop(it->second);
  if (!value.has_value() || value->size() > kMaxCachedBytes) return;
  const bool upper = IsInternalKey(key) ? IsInteriorPage(*value) : HasInteriorRoot(*value);
  if (!upper || value->size() + key.size() > max_bytes_) return;
  lru_.push_front(Entry{std::string(key), *value});
  index_.emplace(lru_.front().key, lru_.begin());
  bytes_ += key.size() + value->size();
  while (bytes_ > max_bytes_) Drop(std::prev(lru_.end()));
}

const std::string* PageCache::Find(std::string_view key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->value;
}

void PageCache::Drop(std::list<Entry>::iterator it) {
  bytes_ -= it->key.size() + it->value.size();
  index_.erase(it->key);
  lru_.erase(it);
}

}  // namespace rampart::proxy
