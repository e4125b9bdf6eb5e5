// Encoding and bounds-checked decoding of the NBD protocol (nbd_protocol.h).
#include "storage/nbd_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace rampart::storage::nbd {
namespace {

// Big-endian integers of `bytes` bytes.
void PutBe(Buffer& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(std::byte(v >> (8 * i)));
}
void PutU16(Buffer& out, uint16_t v) { PutBe(out, v, 2); }
void PutU32(Buffer& out, uint32_t v) { PutBe(out, v, 4); }
void PutU64(Buffer& out, uint64_t v) { PutBe(out, v, 8); }
void PutBytes(Buffer& out, std::span<const std::byte> b) {
  out.insert(out.end(), b.begin(), b.end());
}

uint64_t GetBe(std::span<const std::byte> in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | std::to_integer<uint8_t>(in[at + i]);
  return v;
}
uint16_t GetU16(std::span<const std::byte> in, size_t at) {
  return static_cast<uint16_t>(GetBe(in, at, 2));
}
uint32_t GetU32(std::span<const std::byte> in, size_t at) {
  return static_cast<uint32_t>(GetBe(in, at, 4));
}
uint64_t GetU64(std::span<const std::byte> in, size_t at) { return GetBe(in, at, 8); }

// kCorruption unless `in` holds at least `need` bytes of `what`.
Status NeedBytes(std::span<const std::byte> in, size_t need, std::string_view what) {
  if (in.size() >= need) return Status::Ok();
  return Corruption("NBD ", what, ": ", in.size(), " bytes, need ", need);
}
Status CheckMagic(uint64_t got, uint64_t want, std::string_view what) {
  if (got == want) return Status::Ok();
  return Corruption("NBD ", what, fmt::format(": bad magic {:#x} (want {:#x})", got, want));
}

// An NBD_REP_INFO reply: the option reply header, then u16 type and payload.
void BeginInfo(Buffer& out, uint32_t option, uint16_t type,
               uint32_t payload_bytes) {
  PutU64(out, kOptionReplyMagic);
  PutU32(out, option);
  PutU32(out, rep::kInfo);
  PutU32(out, 2 + payload_bytes);
  PutU16(out, type);
}

Status CheckInfo(std::span<const std::byte> data, uint16_t type, size_t bytes,
                 std::string_view what) {
  if (data.size() != bytes) {
    return InvalidArgument("NBD ", what, ": ", data.size(), " bytes, want ", bytes);
  }
  if (GetU16(data, 0) != type) {
    return InvalidArgument("NBD ", what, ": information type ", GetU16(data, 0), ", want ", type);
  }
  return Status::Ok();
}

}  // namespace

std::string_view OptionName(uint32_t option) {
  switch (option) {
    case opt::kExportName: return "NBD_OPT_EXPORT_NAME";
    case opt::kAbort: return "NBD_OPT_ABORT";
    case opt::kList: return "NBD_OPT_LIST";
    case opt::kStartTls: return "NBD_OPT_STARTTLS";
    case opt::kInfo: return "NBD_OPT_INFO";
    case opt::kGo: return "NBD_OPT_GO";
    case opt::kStructuredReply: return "NBD_OPT_STRUCTURED_REPLY";
    case opt::kListMetaContext: return "NBD_OPT_LIST_META_CONTEXT";
    case opt::kSetMetaContext: return "NBD_OPT_SET_META_CONTEXT";
    case opt::kExtendedHeaders: return "NBD_OPT_EXTENDED_HEADERS";
  }
  return "unknown";
}

std::string_view CommandName(uint16_t type) {
  switch (type) {
    case cmd::kRead: return "NBD_CMD_READ";
    case cmd::kWrite: return "NBD_CMD_WRITE";
    case cmd::kDisc: return "NBD_CMD_DISC";
    case cmd::kFlush: return "NBD_CMD_FLUSH";
    case cmd::kTrim: return "NBD_CMD_TRIM";
    case cmd::kCache: return "NBD_CMD_CACHE";
    case cmd::kWriteZeroes: return "NBD_CMD_WRITE_ZEROES";
    case cmd::kBlockStatus: return "NBD_CMD_BLOCK_STATUS";
  }
  return "unknown";
}

