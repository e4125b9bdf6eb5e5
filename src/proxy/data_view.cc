#include "proxy/data_view.h"

#include <algorithm>

namespace rampart::proxy {

std::map<std::string, DataView::Entry, std::less<>>::iterator DataView::Set(
    std::string_view key, std::optional<std::string> stored, bool dirty) {
  return entries_.insert_or_assign(std::string(key), Entry{std::move(stored), dirty, next_generation_++})
      .first;
}

void DataView::Seed(std::string_view key, std::optional<std::string> stored) {
  Set(key, std::move(stored), false);
}

Result<std::optional<StoredValue>> DataView::Find(std::string_view key) const {
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.stored.has_value()) return std::optional<StoredValue>();
  auto decoded = DecodeStored(*it->second.stored);
  if (!decoded.ok()) {
    return Corruption("ERR key \"", key, "\" holds a value not written through the proxy (",
                      decoded.status().message(), ")");
  }
  if (Expired(*decoded, now_ms_)) return std::optional<StoredValue>();
  return std::optional<StoredValue>(*decoded);
}

Result<std::optional<StoredValue>> DataView::FindTyped(std::string_view key, ValueType type) const {
  RAMPART_ASSIGN_OR_RETURN(auto found, Find(key));
  if (found.has_value() && RedisTypeOf(found->type) != RedisTypeOf(type)) {
    return InvalidArgument(kWrongType);
  }
  return found;
}

void DataView::Put(std::string_view key, std::string stored) { Set(key, std::move(stored), true); }

void DataView::Delete(std::string_view key) { Set(key, std::nullopt, true); }

uint64_t DataView::generation(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.generation;
}

void DataView::KeepDecoded(std::string_view name, uint64_t generation,
                           std::unique_ptr<TreeNode> node) {
  if (generation == 0 || node == nullptr) return;
  Decoded& d = decoded_[std::string(name)];
  d.generation = generation;
  d.node = std::move(node);
}

std::unique_ptr<TreeNode> DataView::TakeDecoded(std::string_view name, uint64_t generation) {
  auto it = decoded_.find(name);
  if (it == decoded_.end()) return nullptr;
  std::unique_ptr<TreeNode> node =
      it->second.generation == generation ? std::move(it->second.node) : nullptr;
  decoded_.erase(it);
  return node;
}

Result<std::optional<std::string_view>> DataView::Raw(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end() && guess_) {
    if (const std::string* guess = guess_(key); guess != nullptr) {
      guessed_.emplace_back(key);
      it = Set(key, *guess, false);
    }
  }
  if (it == entries_.end()) {
    if (std::find(missing_.begin(), missing_.end(), key) == missing_.end()) missing_.emplace_back(key);
    return Unavailable("ERR rampart: a key not read yet");
  }
  if (!it->second.stored.has_value()) return std::optional<std::string_view>();
  return std::optional<std::string_view>(*it->second.stored);
}

uint64_t DataView::Random() {
  // splitmix64: small state, good enough spread for random members.
  uint64_t z = (random_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace rampart::proxy
