#include "wal/format.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rampart::wal {
namespace {

SegmentHeader SampleHeader() {
  SegmentHeader h;
  h.kind = SegmentKind::kCheckpoint;
  h.seq = 42;
  h.first_lsn = 1000;
  h.prev_seq = 41;
  h.prev_end = 123456;
  h.checkpoint = 40;
  h.part = 2;
  h.identity = Identity{"prod", 3, 7, 8};
  return h;
}

std::span<const std::byte> Bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

TEST(SegmentHeaderTest, RoundTripsAndRefusesTornOrForeignHeaders) {
  std::vector<std::byte> block(kSegmentHeaderBytes, std::byte{0x77});
  EncodeSegmentHeader(SampleHeader(), block);
  auto h = DecodeSegmentHeader(block);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(*h, SampleHeader());
  EXPECT_EQ(block.back(), std::byte{0});  // the rest of the block is zeroed

  // Any flipped bit of the header is a torn write.
  for (size_t at : {8u, 20u, 70u, 80u, 205u}) {
    std::vector<std::byte> torn = block;
    torn[at] ^= std::byte{0x04};
    EXPECT_EQ(DecodeSegmentHeader(torn).status().code(), StatusCode::kCorruption) << at;
  }
  EXPECT_EQ(DecodeSegmentHeader(std::vector<std::byte>(kSegmentHeaderBytes)).status().code(),
            StatusCode::kNotFound);

  EXPECT_TRUE(CheckIdentity(*h, Identity{"prod", 3, 7, 8}, "seg").ok());
  Status other = CheckIdentity(*h, Identity{"prod", 3, 7, 16}, "/d/seg-2a");
  EXPECT_EQ(other.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.message().find("/d/seg-2a belongs to cluster \"prod\" node 3 partition 7 of 8"),
            std::string_view::npos)
      << other.ToString();
}

TEST(RecordTest, FramesParsesAndRestamps) {
  const std::string a = "hello", b = " world!";
  const std::span<const std::byte> body[] = {Bytes(a), Bytes(b)};
  std::vector<std::byte> out;
  EXPECT_EQ(FrameRecord(out, 9, 77, 3, body), FramedBytes(12));
  EXPECT_EQ(out.size(), kRecordHeaderBytes + 16);
  auto r = ParseRecord(out, 9);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->lsn, 77u);
  EXPECT_EQ(r->type, 3);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r->body.data()), r->body.size()), a + b);
  EXPECT_EQ(r->framed_bytes, out.size());

  // Another segment's record is not this segment's; a cut or flipped one is corrupt.
  EXPECT_EQ(ParseRecord(out, 10).status().code(), StatusCode::kNotFound);
  for (size_t cut = kRecordHeaderBytes; cut < out.size(); ++cut) {
    EXPECT_EQ(ParseRecord(std::span(out).first(cut), 9).status().code(), StatusCode::kCorruption)
        << cut;
  }
  std::vector<std::byte> flipped = out;
  flipped[kRecordHeaderBytes + 1] ^= std::byte{1};
  EXPECT_EQ(ParseRecord(flipped, 9).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseRecord(std::vector<std::byte>(64), 9).status().code(), StatusCode::kNotFound);

  RestampRecord(out, 10);
  EXPECT_EQ(ParseRecord(out, 9).status().code(), StatusCode::kNotFound);
  r = ParseRecord(out, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->lsn, 77u);
}

}  // namespace
}  // namespace rampart::wal
