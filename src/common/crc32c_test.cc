#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace rampart {
namespace {

TEST(Crc32cTest, StandardCheckValueAndPiecesEqualTheWhole) {
  EXPECT_EQ(Crc32c(std::string_view("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string_view()), 0u);
  const std::string text = "the quick brown fox jumps over the lazy dog";
  uint32_t state = kCrc32cStart;
  state = Crc32cExtend(state, text.data(), 10);
  state = Crc32cExtend(state, text.data() + 10, text.size() - 10);
  EXPECT_EQ(Crc32cFinish(state), Crc32c(text));
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  EXPECT_EQ(Crc32c(std::span<const std::byte>(bytes)), Crc32c(text));
}

}  // namespace
}  // namespace rampart
