// Little-endian integers in byte strings, as rampart's stored formats and
// Redis's DUMP and HyperLogLog formats write them. Header-only: the fuzz
// targets compile a few sources without the libraries.
//
//   PutLittleEndian(out, expire_at_ms, 8);
//   uint64_t id = LoadLittleEndian(payload.substr(8), 8);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rampart {

// Appends the low `bytes` bytes of v, least significant first. REQUIRES: bytes <= 8.
inline void PutLittleEndian(std::string& out, uint64_t v, size_t bytes) {
  for (size_t n = 0; n < bytes; ++n) out.push_back(static_cast<char>(v >> (8 * n)));
}

// The first `bytes` bytes of `in`, least significant first.
// REQUIRES: bytes <= 8 and bytes <= in.size().
inline uint64_t LoadLittleEndian(std::string_view in, size_t bytes) {
  uint64_t v = 0;
  for (size_t n = bytes; n-- > 0;) v = v << 8 | static_cast<uint8_t>(in[n]);
  return v;
}

}  // namespace rampart
