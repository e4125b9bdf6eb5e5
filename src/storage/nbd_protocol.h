// The NBD wire protocol (fixed newstyle handshake, simple replies) as pure
// functions on bytes: constants, encoders that append to a byte vector
// (Buffer) and bounds-checked decoders. The server (storage/nbd_server.h) and the tests'
// hand-written clients both use them. docs/nbd.md says which parts of the
// protocol rampart speaks; the specification is NBD's doc/proto.md.
//
// Every integer on the wire is big-endian. The messages:
//
//   greeting      S: u64 NBDMAGIC, u64 IHAVEOPT, u16 handshake flags     (18 bytes)
//   client flags  C: u32 flags                                           (4 bytes)
//   option        C: u64 IHAVEOPT, u32 option, u32 length, data          (16 + length)
//   option reply  S: u64 kOptionReplyMagic, u32 option, u32 type, u32 length, data
//   EXPORT_NAME   S: u64 size, u16 transmission flags, [124 zero bytes]  (reply to it)
//   request       C: u32 kRequestMagic, u16 flags, u16 type, u64 cookie,
//                    u64 offset, u32 length, [length bytes for WRITE]    (28 + payload)
//   simple reply  S: u32 kSimpleReplyMagic, u32 error, u64 cookie,
//                    [length bytes for a successful READ]                (16 + payload)
//
// Decoders take a span that starts at the message. Their errors:
//   kCorruption      the bytes cannot be this message (too short, wrong magic):
//                    a stream that produced them cannot be trusted any more.
//   kInvalidArgument the message is well framed but a field is invalid (an
//                    INFO/GO name longer than the option): answer with an error.
// Views (std::span) returned by decoders point into the caller's input.
//
// Thread-safety: plain functions and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/status.h"

namespace rampart::storage::nbd {

// What the encoders below append to: a byte vector whose resize() leaves the
// new bytes uninitialized, so that a server can read a READ's data into its
// place in the reply without zeroing it first (for a batch of 1 MiB READs
// the zeroing was a tenth of the server's time).
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <class U, class... Args>
  void construct(U* p, Args&&... args) noexcept(std::is_nothrow_constructible_v<U, Args...>) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;  // default-initialized: no zeroing
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
};
using Buffer = std::vector<std::byte, DefaultInitAllocator<std::byte>>;

// ---- magic numbers and fixed sizes ----
inline constexpr uint64_t kInitMagic = 0x4e42444d41474943;         // "NBDMAGIC"
inline constexpr uint64_t kOptionMagic = 0x49484156454f5054;       // "IHAVEOPT"
inline constexpr uint64_t kOptionReplyMagic = 0x0003e889045565a9;
inline constexpr uint32_t kRequestMagic = 0x25609513;
inline constexpr uint32_t kSimpleReplyMagic = 0x67446698;

inline constexpr size_t kGreetingBytes = 18;
inline constexpr size_t kClientFlagsBytes = 4;
inline constexpr size_t kOptionHeaderBytes = 16;
inline constexpr size_t kOptionReplyHeaderBytes = 20;
inline constexpr size_t kExportNameReplyBytes = 10;  // without the 124 zero bytes
inline constexpr size_t kExportNameZeroBytes = 124;
inline constexpr size_t kRequestBytes = 28;
inline constexpr size_t kSimpleReplyBytes = 16;
inline constexpr uint32_t kMaxStringBytes = 4096;    // export names, error texts (spec)
// Lengths below this SHOULD NOT be treated as a denial of service (spec,
// "Block size constraints"): an oversized WRITE up to it is refused with
// EINVAL and its payload skipped; a longer one may end the connection.
inline constexpr uint32_t kDosPayloadBytes = 32u << 20;

// Handshake flags (server, u16).
inline constexpr uint16_t kFlagFixedNewstyle = 1 << 0;
inline constexpr uint16_t kFlagNoZeroes = 1 << 1;
// Client flags (u32).
inline constexpr uint32_t kClientFlagFixedNewstyle = 1 << 0;
inline constexpr uint32_t kClientFlagNoZeroes = 1 << 1;

// Transmission flags (u16), sent with the export's size.
namespace tx {
inline constexpr uint16_t kHasFlags = 1 << 0;
inline constexpr uint16_t kReadOnly = 1 << 1;
inline constexpr uint16_t kSendFlush = 1 << 2;
inline constexpr uint16_t kSendFua = 1 << 3;
inline constexpr uint16_t kRotational = 1 << 4;
inline constexpr uint16_t kSendTrim = 1 << 5;
inline constexpr uint16_t kSendWriteZeroes = 1 << 6;
inline constexpr uint16_t kSendDf = 1 << 7;
inline constexpr uint16_t kCanMultiConn = 1 << 8;
inline constexpr uint16_t kSendCache = 1 << 10;
inline constexpr uint16_t kSendFastZero = 1 << 11;
}  // namespace tx

