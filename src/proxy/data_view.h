// DataView: the keys one command (or one MULTI block) works on — what its read
// round returned, overlaid with the writes it makes, so the commands of a
// block see each other's effects and the block's writes leave as one
// transaction. Values are in the stored format of value_codec.h; expired
// values read as absent.
//
// Thread-safety: belongs to one job of one worker.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {

inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

class DataView {
 public:
  explicit DataView(uint64_t now_ms) : now_ms_(now_ms) {}

  // What the read round returned for key (nullopt: absent).
  void Seed(std::string_view key, std::optional<std::string> stored);

  // The key's live value, nullopt when absent or expired. Corruption when the
  // stored bytes are not in the proxy's format. REQUIRES: key was seeded or
  // written (a command reads only the keys it declared).
  Result<std::optional<StoredValue>> Find(std::string_view key) const;
  // Find, and InvalidArgument(kWrongType) when the key holds another type.
  Result<std::optional<StoredValue>> FindTyped(std::string_view key, ValueType type) const;

  void Put(std::string_view key, std::string stored);
  void Delete(std::string_view key);

  struct Entry {
    std::optional<std::string> stored;  // nullopt: absent (a delete when dirty)
    bool dirty = false;                 // written by the command(s)
  };
  // Every key seen, by key; the dirty ones are the writes.
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
  uint64_t now_ms() const { return now_ms_; }

 private:
  uint64_t now_ms_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace rampart::proxy
