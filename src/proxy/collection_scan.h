// Cursor scans over a keyed PageTree (collection.h): SSCAN, HSCAN and ZSCAN
// (over a sorted set's kByMember tree), with Redis's cursor contract.
//
//   RAMPART_ASSIGN_OR_RETURN(uint64_t cursor, ParseScanCursor(args[2]));
//   ... open the collection (a missing key replies an empty scan) ...
//   RAMPART_ASSIGN_OR_RETURN(ScanOptions o, ParseScanOptions(args.subspan(3)));
//   RAMPART_ASSIGN_OR_RETURN(ScanPage page, ScanTree(tree, cursor, o.count, o.match));
//   reply [page.cursor as decimal, page.entries' keys (and values)]
//
// Cursors: Redis's cursors are unsigned 64-bit decimal numbers, 0 to start
// and 0 when the scan is over. Here a cursor is the first 8 bytes of the next
// key to return, as a big-endian number (shorter keys padded with zero
// bytes): CursorOf(key). Keys sort as their cursors do (a <= b gives
// CursorOf(a) <= CursorOf(b)), and the keys whose cursor is >= c are exactly
// the keys >= CursorKey(c). A call returns the keys from CursorKey(cursor)
// on: about `count` of them, and then the rest of the keys sharing the last
// one's 8-byte prefix, so that a batch never ends inside such a run; the next
// cursor is that prefix + 1. Hence every call makes progress (the next cursor
// is greater than the cursor), and Redis's guarantee holds: an element
// present from the first call to the last is returned at least once (an
// element added or removed meanwhile may or may not be; nothing is returned
// twice unless the client restarts). A run of keys sharing 8 bytes is
// returned whole, whatever `count` says (COUNT is a hint in Redis too).
//
// MATCH filters the selected entries (COUNT counts work, not results, as in
// Redis: a call may return nothing and a non-zero cursor).
//
// Missing pages: as every PageTree call, ScanTree fails kUnavailable when a
// page was not read yet (run the command again, see data_view.h); it reads
// the range it returns with Prefetch, one read round per tree level.
//
// Thread-safety: the functions are pure but for the tree they are given.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proxy/page_tree.h"

namespace rampart::proxy {

// The cursor of a key: its first 8 bytes, big-endian, zero-padded.
uint64_t CursorOf(std::string_view key);
// The least key whose cursor is >= `cursor`: its 8 bytes without the
// trailing zero bytes ("" for 0).
std::string CursorKey(uint64_t cursor);

struct ScanPage {
  uint64_t cursor = 0;             // for the next call; 0: the scan is over
  std::vector<TreeEntry> entries;  // the selected entries that match, in key order
};

// One call of a scan of `tree` (keyed; see the top of the file).
// REQUIRES: count >= 1.
Result<ScanPage> ScanTree(PageTree& tree, uint64_t cursor, uint64_t count,
                          std::optional<std::string_view> match);

// A cursor argument as Redis's parseScanCursorOrReply reads it (strtoul):
// decimal digits, optionally after '+' or '-' ("-1" is 2^64 - 1, as strtoul
// wraps it), "" is 0, and the number ends at a NUL byte (Redis sees a C
// string); a leading space, other bytes or more than 64 bits →
// InvalidArgument("ERR invalid cursor").
Result<uint64_t> ParseScanCursor(std::string_view s);

struct ScanOptions {
  uint64_t count = 10;                    // Redis's default
  std::optional<std::string_view> match;  // views the argument; "*" is none
};

// The options after the cursor: "MATCH pattern" and "COUNT n" in any order,
// any case, the last of each counting. COUNT not an integer → "ERR value is
// not an integer or out of range"; below 1, a missing value or another word
// → "ERR syntax error". As in Redis, check them after the key's type (a
// missing key replies an empty scan whatever the options say).
Result<ScanOptions> ParseScanOptions(std::span<const std::string_view> options);

}  // namespace rampart::proxy
