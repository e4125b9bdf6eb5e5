#include "kv/slot.h"

#include "common/crc32c.h"


#include <cstring>

namespace rampart::kv {
namespace {

template <typename T>
T LoadLe(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;  // little-endian host (static_assert in slot.h)
}

template <typename T>
void StoreLe(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(v));
}

uint32_t* WordAt(std::byte* slot, size_t offset) {
  return reinterpret_cast<uint32_t*>(slot + offset);
}

}  // namespace

uint32_t SlotCrc(uint64_t ts, uint32_t gen, std::string_view key,
                 std::string_view value, std::string_view metadata) {
  std::byte head[kSlotCrcCoveredHeader];
  StoreLe<uint64_t>(head + kSlotTsOffset, ts);
  StoreLe<uint32_t>(head + kSlotGenOffset, gen);
  StoreLe<uint32_t>(head + kSlotKeyLenOffset, static_cast<uint32_t>(key.size()));
  StoreLe<uint32_t>(head + kSlotValLenOffset, static_cast<uint32_t>(value.size()));
  StoreLe<uint32_t>(head + kSlotMetaLenOffset, static_cast<uint32_t>(metadata.size()));
  uint32_t state = Crc32cExtend(kCrc32cStart, head, sizeof(head));
  state = Crc32cExtend(state, key.data(), key.size());
  state = Crc32cExtend(state, value.data(), value.size());
  state = Crc32cExtend(state, metadata.data(), metadata.size());
  return Crc32cFinish(state);
}

uint32_t LoadSlotFlags(const std::byte* slot) {
  // atomic_ref needs a non-const object; the load does not modify it.
  auto* word = WordAt(const_cast<std::byte*>(slot), kSlotFlagsOffset);
  return std::atomic_ref<uint32_t>(*word).load(std::memory_order_acquire);
}

void StoreSlotFlags(std::byte* slot, uint32_t flags) {
  std::atomic_ref<uint32_t>(*WordAt(slot, kSlotFlagsOffset))
      .store(flags, std::memory_order_release);
}

uint32_t LoadSlotGen(const std::byte* slot) {
  auto* word = WordAt(const_cast<std::byte*>(slot), kSlotGenOffset);
  return std::atomic_ref<uint32_t>(*word).load(std::memory_order_acquire);
}

void StoreSlotGen(std::byte* slot, uint32_t gen) {
  std::atomic_ref<uint32_t>(*WordAt(slot, kSlotGenOffset))
      .store(gen, std::memory_order_release);
}

void WriteSlot(std::byte* at, const SlotContents& c) {
  const size_t body = c.key.size() + c.value.size() + c.metadata.size();
  const size_t total = SlotBytes(c.key.size(), c.value.size(), c.metadata.size());
  const size_t trailer = total - kSlotTrailerBytes;

  // Body, padding, trailer.
  std::byte* p = at + kSlotHeaderBytes;
  if (!c.key.empty()) std::memcpy(p, c.key.data(), c.key.size());
  p += c.key.size();
  if (!c.value.empty()) std::memcpy(p, c.value.data(), c.value.size());
  p += c.value.size();
  if (!c.metadata.empty()) std::memcpy(p, c.metadata.data(), c.metadata.size());
  std::memset(at + kSlotHeaderBytes + body, 0, trailer - kSlotHeaderBytes - body);
  StoreLe<uint64_t>(at + trailer, c.ts);
  StoreLe<uint32_t>(at + trailer + 8, c.gen);
  StoreLe<uint32_t>(at + trailer + 12, 0);

  // Header.
  StoreLe<uint64_t>(at + kSlotTsOffset, c.ts);
  StoreLe<uint32_t>(at + kSlotKeyLenOffset, static_cast<uint32_t>(c.key.size()));
  StoreLe<uint32_t>(at + kSlotValLenOffset, static_cast<uint32_t>(c.value.size()));
  StoreLe<uint32_t>(at + kSlotMetaLenOffset, static_cast<uint32_t>(c.metadata.size()));
  StoreLe<uint32_t>(at + kSlotCrcOffset,
                    SlotCrc(c.ts, c.gen, c.key, c.value, c.metadata));
  StoreSlotGen(at, c.gen);
  std::atomic_thread_fence(std::memory_order_release);
  StoreSlotFlags(at, c.flags);
}

SlotView ReadLocalSlot(const std::byte* at) {
  SlotView v;
  v.ts = LoadLe<uint64_t>(at + kSlotTsOffset);
  v.gen = LoadSlotGen(at);
  v.flags = LoadSlotFlags(at);
  uint32_t key_len = LoadLe<uint32_t>(at + kSlotKeyLenOffset);
  uint32_t val_len = LoadLe<uint32_t>(at + kSlotValLenOffset);
  uint32_t meta_len = LoadLe<uint32_t>(at + kSlotMetaLenOffset);
  const char* body = reinterpret_cast<const char*>(at + kSlotHeaderBytes);
  v.key = std::string_view(body, key_len);
  v.value = std::string_view(body + key_len, val_len);
  v.metadata = std::string_view(body + key_len + val_len, meta_len);
  v.slot_bytes = SlotBytes(key_len, val_len, meta_len);
  return v;
}

