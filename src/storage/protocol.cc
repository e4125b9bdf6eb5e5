// Encoding and bounds-checked decoding of the storage protocol (protocol.h,
// docs/storage.md).
#include "storage/protocol.h"

#include <algorithm>
#include <cstring>

namespace rampart::storage::wire {
namespace {

void PutU8(std::vector<std::byte>& out, uint8_t v) { out.push_back(std::byte{v}); }
void PutU16(std::vector<std::byte>& out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(std::byte(v >> (8 * i)));
}
void PutU32(std::vector<std::byte>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(std::byte(v >> (8 * i)));
}
void PutU64(std::vector<std::byte>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(std::byte(v >> (8 * i)));
}
void PutBytes(std::vector<std::byte>& out, std::span<const std::byte> b) {
  out.insert(out.end(), b.begin(), b.end());
}

uint64_t GetLe(const std::byte* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(std::to_integer<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Reserves the frame header; End() fills in body_len.
size_t BeginFrame(std::vector<std::byte>& out, uint8_t type, uint8_t second) {
  const size_t at = out.size();
  PutU8(out, type);
  PutU8(out, second);
  PutU16(out, 0);
  PutU32(out, 0);
  return at;
}
void EndFrame(std::vector<std::byte>& out, size_t at) {
  const uint64_t body = out.size() - at - kFrameHeaderBytes;
  for (int i = 0; i < 4; ++i) out[at + 4 + i] = std::byte(body >> (8 * i));
}

void AppendIo(std::vector<std::byte>& out, MsgType type, uint64_t request_id, uint64_t offset,
              uint32_t length, uint64_t buffer_offset) {
  const size_t at = BeginFrame(out, static_cast<uint8_t>(type), 0);
  PutU64(out, request_id);
  PutU64(out, offset);
  PutU32(out, length);
  PutU32(out, 0);
  PutU64(out, buffer_offset);
  EndFrame(out, at);
}

}  // namespace

std::string_view MsgTypeName(uint8_t type) {
  switch (type) {
    case 1: return "HELLO";
    case 2: return "READ";
    case 3: return "WRITE";
    case 4: return "FLUSH";
  }
  return "UNKNOWN";
}

Status Reply::ToStatus() const {
  if (ok()) return Status::Ok();
  return Status(status, error);
}

void AppendHello(std::vector<std::byte>& out, uint64_t request_id,
                 std::span<const std::byte> descriptor) {
  const size_t at = BeginFrame(out, static_cast<uint8_t>(MsgType::kHello), 0);
  PutU64(out, request_id);
  PutU32(out, static_cast<uint32_t>(descriptor.size()));
  PutBytes(out, descriptor);
  EndFrame(out, at);
}

void AppendRead(std::vector<std::byte>& out, uint64_t request_id, uint64_t offset,
                uint32_t length, uint64_t buffer_offset) {
  AppendIo(out, MsgType::kRead, request_id, offset, length, buffer_offset);
}

void AppendWrite(std::vector<std::byte>& out, uint64_t request_id, uint64_t offset,
                 uint32_t length, uint64_t buffer_offset) {
  AppendIo(out, MsgType::kWrite, request_id, offset, length, buffer_offset);
}

void AppendFlush(std::vector<std::byte>& out, uint64_t request_id) {
  const size_t at = BeginFrame(out, static_cast<uint8_t>(MsgType::kFlush), 0);
  PutU64(out, request_id);
  EndFrame(out, at);
}

void AppendReply(std::vector<std::byte>& out, uint8_t type, uint64_t request_id, uint64_t bytes,
                 const DeviceInfo* info) {
  const size_t at = BeginFrame(out, type, static_cast<uint8_t>(StatusCode::kOk));
  PutU64(out, request_id);
  PutU64(out, bytes);
  PutU32(out, 0);
  if (type == static_cast<uint8_t>(MsgType::kHello) && info != nullptr) {
    PutU64(out, info->device_bytes);
    PutU32(out, info->block_bytes);
    PutU32(out, info->max_io_bytes);
    PutU32(out, info->alignment);
    PutU32(out, info->queue_depth);
  }
  EndFrame(out, at);
}

void AppendErrorReply(std::vector<std::byte>& out, uint8_t type, uint64_t request_id,
                      const Status& status) {
  const StatusCode code = status.ok() ? StatusCode::kInternal : status.code();
  const std::string_view text = status.ok() ? std::string_view("error reply with OK status")
                                            : status.message();
  const size_t n = std::min<size_t>(text.size(), kMaxErrorBytes);
  const size_t at = BeginFrame(out, type, static_cast<uint8_t>(code));
  PutU64(out, request_id);
  PutU64(out, 0);
  PutU32(out, static_cast<uint32_t>(n));
  PutBytes(out, std::as_bytes(std::span<const char>(text.data(), n)));
  EndFrame(out, at);
}

Result<std::vector<Frame>> SplitFrames(std::span<const std::byte> message) {
  if (message.empty()) return Corruption("empty storage message");
  std::vector<Frame> frames;
  size_t pos = 0;
  while (pos < message.size()) {
    const size_t left = message.size() - pos;
    if (left < kFrameHeaderBytes) {
      return Corruption("truncated storage message: frame ", frames.size(), " header needs ",
                        kFrameHeaderBytes, " bytes, ", left, " left");
    }
    const std::byte* h = message.data() + pos;
    const uint64_t body_len = GetLe(h + 4, 4);
    if (body_len > left - kFrameHeaderBytes) {
      return Corruption("truncated storage message: frame ", frames.size(), " (",
                        MsgTypeName(GetLe(h, 1)), ") body needs ", body_len, " bytes, ",
                        left - kFrameHeaderBytes, " left");
    }
    Frame f;
    f.type = static_cast<uint8_t>(GetLe(h, 1));
    f.flags = static_cast<uint8_t>(GetLe(h + 1, 1));
    f.body = message.subspan(pos + kFrameHeaderBytes, body_len);
    if (body_len >= 8) f.request_id = GetLe(f.body.data(), 8);
    frames.push_back(f);
    pos += kFrameHeaderBytes + body_len;
  }
  return frames;
}

Result<Request> DecodeRequest(const Frame& frame) {
  const std::string_view name = MsgTypeName(frame.type);
  if (frame.type == 0 || frame.type > kMaxMsgType) {
    return InvalidArgument("unknown storage request type ", unsigned(frame.type));
  }
  if (frame.flags != 0) {
    return InvalidArgument(name, " request ", frame.request_id, ": unknown flags ",
                           unsigned(frame.flags));
  }
  Request r;
  r.type = static_cast<MsgType>(frame.type);
  const std::byte* b = frame.body.data();
  const size_t n = frame.body.size();
  auto wrong_size = [&](size_t want) {
    return InvalidArgument(name, " request ", frame.request_id, ": body of ", n,
                           " bytes, expected ", want);
  };
  switch (r.type) {
    case MsgType::kHello: {
      if (n < 12) return wrong_size(12);
      r.request_id = GetLe(b, 8);
      const uint64_t len = GetLe(b + 8, 4);
      if (len > kMaxDescriptorBytes) {
        return InvalidArgument("HELLO request ", r.request_id, ": descriptor of ", len,
                               " bytes exceeds ", kMaxDescriptorBytes);
      }
      if (n != 12 + len) return wrong_size(12 + len);
      r.descriptor = frame.body.subspan(12, len);
      return r;
    }
    case MsgType::kRead:
    case MsgType::kWrite:
      if (n != kIoBodyBytes) return wrong_size(kIoBodyBytes);
      r.request_id = GetLe(b, 8);
      r.offset = GetLe(b + 8, 8);
      r.length = static_cast<uint32_t>(GetLe(b + 16, 4));
      r.buffer_offset = GetLe(b + 24, 8);
      return r;
    case MsgType::kFlush:
      if (n != 8) return wrong_size(8);
      r.request_id = GetLe(b, 8);
      return r;
  }
  return InvalidArgument("unknown storage request type ", unsigned(frame.type));
}

Result<std::vector<Reply>> DecodeReplies(std::span<const std::byte> message) {
  RAMPART_ASSIGN_OR_RETURN(std::vector<Frame> frames, SplitFrames(message));
  std::vector<Reply> replies;
  replies.reserve(frames.size());
  for (const Frame& f : frames) {
    Reply r;
    r.raw_type = f.type;
    r.type = static_cast<MsgType>(f.type);
    if (f.flags > static_cast<uint8_t>(StatusCode::kInternal)) {
      return Corruption("storage reply ", f.request_id, ": unknown status ", unsigned(f.flags));
    }
    r.status = static_cast<StatusCode>(f.flags);
    const std::byte* b = f.body.data();
    size_t n = f.body.size();
    if (n < kReplyFixedBytes) {
      return Corruption("truncated storage reply: body of ", n, " bytes, at least ",
                        kReplyFixedBytes, " expected");
    }
    r.request_id = GetLe(b, 8);
    r.bytes = GetLe(b + 8, 8);
    const uint64_t error_len = GetLe(b + 16, 4);
    if (error_len > kMaxErrorBytes || error_len > n - kReplyFixedBytes) {
      return Corruption("storage reply ", r.request_id, ": error text of ", error_len,
                        " bytes does not fit");
    }
    r.error.assign(reinterpret_cast<const char*>(b + kReplyFixedBytes), error_len);
    size_t pos = kReplyFixedBytes + error_len;
    if (r.ok() && f.type == static_cast<uint8_t>(MsgType::kHello)) {
      if (n - pos != kDeviceInfoBytes) {
        return Corruption("HELLO reply ", r.request_id, ": device info of ", n - pos,
                          " bytes, expected ", kDeviceInfoBytes);
      }
      r.info.device_bytes = GetLe(b + pos, 8);
      r.info.block_bytes = static_cast<uint32_t>(GetLe(b + pos + 8, 4));
      r.info.max_io_bytes = static_cast<uint32_t>(GetLe(b + pos + 12, 4));
      r.info.alignment = static_cast<uint32_t>(GetLe(b + pos + 16, 4));
      r.info.queue_depth = static_cast<uint32_t>(GetLe(b + pos + 20, 4));
      pos += kDeviceInfoBytes;
    }
    if (pos != n) {
      return Corruption("storage reply ", r.request_id, ": ", n - pos, " unexpected bytes");
    }
    replies.push_back(std::move(r));
  }
  return replies;
}

}  // namespace rampart::storage::wire
