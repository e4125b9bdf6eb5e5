// Redis's DUMP payload: the serialized value that DUMP answers and RESTORE
// takes — one value in Redis's RDB object encoding, then the RDB version (2
// bytes, little-endian) and a CRC-64 (Jones, Redis's crc64) of everything
// before it (8 bytes, little-endian). docs/proxy.md, "DUMP and RESTORE", says
// which encodings are read and which are written.
//
//   std::string payload = EncodeDumpPayload(value);          // DUMP
//   RAMPART_ASSIGN_OR_RETURN(DumpedValue v, DecodeDumpPayload(payload));  // RESTORE
//
// The format is Redis's, not rampart's: payloads travel between rampart and
// redis-server both ways (tests/test_proxy_dump.py checks it against a real
// redis-server 7.0).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace rampart::proxy {

// A value as DUMP and RESTORE carry it, in the Redis types rampart serves.
struct DumpedValue {
  enum class Type : uint8_t { kString, kList, kSet, kHash, kZset };
  Type type = Type::kString;
  std::string string;                                       // kString
  std::vector<std::string> elements;                        // kList (in order), kSet
  std::vector<std::pair<std::string, std::string>> fields;  // kHash: field, value
  std::vector<std::pair<std::string, double>> scored;       // kZset: member, score
};

// The RDB version DUMP writes: Redis 7.0's (10), so that redis-server 7.0
// and later RESTORE what rampart dumps.
inline constexpr uint16_t kDumpRdbVersion = 10;
// The newest RDB version RESTORE reads: Redis 7.2's (11), whose only new
// object type is the listpack set.
inline constexpr uint16_t kRestoreMaxRdbVersion = 11;
// The most a payload decodes to by default: its strings' and elements'
// bytes, 32 more for each (LZF and tiny elements make a value much larger
// than its payload). Twice what one command writes to a partition by default
// (transport.max_message_size, 64 MiB): RESTORE could not write more.
inline constexpr uint64_t kMaxRestoredBytes = uint64_t{128} << 20;

// The payload of `v`, in the plain RDB encodings every Redis since 2.x reads:
// a string (type 0), list (1), set (2), hash (4), sorted set with binary
// scores (5); strings as length and bytes, never compressed.
std::string EncodeDumpPayload(const DumpedValue& v);

// The value of a payload that Redis 7.0 or 7.2 (or rampart) dumped: every
// encoding those write — strings as bytes, integers or LZF-compressed;
// quicklists of listpacks or ziplists; listpack, ziplist, zipmap and intset
// collections; hash tables and skiplists — and the older plain ones. Integers
// stored in those encodings come back as their decimal strings.
// Errors are Redis's replies, as InvalidArgument:
//  - "ERR DUMP payload version or checksum are wrong": shorter than the
//    footer, an RDB version over kRestoreMaxRdbVersion, a CRC mismatch;
//  - "ERR Bad data format": anything else wrong — truncated or trailing
//    bytes, a broken encoding, an empty collection, a set member, hash field
//    or sorted-set member twice, a NaN score — and, with a reason after it,
//    the types rampart does not serve (streams, modules);
//  - "ERR rampart: the DUMP payload decodes to more than N bytes …" past
//    `max_decoded_bytes` (counted as for kMaxRestoredBytes), before it is
//    allocated.
Result<DumpedValue> DecodeDumpPayload(std::string_view payload,
                                      uint64_t max_decoded_bytes = kMaxRestoredBytes);

// Appends the footer of a payload to `body` (a value in the RDB object
// encoding): the RDB version and the CRC-64 of everything before it.
void AppendDumpFooter(std::string& body, uint16_t rdb_version);

// Redis's crc64(0, bytes): CRC-64/Jones, reflected, no final xor.
uint64_t RedisCrc64(std::string_view bytes);

}  // namespace rampart::proxy
