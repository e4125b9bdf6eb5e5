// CRC-32C (Castagnoli, the iSCSI polynomial) through ISA-L, for every
// checksum rampart persists or puts on the wire (slots, the volume intent log,
// the redo log). Crc32c("123456789") == 0xE3069283.
//
//   uint32_t crc = Crc32c(bytes);
//   // or in pieces:
//   uint32_t state = kCrc32cStart;
//   state = Crc32cExtend(state, header);
//   state = Crc32cExtend(state, body);
//   uint32_t crc = Crc32cFinish(state);
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rampart {

inline constexpr uint32_t kCrc32cStart = ~0u;

// Raw ISA-L state after `data`; any length.
uint32_t Crc32cExtend(uint32_t state, const void* data, size_t len);
inline uint32_t Crc32cExtend(uint32_t state, std::span<const std::byte> data) {
  return Crc32cExtend(state, data.data(), data.size());
}
inline uint32_t Crc32cFinish(uint32_t state) { return ~state; }

inline uint32_t Crc32c(std::span<const std::byte> data) {
  return Crc32cFinish(Crc32cExtend(kCrc32cStart, data));
}
inline uint32_t Crc32c(std::string_view data) {
  return Crc32cFinish(Crc32cExtend(kCrc32cStart, data.data(), data.size()));
}

}  // namespace rampart
