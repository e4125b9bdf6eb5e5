#include "common/size.h"

#include <array>
#include <cctype>

namespace rampart {
namespace {

struct Unit {
  std::string_view name;
  uint64_t factor;
};

// Largest first so FormatSize picks the shortest spelling.
constexpr std::array<Unit, 9> kUnits = {{
    {"TiB", uint64_t{1} << 40},
    {"TB", 1000ull * 1000 * 1000 * 1000},
    {"GiB", uint64_t{1} << 30},
    {"GB", 1000ull * 1000 * 1000},
    {"MiB", uint64_t{1} << 20},
    {"MB", 1000ull * 1000},
    {"KiB", uint64_t{1} << 10},
    {"KB", 1000},
    {"B", 1},
}};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  auto fail = [&](auto&&... why) {
    return InvalidArgument("\"", text, "\": ", why...);
  };
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  if (i == text.size()) return fail("empty size");
  if (text[i] == '-') return fail("sizes cannot be negative");
  if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
    return fail("expected a number followed by a unit (B, KiB, MiB, GiB, KB, MB, GB)");
  }
  uint64_t number = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (number > (UINT64_MAX - digit) / 10) return fail("too large");
    number = number * 10 + digit;
  }
  if (i < text.size() && (text[i] == '.' || text[i] == ',')) {
    return fail("fractions are not supported; use a smaller unit (e.g. 1536KiB)");
  }
  if (i < text.size() && text[i] == ' ') ++i;
  std::string_view unit = text.substr(i);
  while (!unit.empty() && unit.back() == ' ') unit.remove_suffix(1);
  if (unit.empty()) return number;  // plain bytes
  for (const Unit& u : kUnits) {
    if (!EqualsIgnoreCase(unit, u.name)) continue;
    if (number != 0 && number > UINT64_MAX / u.factor) return fail("too large");
    return number * u.factor;
  }
  return fail("unknown unit \"", unit, "\" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
}

std::string FormatSize(uint64_t bytes) {
  if (bytes == 0) return "0B";
  for (const Unit& u : kUnits) {
    if (bytes % u.factor == 0) return StrCat(bytes / u.factor, u.name);
  }
  return StrCat(bytes, "B");  // unreachable: the last unit is 1
}

}  // namespace rampart
