// The NBD wire format: round trips, the exact bytes of a few messages, and
// truncated or garbage input answered with errors.
#include "storage/nbd_protocol.h"

#include <gtest/gtest.h>

namespace rampart::storage::nbd {
namespace {

Buffer Bytes(std::initializer_list<int> values) {
  Buffer out;
  for (int v : values) out.push_back(std::byte(v));
  return out;
}

TEST(NbdProtocol, GreetingIsNbdMagicIHaveOptAndFlags) {
  Buffer m;
  AppendGreeting(m, kFlagFixedNewstyle | kFlagNoZeroes);
  ASSERT_EQ(m.size(), kGreetingBytes);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), 16), "NBDMAGICIHAVEOPT");
  EXPECT_EQ(m[16], std::byte{0});
  EXPECT_EQ(m[17], std::byte{3});
  auto flags = DecodeGreeting(m);
  ASSERT_TRUE(flags.ok()) << flags.status().ToString();
  EXPECT_EQ(*flags, kFlagFixedNewstyle | kFlagNoZeroes);
}

TEST(NbdProtocol, GreetingErrors) {
  Buffer m;
  AppendGreeting(m, 1);
  EXPECT_EQ(DecodeGreeting(std::span(m).first(17)).status().code(), StatusCode::kCorruption);
  m[3] = std::byte{'X'};
  auto bad = DecodeGreeting(m);
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("bad magic"), std::string_view::npos)
      << bad.status().ToString();
}

TEST(NbdProtocol, ClientFlagsRoundTrip) {
  Buffer m;
  AppendClientFlags(m, kClientFlagFixedNewstyle | kClientFlagNoZeroes);
  EXPECT_EQ(m, Bytes({0, 0, 0, 3}));
  EXPECT_EQ(*DecodeClientFlags(m), 3u);
  EXPECT_FALSE(DecodeClientFlags(std::span(m).first(3)).ok());
}

TEST(NbdProtocol, OptionRoundTripAndErrors) {
  Buffer m;
  AppendOption(m, opt::kExportName, AsBytes("disk"));
  ASSERT_EQ(m.size(), kOptionHeaderBytes + 4);
  auto header = DecodeOptionHeader(m);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(header->option, opt::kExportName);
  EXPECT_EQ(header->length, 4u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data() + 16), 4), "disk");

  EXPECT_EQ(DecodeOptionHeader(std::span(m).first(15)).status().code(), StatusCode::kCorruption);
  m[0] = std::byte{0};
  EXPECT_EQ(DecodeOptionHeader(m).status().code(), StatusCode::kCorruption);
}

TEST(NbdProtocol, OptionReplyRoundTrip) {
  Buffer m;
  AppendOptionReply(m, opt::kGo, rep::kErrUnknown, AsBytes("no such export"));
  auto header = DecodeOptionReplyHeader(m);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->option, opt::kGo);
  EXPECT_EQ(header->type, rep::kErrUnknown);
  EXPECT_EQ(header->length, 14u);
  EXPECT_EQ(m.size(), kOptionReplyHeaderBytes + 14);
  // The magic is 0x0003e889045565a9, big-endian.
  EXPECT_EQ(Buffer(m.begin(), m.begin() + 8),
            Bytes({0x00, 0x03, 0xe8, 0x89, 0x04, 0x55, 0x65, 0xa9}));
  EXPECT_FALSE(DecodeOptionReplyHeader(std::span(m).first(19)).ok());
}

TEST(NbdProtocol, InfoRequestRoundTrip) {
  const InfoRequest request{.export_name = "vol0", .info_types = {info::kBlockSize, info::kName}};
  const Buffer data = EncodeInfoRequest(request);
  EXPECT_EQ(data.size(), 4u + 4 + 2 + 4);
  auto decoded = DecodeInfoRequest(data);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, request);

  auto empty = DecodeInfoRequest(EncodeInfoRequest({}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, InfoRequest{});
}