std::string_view ReplyTypeName(uint32_t type) {
  switch (type) {
    case rep::kAck: return "NBD_REP_ACK";
    case rep::kServer: return "NBD_REP_SERVER";
    case rep::kInfo: return "NBD_REP_INFO";
    case rep::kErrUnsup: return "NBD_REP_ERR_UNSUP";
    case rep::kErrPolicy: return "NBD_REP_ERR_POLICY";
    case rep::kErrInvalid: return "NBD_REP_ERR_INVALID";
    case rep::kErrPlatform: return "NBD_REP_ERR_PLATFORM";
    case rep::kErrTlsReqd: return "NBD_REP_ERR_TLS_REQD";
    case rep::kErrUnknown: return "NBD_REP_ERR_UNKNOWN";
    case rep::kErrShutdown: return "NBD_REP_ERR_SHUTDOWN";
    case rep::kErrBlockSizeReqd: return "NBD_REP_ERR_BLOCK_SIZE_REQD";
    case rep::kErrTooBig: return "NBD_REP_ERR_TOO_BIG";
  }
  return "unknown";
}

std::string_view ErrorName(uint32_t error) {
  switch (error) {
    case err::kOk: return "OK";
    case err::kPerm: return "NBD_EPERM";
    case err::kIo: return "NBD_EIO";
    case err::kNoMem: return "NBD_ENOMEM";
    case err::kInval: return "NBD_EINVAL";
    case err::kNoSpc: return "NBD_ENOSPC";
    case err::kOverflow: return "NBD_EOVERFLOW";
    case err::kNotSup: return "NBD_ENOTSUP";
    case err::kShutdown: return "NBD_ESHUTDOWN";
  }
  return "unknown";
}

Status CheckBlockSizes(const BlockSizes& s, uint64_t export_size) {
  if (!std::has_single_bit(s.minimum) || s.minimum > (64u << 10)) {
    return InvalidArgument("NBD block sizes: minimum ", s.minimum,
                           " must be a power of two of at most 64KiB");
  }
  if (!std::has_single_bit(s.preferred) || s.preferred < std::max<uint32_t>(s.minimum, 512)) {
    return InvalidArgument("NBD block sizes: preferred ", s.preferred,
                           " must be a power of two of at least max(minimum, 512)");
  }
  if (s.maximum != 0xffffffff && s.maximum % s.minimum != 0) {
    return InvalidArgument("NBD block sizes: maximum ", s.maximum,
                           " must be a multiple of the minimum ", s.minimum);
  }
  if (s.maximum < std::min<uint64_t>(s.preferred, export_size)) {
    return InvalidArgument("NBD block sizes: maximum ", s.maximum,
                           " must be at least the preferred ", s.preferred,
                           " (or the export size, if smaller)");
  }
  return Status::Ok();
}

std::span<const std::byte> AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// ---- handshake ----

void AppendGreeting(Buffer& out, uint16_t handshake_flags) {
  PutU64(out, kInitMagic);
  PutU64(out, kOptionMagic);
  PutU16(out, handshake_flags);
}

Result<uint16_t> DecodeGreeting(std::span<const std::byte> in) {
  RAMPART_RETURN_IF_ERROR(NeedBytes(in, kGreetingBytes, "greeting"));
  RAMPART_RETURN_IF_ERROR(CheckMagic(GetU64(in, 0), kInitMagic, "greeting"));
  RAMPART_RETURN_IF_ERROR(CheckMagic(GetU64(in, 8), kOptionMagic, "greeting"));
  return GetU16(in, 16);
}

void AppendClientFlags(Buffer& out, uint32_t flags) { PutU32(out, flags); }

Result<uint32_t> DecodeClientFlags(std::span<const std::byte> in) {
  RAMPART_RETURN_IF_ERROR(NeedBytes(in, kClientFlagsBytes, "client flags"));
  return GetU32(in, 0);
}