Result<SlotView> ValidateSlot(std::span<const std::byte> bytes,
                              std::string_view expected_key,
                              uint32_t expected_gen) {
  const std::byte* at = bytes.data();
  if (bytes.size() < kSlotHeaderBytes + kSlotTrailerBytes) {
    return Corruption("short read: ", bytes.size(), " bytes, a slot has at least ",
                      kSlotHeaderBytes + kSlotTrailerBytes);
  }
  SlotView v;
  v.ts = LoadLe<uint64_t>(at + kSlotTsOffset);
  v.gen = LoadLe<uint32_t>(at + kSlotGenOffset);
  v.flags = LoadLe<uint32_t>(at + kSlotFlagsOffset);
  if (v.gen != expected_gen) {
    return NotFound("stale gen: slot has gen ", v.gen, ", expected ", expected_gen,
                    " (the slot was reused)");
  }
  const uint64_t key_len = LoadLe<uint32_t>(at + kSlotKeyLenOffset);
  const uint64_t val_len = LoadLe<uint32_t>(at + kSlotValLenOffset);
  const uint64_t meta_len = LoadLe<uint32_t>(at + kSlotMetaLenOffset);
  const uint64_t need = SlotBytes(key_len, val_len, meta_len);
  if (need > bytes.size()) {
    return Corruption("lengths exceed the read: key ", key_len, " + value ", val_len,
                      " + metadata ", meta_len, " need ", need, " bytes, have ",
                      bytes.size());
  }
  const std::byte* trailer = at + need - kSlotTrailerBytes;
  const uint64_t trailer_ts = LoadLe<uint64_t>(trailer);
  const uint32_t trailer_gen = LoadLe<uint32_t>(trailer + 8);
  if (trailer_ts != v.ts || trailer_gen != v.gen) {
    return Corruption("torn read: header ts ", v.ts, " gen ", v.gen,
                      ", trailer ts ", trailer_ts, " gen ", trailer_gen);
  }
  const char* body = reinterpret_cast<const char*>(at + kSlotHeaderBytes);
  v.key = std::string_view(body, key_len);
  v.value = std::string_view(body + key_len, val_len);
  v.metadata = std::string_view(body + key_len + val_len, meta_len);
  v.slot_bytes = need;
  const uint32_t stored_crc = LoadLe<uint32_t>(at + kSlotCrcOffset);
  const uint32_t crc = SlotCrc(v.ts, v.gen, v.key, v.value, v.metadata);
  if (crc != stored_crc) {
    return Corruption("bad crc: computed ", crc, ", slot says ", stored_crc);
  }
  if (v.key != expected_key) {
    return NotFound("key mismatch: slot holds a ", key_len, "-byte key, expected a ",
                    expected_key.size(), "-byte key");
  }
  if (!v.valid()) {
    return NotFound("superseded: slot ts ", v.ts, " is no longer the key's latest version");
  }
  return v;
}

size_t EncodedSiblingsBytes(std::span<const std::string> siblings) {
  size_t n = 4;
  for (const auto& s : siblings) n += 4 + s.size();
  return n;
}

std::string EncodeSiblings(std::span<const std::string> siblings) {
  std::string out;
  out.resize(EncodedSiblingsBytes(siblings));
  auto* p = reinterpret_cast<std::byte*>(out.data());
  StoreLe<uint32_t>(p, static_cast<uint32_t>(siblings.size()));
  p += 4;
  for (const auto& s : siblings) {
    StoreLe<uint32_t>(p, static_cast<uint32_t>(s.size()));
    p += 4;
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  return out;
}

Result<std::vector<std::string_view>> DecodeSiblings(std::string_view metadata) {
  std::vector<std::string_view> out;
  if (metadata.empty()) return out;
  auto* p = reinterpret_cast<const std::byte*>(metadata.data());
  size_t left = metadata.size();
  if (left < 4) return Corruption("metadata: ", left, " bytes, too short for a count");
  const uint32_t count = LoadLe<uint32_t>(p);
  p += 4;
  left -= 4;
  if (count > left / 4) {
    return Corruption("metadata: count ", count, " does not fit in ", left, " bytes");
  }
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (left < 4) return Corruption("metadata: sibling ", i, " length truncated");
    const uint32_t len = LoadLe<uint32_t>(p);
    p += 4;
    left -= 4;
    if (len > left) {
      return Corruption("metadata: sibling ", i, " of ", len, " bytes overruns (",
                        left, " left)");
    }
    out.emplace_back(reinterpret_cast<const char*>(p), len);
    p += len;
    left -= len;
  }
  if (left != 0) return Corruption("metadata: ", left, " trailing bytes");
  return out;
}

}  // namespace rampart::kv