TEST(NbdProtocol, InfoRequestErrors) {
  Buffer data = EncodeInfoRequest({.export_name = "vol0", .info_types = {3}});
  // Too short for even the fixed fields.
  EXPECT_EQ(DecodeInfoRequest(std::span(data).first(5)).status().code(),
            StatusCode::kInvalidArgument);
  // The information list does not fill the rest exactly.
  EXPECT_EQ(DecodeInfoRequest(std::span(data).first(data.size() - 1)).status().code(),
            StatusCode::kInvalidArgument);
  Buffer longer = data;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(DecodeInfoRequest(longer).ok());
  // A name length that runs past the data, and a huge one.
  Buffer lying = data;
  lying[3] = std::byte{200};
  auto past = DecodeInfoRequest(lying);
  EXPECT_EQ(past.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(past.status().message().find("does not fit"), std::string_view::npos);
  lying[0] = std::byte{0xff};
  EXPECT_FALSE(DecodeInfoRequest(lying).ok());
  // A name longer than the spec's 4096 bytes, even when it fits.
  const Buffer huge = EncodeInfoRequest({.export_name = std::string(5000, 'x')});
  auto too_long = DecodeInfoRequest(huge);
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("longer than"), std::string_view::npos);
}

// Option reply data: everything after the 20-byte header.
std::span<const std::byte> ReplyData(const Buffer& m) {
  return std::span(m).subspan(kOptionReplyHeaderBytes);
}

TEST(NbdProtocol, InfoRepliesRoundTrip) {
  Buffer m;
  AppendInfoExport(m, opt::kGo, {.size = 1ull << 40, .transmission_flags = tx::kHasFlags | 4});
  auto header = DecodeOptionReplyHeader(m);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->type, rep::kInfo);
  EXPECT_EQ(header->length, 12u);
  EXPECT_EQ(*DecodeInfoType(ReplyData(m)), info::kExport);
  auto e = DecodeInfoExport(ReplyData(m));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(*e, (ExportInfo{.size = 1ull << 40, .transmission_flags = 5}));
  EXPECT_FALSE(DecodeInfoBlockSize(ReplyData(m)).ok());  // wrong type and size

  m.clear();
  const BlockSizes sizes{.minimum = 1, .preferred = 4096, .maximum = 32u << 20};
  AppendInfoBlockSize(m, opt::kInfo, sizes);
  EXPECT_EQ(DecodeOptionReplyHeader(m)->length, 14u);
  auto s = DecodeInfoBlockSize(ReplyData(m));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, sizes);
  EXPECT_FALSE(DecodeInfoExport(ReplyData(m)).ok());
  EXPECT_FALSE(DecodeInfoBlockSize(ReplyData(m).first(13)).ok());

  m.clear();
  AppendInfoName(m, opt::kGo, "vol0");
  EXPECT_EQ(*DecodeInfoType(ReplyData(m)), info::kName);
  EXPECT_EQ(DecodeOptionReplyHeader(m)->length, 6u);
  EXPECT_FALSE(DecodeInfoType({}).ok());
}

TEST(NbdProtocol, ServerReplyRoundTrip) {
  Buffer m;
  AppendServer(m, opt::kList, "vol0");
  auto header = DecodeOptionReplyHeader(m);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->type, rep::kServer);
  EXPECT_EQ(header->length, 8u);
  EXPECT_EQ(*DecodeServer(ReplyData(m)), "vol0");
  Buffer lying(ReplyData(m).begin(), ReplyData(m).end());
  lying[3] = std::byte{9};
  EXPECT_FALSE(DecodeServer(lying).ok());
  EXPECT_FALSE(DecodeServer(std::span(lying).first(3)).ok());
}

TEST(NbdProtocol, ExportNameReplyWithAndWithoutZeroes) {
  const ExportInfo e{.size = 64u << 20, .transmission_flags = tx::kHasFlags | tx::kReadOnly};
  Buffer m;
  AppendExportNameReply(m, e, /*no_zeroes=*/false);
  EXPECT_EQ(m.size(), kExportNameReplyBytes + kExportNameZeroBytes);
  EXPECT_EQ(*DecodeExportNameReply(m), e);
  m.clear();
  AppendExportNameReply(m, e, /*no_zeroes=*/true);
  EXPECT_EQ(m.size(), kExportNameReplyBytes);
  EXPECT_EQ(*DecodeExportNameReply(m), e);
  EXPECT_FALSE(DecodeExportNameReply(std::span(m).first(9)).ok());
}