void AppendOption(Buffer& out, uint32_t option, std::span<const std::byte> data) {
  PutU64(out, kOptionMagic);
  PutU32(out, option);
  PutU32(out, static_cast<uint32_t>(data.size()));
  PutBytes(out, data);
}

Result<OptionHeader> DecodeOptionHeader(std::span<const std::byte> in) {
  RAMPART_RETURN_IF_ERROR(NeedBytes(in, kOptionHeaderBytes, "option"));
  RAMPART_RETURN_IF_ERROR(CheckMagic(GetU64(in, 0), kOptionMagic, "option"));
  return OptionHeader{.option = GetU32(in, 8), .length = GetU32(in, 12)};
}

void AppendOptionReply(Buffer& out, uint32_t option, uint32_t type,
                       std::span<const std::byte> data) {
  PutU64(out, kOptionReplyMagic);
  PutU32(out, option);
  PutU32(out, type);
  PutU32(out, static_cast<uint32_t>(data.size()));
  PutBytes(out, data);
}

Result<OptionReplyHeader> DecodeOptionReplyHeader(std::span<const std::byte> in) {
  RAMPART_RETURN_IF_ERROR(NeedBytes(in, kOptionReplyHeaderBytes, "option reply"));
  RAMPART_RETURN_IF_ERROR(CheckMagic(GetU64(in, 0), kOptionReplyMagic, "option reply"));
  return OptionReplyHeader{.option = GetU32(in, 8), .type = GetU32(in, 12),
                           .length = GetU32(in, 16)};
}

Buffer EncodeInfoRequest(const InfoRequest& request) {
  Buffer out;
  PutU32(out, static_cast<uint32_t>(request.export_name.size()));
  PutBytes(out, AsBytes(request.export_name));
  PutU16(out, static_cast<uint16_t>(request.info_types.size()));
  for (uint16_t type : request.info_types) PutU16(out, type);
  return out;
}

Result<InfoRequest> DecodeInfoRequest(std::span<const std::byte> data) {
  if (data.size() < 6) {
    return InvalidArgument("NBD INFO/GO request: ", data.size(), " bytes, need at least 6");
  }
  const uint32_t name_bytes = GetU32(data, 0);
  if (name_bytes > data.size() - 6) {
    return InvalidArgument("NBD INFO/GO request: export name of ", name_bytes,
                           " bytes does not fit in the option's ", data.size(), " bytes");
  }
  if (name_bytes > kMaxStringBytes) {
    return InvalidArgument("NBD INFO/GO request: export name of ", name_bytes,
                           " bytes is longer than ", kMaxStringBytes);
  }
  InfoRequest request;
  request.export_name.assign(reinterpret_cast<const char*>(data.data() + 4), name_bytes);
  const size_t count_at = 4 + size_t{name_bytes};
  const uint16_t count = GetU16(data, count_at);
  const size_t list_bytes = data.size() - count_at - 2;
  if (list_bytes != size_t{count} * 2) {
    return InvalidArgument("NBD INFO/GO request: ", count, " information requests need ",
                           size_t{count} * 2, " bytes, the option has ", list_bytes);
  }
  for (uint16_t i = 0; i < count; ++i) {
    request.info_types.push_back(GetU16(data, count_at + 2 + 2 * size_t{i}));
  }
  return request;
}

void AppendInfoExport(Buffer& out, uint32_t option, const ExportInfo& e) {
  BeginInfo(out, option, info::kExport, 10);
  PutU64(out, e.size);
  PutU16(out, e.transmission_flags);
}

void AppendInfoBlockSize(Buffer& out, uint32_t option, const BlockSizes& s) {
  BeginInfo(out, option, info::kBlockSize, 12);
  PutU32(out, s.minimum);
  PutU32(out, s.preferred);
  PutU32(out, s.maximum);
}

void AppendInfoName(Buffer& out, uint32_t option, std::string_view name) {
  BeginInfo(out, option, info::kName, static_cast<uint32_t>(name.size()));
  PutBytes(out, AsBytes(name));
}