// Options (u32) the client sends during the handshake.
namespace opt {
inline constexpr uint32_t kExportName = 1;
inline constexpr uint32_t kAbort = 2;
inline constexpr uint32_t kList = 3;
inline constexpr uint32_t kStartTls = 5;
inline constexpr uint32_t kInfo = 6;
inline constexpr uint32_t kGo = 7;
inline constexpr uint32_t kStructuredReply = 8;
inline constexpr uint32_t kListMetaContext = 9;
inline constexpr uint32_t kSetMetaContext = 10;
inline constexpr uint32_t kExtendedHeaders = 11;
}  // namespace opt

// Option reply types (u32); errors have bit 31 set.
namespace rep {
inline constexpr uint32_t kAck = 1;
inline constexpr uint32_t kServer = 2;
inline constexpr uint32_t kInfo = 3;
inline constexpr uint32_t kErrorBit = 1u << 31;
inline constexpr uint32_t kErrUnsup = kErrorBit | 1;
inline constexpr uint32_t kErrPolicy = kErrorBit | 2;
inline constexpr uint32_t kErrInvalid = kErrorBit | 3;
inline constexpr uint32_t kErrPlatform = kErrorBit | 4;
inline constexpr uint32_t kErrTlsReqd = kErrorBit | 5;
inline constexpr uint32_t kErrUnknown = kErrorBit | 6;
inline constexpr uint32_t kErrShutdown = kErrorBit | 7;
inline constexpr uint32_t kErrBlockSizeReqd = kErrorBit | 8;
inline constexpr uint32_t kErrTooBig = kErrorBit | 9;
}  // namespace rep

// Information types (u16) of NBD_OPT_INFO / NBD_OPT_GO.
namespace info {
inline constexpr uint16_t kExport = 0;
inline constexpr uint16_t kName = 1;
inline constexpr uint16_t kDescription = 2;
inline constexpr uint16_t kBlockSize = 3;
}  // namespace info

// Commands (u16) and command flags (u16) of the transmission phase.
namespace cmd {
inline constexpr uint16_t kRead = 0;
inline constexpr uint16_t kWrite = 1;
inline constexpr uint16_t kDisc = 2;
inline constexpr uint16_t kFlush = 3;
inline constexpr uint16_t kTrim = 4;
inline constexpr uint16_t kCache = 5;
inline constexpr uint16_t kWriteZeroes = 6;
inline constexpr uint16_t kBlockStatus = 7;
}  // namespace cmd
namespace cmd_flag {
inline constexpr uint16_t kFua = 1 << 0;
inline constexpr uint16_t kNoHole = 1 << 1;
inline constexpr uint16_t kDf = 1 << 2;
inline constexpr uint16_t kReqOne = 1 << 3;
inline constexpr uint16_t kFastZero = 1 << 4;
}  // namespace cmd_flag

// Error values (u32) of a reply: the errno numbers the spec fixed.
namespace err {
inline constexpr uint32_t kOk = 0;
inline constexpr uint32_t kPerm = 1;
inline constexpr uint32_t kIo = 5;
inline constexpr uint32_t kNoMem = 12;
inline constexpr uint32_t kInval = 22;
inline constexpr uint32_t kNoSpc = 28;
inline constexpr uint32_t kOverflow = 75;
inline constexpr uint32_t kNotSup = 95;
inline constexpr uint32_t kShutdown = 108;
}  // namespace err

// "NBD_OPT_GO", "NBD_CMD_READ", "NBD_REP_ERR_UNSUP", "NBD_EINVAL"; "unknown"
// for values the spec does not define.
std::string_view OptionName(uint32_t option);
std::string_view CommandName(uint16_t type);
std::string_view ReplyTypeName(uint32_t type);
std::string_view ErrorName(uint32_t error);

// ---- values carried by the messages ----

// What NBD_OPT_EXPORT_NAME and NBD_INFO_EXPORT tell the client.
struct ExportInfo {
  uint64_t size = 0;
  uint16_t transmission_flags = 0;
  bool operator==(const ExportInfo&) const = default;
};

// NBD_INFO_BLOCK_SIZE.
struct BlockSizes {
  uint32_t minimum = 1;
  uint32_t preferred = 4096;
  uint32_t maximum = 0xffffffff;
  bool operator==(const BlockSizes&) const = default;
};
// OK iff `sizes` obey the spec's rules ("Block size constraints"): minimum a
// power of two <= 64 KiB; preferred a power of two >= max(minimum, 512);
// maximum a multiple of minimum (or 0xffffffff) and >= min(preferred,
// export_size). InvalidArgument naming the broken rule otherwise.
Status CheckBlockSizes(const BlockSizes& sizes, uint64_t export_size);

