// Chunked strings: a string too long for one kv value (its stored form over
// kv.max_value_bytes) is kept as a header at the user's key and its bytes in
// chunks at internal keys next to it (internal_keys.h), all written in one
// write set and read in one RAMP read, so a reader sees a change whole or not
// at all. DataView does the splitting and joining (Put, Find): commands see
// a plain string; only the ones that need no more than the header (STRLEN,
// TTL, TYPE, EXPIRE, DEL ...) look at it, through DataView::FindStored.
//
// ---- Stored format: persisted in the kv tier — DO NOT CHANGE ----------------
// (docs/collections.md, "Chunked strings"). Integers little-endian.
//
//   header, at the user's key (the first 9 bytes are every value's header,
//   value_codec.h):
//     byte 0       'B'
//     bytes 1..8   expire_at: u64 unix milliseconds, 0 = never
//     bytes 9..16  id: u64, never 0 (as a collection's id: old chunks of
//                  another id are the sweeper's)
//     bytes 17..24 length: u64, the string's bytes
//     bytes 25..28 chunk_bytes: u32, never 0
//   chunk i (0 <= i < ceil(length / chunk_bytes)), at PageKey(id, i + 1, user
//   key): the string's bytes [i * chunk_bytes, min((i + 1) * chunk_bytes,
//   length)), as they are — every chunk but the last is chunk_bytes long.
// ------------------------------------------------------------------------------
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {

struct ChunkedHeader {
  uint64_t expire_at_ms = 0;
  uint64_t id = 0;
  uint64_t length = 0;
  uint32_t chunk_bytes = 0;
};

// Corruption when `v` is not a well-formed chunked header (wrong type, a
// payload of another size, id or chunk_bytes 0).
Result<ChunkedHeader> DecodeChunkedHeader(const StoredValue& v);
// The whole stored header.
std::string EncodeChunkedHeader(const ChunkedHeader& h);
// The header the stored bytes of a key are, if they are a well-formed one;
// nullopt for anything else (another type, damage).
std::optional<ChunkedHeader> ChunkedHeaderOf(std::string_view stored);

uint64_t ChunkCount(const ChunkedHeader& h);
// The key of chunk `index`. REQUIRES: index < ChunkCount(h).
std::string ChunkKey(const ChunkedHeader& h, uint64_t index, std::string_view user_key);
// The length chunk `index` must have. REQUIRES: index < ChunkCount(h).
uint64_t ChunkLength(const ChunkedHeader& h, uint64_t index);

// The chunk size for strings whose stored form is over `max_value_bytes`:
// the largest multiple of 4 KiB that fits (or max_value_bytes itself when it
// is under 4 KiB); 0 (never chunk) for a limit of 0.
uint32_t ChunkBytesFor(uint64_t max_value_bytes);

}  // namespace rampart::proxy