TEST(NbdProtocol, RequestRoundTripAndBytes) {
  const Request r{.flags = cmd_flag::kFua, .type = cmd::kWrite, .cookie = 0x1122334455667788,
                  .offset = 1ull << 33, .length = 65536};
  Buffer m;
  AppendRequest(m, r);
  ASSERT_EQ(m.size(), kRequestBytes);
  EXPECT_EQ(Buffer(m.begin(), m.begin() + 8),
            Bytes({0x25, 0x60, 0x95, 0x13, 0x00, 0x01, 0x00, 0x01}));
  auto decoded = DecodeRequest(m);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, r);
}

TEST(NbdProtocol, RequestErrors) {
  Buffer m;
  AppendRequest(m, {.type = cmd::kRead, .length = 512});
  for (size_t n = 0; n < kRequestBytes; ++n) {
    EXPECT_EQ(DecodeRequest(std::span(m).first(n)).status().code(), StatusCode::kCorruption) << n;
  }
  m[0] = std::byte{0x12};  // the historic request magic 0x12560953 is not accepted
  auto bad = DecodeRequest(m);
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("0x25609513"), std::string_view::npos)
      << bad.status().ToString();
  const Buffer garbage(kRequestBytes, std::byte{0xab});
  EXPECT_FALSE(DecodeRequest(garbage).ok());
}

TEST(NbdProtocol, SimpleReplyRoundTripAndErrors) {
  Buffer m;
  AppendSimpleReply(m, 42, err::kNoSpc);
  ASSERT_EQ(m.size(), kSimpleReplyBytes);
  auto r = DecodeSimpleReply(m);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cookie, 42u);
  EXPECT_EQ(r->error, err::kNoSpc);
  EXPECT_FALSE(DecodeSimpleReply(std::span(m).first(15)).ok());
  m[1] = std::byte{0};
  EXPECT_EQ(DecodeSimpleReply(m).status().code(), StatusCode::kCorruption);
}

TEST(NbdProtocol, BlockSizeRules) {
  EXPECT_TRUE(CheckBlockSizes({1, 4096, 32u << 20}, 1 << 30).ok());
  EXPECT_TRUE(CheckBlockSizes({512, 512, 0xffffffff}, 1 << 30).ok());
  // maximum below preferred is fine only when the export is smaller still.
  EXPECT_TRUE(CheckBlockSizes({1, 4096, 1024}, 1000).ok());
  EXPECT_FALSE(CheckBlockSizes({1, 4096, 1024}, 1 << 20).ok());
  EXPECT_FALSE(CheckBlockSizes({3, 4096, 32u << 20}, 1 << 30).ok());       // not a power of 2
  EXPECT_FALSE(CheckBlockSizes({128u << 10, 1u << 20, 1u << 20}, 1 << 30).ok());  // > 64 KiB
  EXPECT_FALSE(CheckBlockSizes({1, 256, 32u << 20}, 1 << 30).ok());        // preferred < 512
  EXPECT_FALSE(CheckBlockSizes({1, 3000, 32u << 20}, 1 << 30).ok());
  EXPECT_FALSE(CheckBlockSizes({512, 4096, 1000000}, 1 << 30).ok());       // not a multiple
}

TEST(NbdProtocol, NamesForLogs) {
  EXPECT_EQ(OptionName(opt::kGo), "NBD_OPT_GO");
  EXPECT_EQ(OptionName(999), "unknown");
  EXPECT_EQ(CommandName(cmd::kWriteZeroes), "NBD_CMD_WRITE_ZEROES");
  EXPECT_EQ(CommandName(77), "unknown");
  EXPECT_EQ(ReplyTypeName(rep::kErrUnsup), "NBD_REP_ERR_UNSUP");
  EXPECT_EQ(ErrorName(err::kInval), "NBD_EINVAL");
  EXPECT_EQ(ErrorName(err::kShutdown), "NBD_ESHUTDOWN");
}

}  // namespace
}  // namespace rampart::storage::nbd