// The data of NBD_OPT_INFO and NBD_OPT_GO.
struct InfoRequest {
  std::string export_name;
  std::vector<uint16_t> info_types;  // requested information, in the client's order
  bool operator==(const InfoRequest&) const = default;
};

struct OptionHeader {
  uint32_t option = 0;
  uint32_t length = 0;  // bytes of data that follow
};

struct OptionReplyHeader {
  uint32_t option = 0;
  uint32_t type = 0;
  uint32_t length = 0;  // bytes of data that follow
};

struct Request {
  uint16_t flags = 0;
  uint16_t type = 0;
  uint64_t cookie = 0;  // the spec's "handle": echoed in the reply
  uint64_t offset = 0;
  uint32_t length = 0;
  bool operator==(const Request&) const = default;
};

struct SimpleReply {
  uint32_t error = 0;
  uint64_t cookie = 0;
};

// A string's bytes, for the `data` arguments below.
std::span<const std::byte> AsBytes(std::string_view s);

// ---- handshake ----
void AppendGreeting(Buffer& out, uint16_t handshake_flags);
// The handshake flags. kCorruption for fewer than 18 bytes or a wrong magic.
Result<uint16_t> DecodeGreeting(std::span<const std::byte> in);

void AppendClientFlags(Buffer& out, uint32_t flags);
Result<uint32_t> DecodeClientFlags(std::span<const std::byte> in);

// An option with its data (any length the caller likes, even a lying one:
// tests use it to send malformed options).
void AppendOption(Buffer& out, uint32_t option, std::span<const std::byte> data);
// kCorruption for fewer than 16 bytes or a magic other than IHAVEOPT.
Result<OptionHeader> DecodeOptionHeader(std::span<const std::byte> in);

void AppendOptionReply(Buffer& out, uint32_t option, uint32_t type,
                       std::span<const std::byte> data = {});
// kCorruption for fewer than 20 bytes or a wrong magic.
Result<OptionReplyHeader> DecodeOptionReplyHeader(std::span<const std::byte> in);

// NBD_OPT_INFO / NBD_OPT_GO data: u32 name length, name, u16 count, u16 each.
Buffer EncodeInfoRequest(const InfoRequest& request);
// kInvalidArgument when the name runs past the data, is longer than
// kMaxStringBytes, or the information list does not fill the rest exactly.
Result<InfoRequest> DecodeInfoRequest(std::span<const std::byte> data);

// Option replies of type NBD_REP_INFO (u16 info type, payload) and
// NBD_REP_SERVER (u32 name length, name).
void AppendInfoExport(Buffer& out, uint32_t option, const ExportInfo& export_info);
void AppendInfoBlockSize(Buffer& out, uint32_t option, const BlockSizes& sizes);
void AppendInfoName(Buffer& out, uint32_t option, std::string_view name);
void AppendServer(Buffer& out, uint32_t option, std::string_view name);
// Decoders of those replies' data (the bytes after the option reply header).
// kInvalidArgument for a payload of the wrong size or type.
Result<uint16_t> DecodeInfoType(std::span<const std::byte> data);
Result<ExportInfo> DecodeInfoExport(std::span<const std::byte> data);
Result<BlockSizes> DecodeInfoBlockSize(std::span<const std::byte> data);
Result<std::string> DecodeServer(std::span<const std::byte> data);

// The server's answer to NBD_OPT_EXPORT_NAME: size, flags and, unless the
// client negotiated NO_ZEROES, 124 zero bytes.
void AppendExportNameReply(Buffer& out, const ExportInfo& export_info,
                           bool no_zeroes);
// Reads the first 10 bytes (the zeroes, if any, are the caller's to skip).
Result<ExportInfo> DecodeExportNameReply(std::span<const std::byte> in);

// ---- transmission ----
// The 28-byte header only; a WRITE's payload follows it.
void AppendRequest(Buffer& out, const Request& request);
// kCorruption for fewer than 28 bytes or a wrong magic.
Result<Request> DecodeRequest(std::span<const std::byte> in);

// The 16-byte header only; a successful READ's data follows it.
void AppendSimpleReply(Buffer& out, uint64_t cookie, uint32_t error);
// kCorruption for fewer than 16 bytes or a wrong magic.
Result<SimpleReply> DecodeSimpleReply(std::span<const std::byte> in);

}  // namespace rampart::storage::nbd
