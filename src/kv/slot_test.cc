#include "kv/slot.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace rampart::kv {
namespace {

// An 8-byte aligned buffer holding one written slot.
struct SlotBuffer {
  explicit SlotBuffer(size_t bytes) : words((bytes + 7) / 8 + 8, 0) {}
  std::byte* data() { return reinterpret_cast<std::byte*>(words.data()); }
  std::vector<uint64_t> words;
};

struct Written {
  SlotBuffer buf;
  size_t bytes;
  std::span<const std::byte> span() { return {buf.data(), bytes}; }
};

Written Write(uint64_t ts, uint32_t gen, std::string_view key, std::string_view value,
              std::string_view meta, uint32_t flags = kSlotValid | kSlotCommitted) {
  const size_t bytes = SlotBytes(key.size(), value.size(), meta.size());
  Written w{SlotBuffer(bytes), bytes};
  WriteSlot(w.buf.data(), {.ts = ts, .gen = gen, .flags = flags, .key = key,
                           .value = value, .metadata = meta});
  return w;
}

TEST(SlotTest, SlotBytesPadsTheBodyToEightBytes) {
  EXPECT_EQ(SlotBytes(0, 0, 0), 48u);
  EXPECT_EQ(SlotBytes(1, 0, 0), 56u);
  EXPECT_EQ(SlotBytes(3, 5, 0), 56u);
  EXPECT_EQ(SlotBytes(3, 5, 1), 64u);
  EXPECT_EQ(SlotBytes(10, 1000, 20) % 8, 0u);
}

TEST(SlotTest, WriteThenValidateRoundTrips) {
  const std::string meta = EncodeSiblings(std::vector<std::string>{"b", "cc"});
  Written w = Write(42, 7, "key", "value", meta);
  auto v = ValidateSlot(w.span(), "key", 7);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->ts, 42u);
  EXPECT_EQ(v->gen, 7u);
  EXPECT_EQ(v->key, "key");
  EXPECT_EQ(v->value, "value");
  EXPECT_EQ(v->metadata, meta);
  EXPECT_TRUE(v->valid());
  EXPECT_TRUE(v->committed());
  EXPECT_FALSE(v->tombstone());
  EXPECT_EQ(v->slot_bytes, w.bytes);
  auto siblings = DecodeSiblings(v->metadata);
  ASSERT_TRUE(siblings.ok());
  EXPECT_EQ(*siblings, (std::vector<std::string_view>{"b", "cc"}));
}

TEST(SlotTest, HeaderLayoutIsLittleEndianAtTheDocumentedOffsets) {
  Written w = Write(0x0102030405060708ull, 0x0a0b0c0d, "k", "vv", "", kSlotTombstone);
  const auto* b = reinterpret_cast<const uint8_t*>(w.buf.data());
  EXPECT_EQ(b[0], 0x08);
  EXPECT_EQ(b[7], 0x01);
  EXPECT_EQ(b[8], 0x0d);
  EXPECT_EQ(b[12], 1);   // key_len
  EXPECT_EQ(b[16], 2);   // val_len
  EXPECT_EQ(b[20], 0);   // meta_len
  EXPECT_EQ(b[24], kSlotTombstone);
  EXPECT_EQ(std::memcmp(b + 32, "kvv", 3), 0);
  // Trailer at 32 + 8 (body padded to 8): ts, gen, zero.
  EXPECT_EQ(b[40], 0x08);
  EXPECT_EQ(b[48], 0x0d);
  EXPECT_EQ(b[52] | b[53] | b[54] | b[55], 0);
  uint32_t crc;
  std::memcpy(&crc, b + kSlotCrcOffset, 4);
  EXPECT_EQ(crc, SlotCrc(0x0102030405060708ull, 0x0a0b0c0d, "k", "vv", ""));
}

TEST(SlotTest, FlagsAreNotCoveredByTheCrc) {
  Written w = Write(5, 1, "k", "v", "", 0);
  EXPECT_EQ(ValidateSlot(w.span(), "k", 1).status().code(), StatusCode::kNotFound);
  StoreSlotFlags(w.buf.data(), kSlotValid | kSlotCommitted);
  EXPECT_TRUE(ValidateSlot(w.span(), "k", 1).ok());
  EXPECT_EQ(LoadSlotFlags(w.buf.data()), kSlotValid | kSlotCommitted);
}

