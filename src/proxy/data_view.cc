#include "proxy/data_view.h"

namespace rampart::proxy {

void DataView::Seed(std::string_view key, std::optional<std::string> stored) {
  entries_.insert_or_assign(std::string(key), Entry{std::move(stored), false});
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
  if (found.has_value() && found->type != type) return InvalidArgument(kWrongType);
  return found;
}

void DataView::Put(std::string_view key, std::string stored) {
  entries_.insert_or_assign(std::string(key), Entry{std::move(stored), true});
}

void DataView::Delete(std::string_view key) {
  entries_.insert_or_assign(std::string(key), Entry{std::nullopt, true});
}

}  // namespace rampart::proxy