void AppendServer(Buffer& out, uint32_t option, std::string_view name) {
  PutU64(out, kOptionReplyMagic);
  PutU32(out, option);
  PutU32(out, rep::kServer);
  PutU32(out, 4 + static_cast<uint32_t>(name.size()));
  PutU32(out, static_cast<uint32_t>(name.size()));
  PutBytes(out, AsBytes(name));
}

Result<uint16_t> DecodeInfoType(std::span<const std::byte> data) {
  if (data.size() < 2) return InvalidArgument("NBD_REP_INFO: ", data.size(), " bytes, need 2");
  return GetU16(data, 0);
}

Result<ExportInfo> DecodeInfoExport(std::span<const std::byte> data) {
  RAMPART_RETURN_IF_ERROR(CheckInfo(data, info::kExport, 12, "NBD_INFO_EXPORT"));
  return ExportInfo{.size = GetU64(data, 2), .transmission_flags = GetU16(data, 10)};
}

Result<BlockSizes> DecodeInfoBlockSize(std::span<const std::byte> data) {
  RAMPART_RETURN_IF_ERROR(CheckInfo(data, info::kBlockSize, 14, "NBD_INFO_BLOCK_SIZE"));
  return BlockSizes{.minimum = GetU32(data, 2), .preferred = GetU32(data, 6),
                    .maximum = GetU32(data, 10)};
}

Result<std::string> DecodeServer(std::span<const std::byte> data) {
  if (data.size() < 4) return InvalidArgument("NBD_REP_SERVER: ", data.size(), " bytes, need 4");
  const uint32_t name_bytes = GetU32(data, 0);
  if (name_bytes > data.size() - 4) {
    return InvalidArgument("NBD_REP_SERVER: name of ", name_bytes, " bytes does not fit in ",
                           data.size() - 4);
  }
  return std::string(reinterpret_cast<const char*>(data.data() + 4), name_bytes);
}

void AppendExportNameReply(Buffer& out, const ExportInfo& e, bool no_zeroes) {
  PutU64(out, e.size);
  PutU16(out, e.transmission_flags);
  if (!no_zeroes) out.insert(out.end(), kExportNameZeroBytes, std::byte{0});
}

Result<ExportInfo> DecodeExportNameReply(std::span<const std::byte> in) {
  RAMPART_RETURN_IF_ERROR(NeedBytes(in, kExportNameReplyBytes, "export name reply"));
  return ExportInfo{.size = GetU64(in, 0), .transmission_flags = GetU16(in, 8)};
}

// ---- transmission ----

void AppendRequest(Buffer& out, const Request& r) {
  PutU32(out, kRequestMagic);
  PutU16(out, r.flags);
  PutU16(out, r.type);
  PutU64(out, r.cookie);
  PutU64(out, r.offset);
  PutU32(out, r.length);
}

Result<Request> DecodeRequest(std::span<const std::byte> in) {
  RAMPART_RETURN_IF_ERROR(NeedBytes(in, kRequestBytes, "request"));
  RAMPART_RETURN_IF_ERROR(CheckMagic(GetU32(in, 0), kRequestMagic, "request"));
  return Request{.flags = GetU16(in, 4), .type = GetU16(in, 6), .cookie = GetU64(in, 8),
                 .offset = GetU64(in, 16), .length = GetU32(in, 24)};
}

void AppendSimpleReply(Buffer& out, uint64_t cookie, uint32_t error) {
  PutU32(out, kSimpleReplyMagic);
  PutU32(out, error);
  PutU64(out, cookie);
}

Result<SimpleReply> DecodeSimpleReply(std::span<const std::byte> in) {
  RAMPART_RETURN_IF_ERROR(NeedBytes(in, kSimpleReplyBytes, "simple reply"));
  RAMPART_RETURN_IF_ERROR(CheckMagic(GetU32(in, 0), kSimpleReplyMagic, "simple reply"));
  return SimpleReply{.error = GetU32(in, 4), .cookie = GetU64(in, 8)};
}

}  // namespace rampart::storage::nbd
