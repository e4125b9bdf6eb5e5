#include "proxy/collection_scan.h"

#include <cctype>
#include <limits>

#include "proxy/commands_internal.h"  // EqualsNoCase
#include "proxy/glob.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {

uint64_t CursorOf(std::string_view key) {
  uint64_t cursor = 0;
  for (size_t i = 0; i < 8; ++i) {
    cursor = cursor << 8 | (i < key.size() ? static_cast<uint8_t>(key[i]) : 0);
  }
  return cursor;
}

std::string CursorKey(uint64_t cursor) {
  std::string key;
  for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>(cursor >> shift));
  // A key k with CursorOf(k) >= cursor either starts with these bytes up to
  // the last non-zero one, or is greater at one of them: exactly k >= key.
  while (!key.empty() && key.back() == '\0') key.pop_back();
  return key;
}

Result<ScanPage> ScanTree(PageTree& tree, uint64_t cursor, uint64_t count,
                          std::optional<std::string_view> match) {
  const uint64_t size = tree.size();
  RAMPART_ASSIGN_OR_RETURN(const uint64_t first, tree.LowerRank(CursorKey(cursor)));
  ScanPage page;
  if (first >= size) return page;  // cursor 0: over
  // `count` entries from `first` on, then the rest of the run of keys that
  // share the last one's cursor: the batch ends where the cursors grow past
  // it. The first key's cursor is >= `cursor`, so the next one is greater.
  const uint64_t counted = count >= size - first ? size : first + count;
  RAMPART_RETURN_IF_ERROR(tree.Prefetch(first, counted));
  RAMPART_ASSIGN_OR_RETURN(const TreeEntry last, tree.At(counted - 1));
  const uint64_t last_cursor = CursorOf(last.key);
  uint64_t end = size;
  if (last_cursor != std::numeric_limits<uint64_t>::max()) {
    RAMPART_ASSIGN_OR_RETURN(end, tree.LowerRank(CursorKey(last_cursor + 1)));
    if (end < size) page.cursor = last_cursor + 1;  // never 0: it follows last_cursor
  }
  if (end > counted) RAMPART_RETURN_IF_ERROR(tree.Prefetch(counted, end));
  RAMPART_RETURN_IF_ERROR(tree.ForEach(first, /*reverse=*/false, [&](uint64_t rank, const TreeEntryRef& e) {
    if (rank >= end) return false;
    if (!match.has_value() || GlobMatch(*match, e.key)) page.entries.push_back({std::string(e.key), std::string(e.value)});
    return true;
  }));
  return page;
}

Result<uint64_t> ParseScanCursor(std::string_view s) {
  s = s.substr(0, s.find('\0'));  // Redis hands strtoul a C string
  const auto invalid = [] { return InvalidArgument("ERR invalid cursor"); };
  if (s.empty()) return uint64_t{0};  // strtoul("") is 0 and ends at the NUL
  if (std::isspace(static_cast<unsigned char>(s[0]))) return invalid();
  const bool negative = s[0] == '-';
  if (s[0] == '-' || s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return invalid();
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return invalid();
    const auto digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return invalid();  // ERANGE
    v = v * 10 + digit;
  }
  return negative ? 0 - v : v;  // strtoul negates in unsigned arithmetic
}

Result<ScanOptions> ParseScanOptions(std::span<const std::string_view> options) {
  ScanOptions o;
  for (size_t n = 0; n < options.size(); n += 2) {
    const bool has_value = n + 1 < options.size();
    if (has_value && internal::EqualsNoCase(options[n], "count")) {
      RAMPART_ASSIGN_OR_RETURN(const int64_t count, ParseInt64(options[n + 1]));
      if (count < 1) return InvalidArgument("ERR syntax error");
      o.count = static_cast<uint64_t>(count);
    } else if (has_value && internal::EqualsNoCase(options[n], "match")) {
      o.match = options[n + 1];
      if (*o.match == "*") o.match.reset();  // matches everything, "" too
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  return o;
}

}  // namespace rampart::proxy