TEST(SlotTest, RejectsTornRead) {
  Written w = Write(9, 3, "key", "value", "");
  uint64_t other_ts = 10;
  std::memcpy(w.buf.data() + kSlotTsOffset, &other_ts, 8);  // header from a newer write
  auto v = ValidateSlot(w.span(), "key", 3);
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(v.status().message().starts_with("torn read")) << v.status().ToString();

  Written w2 = Write(9, 3, "key", "value", "");
  uint32_t other_gen = 4;  // trailer gen from another use of the slot
  std::memcpy(w2.buf.data() + w2.bytes - kSlotTrailerBytes + 8, &other_gen, 4);
  v = ValidateSlot(w2.span(), "key", 3);
  EXPECT_TRUE(v.status().message().starts_with("torn read")) << v.status().ToString();
}

TEST(SlotTest, RejectsBadCrc) {
  Written w = Write(9, 3, "key", "value", "");
  w.buf.data()[kSlotHeaderBytes + 3 + 2] ^= std::byte{0x01};  // a value byte
  auto v = ValidateSlot(w.span(), "key", 3);
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(v.status().message().starts_with("bad crc")) << v.status().ToString();
}

TEST(SlotTest, RejectsWrongKeyStaleGenClearedValidAndShortReads) {
  Written w = Write(9, 3, "key", "value", "");
  auto v = ValidateSlot(w.span(), "kez", 3);
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(v.status().message().starts_with("key mismatch")) << v.status().ToString();

  v = ValidateSlot(w.span(), "key", 2);
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(v.status().message().starts_with("stale gen")) << v.status().ToString();

  StoreSlotFlags(w.buf.data(), kSlotCommitted);
  v = ValidateSlot(w.span(), "key", 3);
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(v.status().message().starts_with("superseded")) << v.status().ToString();

  v = ValidateSlot(w.span().first(40), "key", 3);
  EXPECT_TRUE(v.status().message().starts_with("short read")) << v.status().ToString();

  StoreSlotFlags(w.buf.data(), kSlotCommitted | kSlotValid);
  v = ValidateSlot(w.span().first(w.bytes - 8), "key", 3);  // client read too little
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(v.status().message().starts_with("lengths")) << v.status().ToString();
}

TEST(SlotTest, GarbageLengthsAreRejectedWithoutReadingPastTheBuffer) {
  Written w = Write(9, 3, "key", "value", "");
  uint32_t huge = 0xFFFFFFFFu;
  std::memcpy(w.buf.data() + kSlotValLenOffset, &huge, 4);
  std::memcpy(w.buf.data() + kSlotMetaLenOffset, &huge, 4);
  EXPECT_EQ(ValidateSlot(w.span(), "key", 3).status().code(), StatusCode::kCorruption);
}

TEST(SlotTest, SiblingsRoundTripAndMalformedMetadataIsCorruption) {
  std::vector<std::string> keys = {"", "a", std::string(300, 'x')};
  const std::string enc = EncodeSiblings(keys);
  EXPECT_EQ(enc.size(), EncodedSiblingsBytes(keys));
  auto dec = DecodeSiblings(enc);
  ASSERT_TRUE(dec.ok());
  ASSERT_EQ(dec->size(), 3u);
  EXPECT_EQ((*dec)[2], keys[2]);
  EXPECT_TRUE(DecodeSiblings("")->empty());
  EXPECT_EQ(EncodeSiblings(std::vector<std::string>{}).size(), 4u);

  EXPECT_FALSE(DecodeSiblings(enc.substr(0, enc.size() - 1)).ok());
  EXPECT_FALSE(DecodeSiblings(enc + "z").ok());
  EXPECT_FALSE(DecodeSiblings("ab").ok());
  std::string lying = enc;
  lying[0] = 100;  // count larger than the bytes allow
  EXPECT_EQ(DecodeSiblings(lying).status().code(), StatusCode::kCorruption);
}

TEST(SlotTest, EmptyKeyValueAndMetadata) {
  Written w = Write(1, 1, "", "", "");
  auto v = ValidateSlot(w.span(), "", 1);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->slot_bytes, 48u);
  SlotView local = ReadLocalSlot(w.buf.data());
  EXPECT_EQ(local.ts, 1u);
  EXPECT_TRUE(local.key.empty());
}

}  // namespace
}  // namespace rampart::kv
