// Byte sizes as people write them: "64MiB", "4KiB", "1GB", "512".
//
//   Result<uint64_t> ring = ParseSize("1MiB");   // 1048576
//   FormatSize(1 << 20);                         // "1MiB"
//
// Units (case-insensitive, optional space before the unit):
//   B; KiB, MiB, GiB, TiB (powers of 1024); KB, MB, GB, TB (powers of 1000).
// The number is a non-negative decimal integer; bare "K"/"M"/"G" are rejected
// because they are ambiguous between the two families.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace rampart {

inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// InvalidArgument naming the text and what is wrong with it on failure,
// e.g. `"12XB": unknown unit "XB" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)`.
Result<uint64_t> ParseSize(std::string_view text);

// An exact spelling in the largest unit that divides `bytes`, binary before
// decimal: "0B", "512B", "4KiB", "64MiB", "1GB", "1500B".
// ParseSize(FormatSize(n)) == n for every n.
std::string FormatSize(uint64_t bytes);

}  // namespace rampart
