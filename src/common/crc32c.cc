#include "common/crc32c.h"

#include <isa-l/crc.h>

#include <algorithm>

namespace rampart {

uint32_t Crc32cExtend(uint32_t state, const void* data, size_t len) {
  // crc32_iscsi takes an int length; chunk so any size_t works.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (len > 0) {
    const size_t n = std::min<size_t>(len, size_t{1} << 30);
    state = crc32_iscsi(p, static_cast<int>(n), state);
    p += n;
    len -= n;
  }
  return state;
}

}  // namespace rampart
