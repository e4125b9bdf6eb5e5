#include "txn/address_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kv/slot.h"

namespace rampart::txn::internal {
namespace {

namespace wire = kv::wire;

TEST(AddressCacheTest, PutFindEraseAndBound) {
  AddressCache cache(2);
  EXPECT_EQ(cache.Find("a"), nullptr);
  cache.Put("a", {2, 7, wire::SlotAddress{64, 100, 3}});
  ASSERT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(cache.Find("a")->partition, 2u);
  EXPECT_EQ(cache.Find("a")->epoch, 7u);
  EXPECT_EQ(cache.Find("a")->slot, (wire::SlotAddress{64, 100, 3}));
  cache.Put("a", {2, 8, wire::SlotAddress{128, 100, 4}});  // replaced, not added
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Find("a")->slot.gen, 4u);
  cache.Put("b", {0, 1, {}});
  cache.Put("c", {0, 1, {}});  // full: one of a, b makes room
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_NE(cache.Find("c"), nullptr);
  cache.Erase("c");
  cache.Erase("never");
  EXPECT_EQ(cache.Find("c"), nullptr);
  EXPECT_EQ(cache.size(), 1u);
}

// A full cache keeps within its capacity under a stream of new keys, and the
// key just put is always there (room is made from the others).
TEST(AddressCacheTest, StaysWithinCapacityUnderChurn) {
  AddressCache cache(64);
  for (int i = 0; i < 10000; ++i) {
    const std::string key = "key:" + std::to_string(i);
    cache.Put(key, {0, 1, wire::SlotAddress{static_cast<uint64_t>(i) * 64, 64, 1}});
    ASSERT_LE(cache.size(), 64u) << "after " << key;
    const AddressCache::Entry* e = cache.Find(key);
    ASSERT_NE(e, nullptr) << key;
    EXPECT_EQ(e->slot.offset, static_cast<uint64_t>(i) * 64);
  }
  EXPECT_GE(cache.size(), 60u);  // room is made a few entries at a time, not by emptying it
}

// A slot as a kv-node writes it, read back as a GET* client would.
class SlotReadTest : public ::testing::Test {
 protected:
  SlotReadTest() {
    const std::vector<std::string> siblings = {"a", "b"};
    meta_ = kv::EncodeSiblings(siblings);
    bytes_.resize(kv::SlotBytes(1, 5, meta_.size()));
    kv::WriteSlot(bytes_.data(), {.ts = 42, .gen = 3, .flags = kv::kSlotCommitted | kv::kSlotValid,
                                  .key = "a", .value = "hello", .metadata = meta_});
    slot_ = wire::SlotAddress{4096, static_cast<uint32_t>(bytes_.size()), 3};
  }
  Result<wire::GetResult> Parse(std::string_view key = "a") {
    return ParseSlotRead(bytes_, key, slot_, wire::ProtocolLimits());
  }

  std::string meta_;
  std::vector<std::byte> bytes_;
  wire::SlotAddress slot_;
};

TEST_F(SlotReadTest, AcceptedSlotBecomesAGetResult) {
  auto r = Parse();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->found);
  EXPECT_FALSE(r->tombstone);
  EXPECT_EQ(r->ts, 42u);
  EXPECT_EQ(r->value, "hello");
  EXPECT_EQ(r->siblings.ToVector(), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(r->slot, slot_);
}

TEST_F(SlotReadTest, EveryReasonToDistrustASlotIsRefused) {
  slot_.gen = 4;  // reused since it was cached
  EXPECT_EQ(Parse().status().code(), StatusCode::kNotFound);
  slot_.gen = 3;
  EXPECT_EQ(Parse("b").status().code(), StatusCode::kNotFound);  // another key's slot
  kv::StoreSlotFlags(bytes_.data(), kv::kSlotCommitted);          // superseded
  EXPECT_EQ(Parse().status().code(), StatusCode::kNotFound);
  kv::StoreSlotFlags(bytes_.data(), kv::kSlotValid);              // never written so
  EXPECT_EQ(Parse().status().code(), StatusCode::kCorruption);
  kv::StoreSlotFlags(bytes_.data(), kv::kSlotValid | kv::kSlotCommitted);
  ASSERT_TRUE(Parse().ok());
  bytes_[kv::kSlotHeaderBytes + 2] ^= std::byte{1};  // torn value byte
  EXPECT_EQ(Parse().status().code(), StatusCode::kCorruption);
  bytes_[kv::kSlotHeaderBytes + 2] ^= std::byte{1};
  const uint64_t newer = 43;  // trailer of a newer write over the same slot
  std::memcpy(bytes_.data() + bytes_.size() - kv::kSlotTrailerBytes, &newer, 8);
  EXPECT_EQ(Parse().status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(ParseSlotRead(std::span(bytes_).first(20), "a", slot_, wire::ProtocolLimits()).ok());
}

}  // namespace
}  // namespace rampart::txn::internal
