#include "storage/protocol.h"

#include <gtest/gtest.h>

namespace rampart::storage::wire {
namespace {

TEST(StorageProtocol, RequestsRoundTrip) {
  std::vector<std::byte> m;
  const std::vector<std::byte> desc = {std::byte{1}, std::byte{2}, std::byte{3}};
  AppendHello(m, 9, desc);
  AppendRead(m, 10, 4096, 512, 1 << 20);
  AppendWrite(m, 11, 1ull << 40, 65536, 8192);
  AppendFlush(m, 12);
  auto frames = SplitFrames(m);
  ASSERT_TRUE(frames.ok()) << frames.status().ToString();
  ASSERT_EQ(frames->size(), 4u);

  auto hello = DecodeRequest((*frames)[0]);
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->type, MsgType::kHello);
  EXPECT_EQ(hello->request_id, 9u);
  EXPECT_TRUE(std::equal(hello->descriptor.begin(), hello->descriptor.end(), desc.begin(),
                         desc.end()));

  auto read = DecodeRequest((*frames)[1]);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->type, MsgType::kRead);
  EXPECT_EQ(read->request_id, 10u);
  EXPECT_EQ(read->offset, 4096u);
  EXPECT_EQ(read->length, 512u);
  EXPECT_EQ(read->buffer_offset, 1u << 20);

  auto write = DecodeRequest((*frames)[2]);
  ASSERT_TRUE(write.ok());
  EXPECT_EQ(write->type, MsgType::kWrite);
  EXPECT_EQ(write->offset, 1ull << 40);
  EXPECT_EQ(write->length, 65536u);

  auto flush = DecodeRequest((*frames)[3]);
  ASSERT_TRUE(flush.ok());
  EXPECT_EQ(flush->type, MsgType::kFlush);
  EXPECT_EQ(flush->request_id, 12u);
}

TEST(StorageProtocol, RepliesRoundTrip) {
  std::vector<std::byte> m;
  DeviceInfo info{.device_bytes = 1ull << 30, .block_bytes = 4096, .max_io_bytes = 1 << 20,
                  .alignment = 4096, .queue_depth = 64};
  AppendReply(m, static_cast<uint8_t>(MsgType::kHello), 1, 0, &info);
  AppendReply(m, static_cast<uint8_t>(MsgType::kRead), 2, 4096);
  AppendErrorReply(m, static_cast<uint8_t>(MsgType::kWrite), 3, InvalidArgument("out of range"));
  AppendErrorReply(m, 77, 0, InvalidArgument(std::string(5000, 'x')));
  auto replies = DecodeReplies(m);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 4u);
  EXPECT_TRUE((*replies)[0].ok());
  EXPECT_EQ((*replies)[0].info, info);
  EXPECT_EQ((*replies)[1].bytes, 4096u);
  EXPECT_EQ((*replies)[1].request_id, 2u);
  EXPECT_EQ((*replies)[2].status, StatusCode::kInvalidArgument);
  EXPECT_EQ((*replies)[2].error, "out of range");
  EXPECT_EQ((*replies)[2].ToStatus().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*replies)[3].raw_type, 77);
  EXPECT_EQ((*replies)[3].error.size(), kMaxErrorBytes);
}

TEST(StorageProtocol, TruncationIsCorruptionAtEveryLength) {
  std::vector<std::byte> m;
  AppendRead(m, 10, 4096, 512, 0);
  AppendFlush(m, 12);
  for (size_t n = 0; n < m.size(); ++n) {
    if (n == kFrameHeaderBytes + kIoBodyBytes) continue;  // a whole first frame
    auto frames = SplitFrames(std::span<const std::byte>(m.data(), n));
    EXPECT_FALSE(frames.ok()) << n;
    if (!frames.ok()) EXPECT_EQ(frames.status().code(), StatusCode::kCorruption);
  }
  std::vector<std::byte> r;
  AppendReply(r, static_cast<uint8_t>(MsgType::kHello), 1, 0, nullptr);  // no info: bad
  EXPECT_FALSE(DecodeReplies(r).ok());
}

TEST(StorageProtocol, BadRequestsAreInvalidArgumentButFramed) {
  std::vector<std::byte> m;
  AppendRead(m, 10, 0, 512, 0);
  m[0] = std::byte{42};  // unknown type
  AppendFlush(m, 12);
  m[kFrameHeaderBytes + kIoBodyBytes + 1] = std::byte{1};  // flags on the FLUSH
  auto frames = SplitFrames(m);
  ASSERT_TRUE(frames.ok());
  ASSERT_EQ(frames->size(), 2u);
  EXPECT_EQ((*frames)[0].request_id, 10u);  // still answerable
  auto a = DecodeRequest((*frames)[0]);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  auto b = DecodeRequest((*frames)[1]);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);

  // A READ body of the wrong size.
  std::vector<std::byte> s;
  AppendFlush(s, 5);
  s[0] = std::byte{static_cast<uint8_t>(MsgType::kRead)};
  auto f = SplitFrames(s);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(DecodeRequest((*f)[0]).ok());
}

}  // namespace
}  // namespace rampart::storage::wire
