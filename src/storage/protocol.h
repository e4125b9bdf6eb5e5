// The storage wire protocol between a volume client and a storage-node.
// docs/storage.md has the byte layout; this is the C++ side.
//
// Requests travel as messages on a transport::Channel (or as two-sided
// Endpoint::Send messages); a message holds one or more requests back to back
// (batching), and any number of messages may be in flight per connection.
// Every request and reply starts with an 8-byte frame header, so a receiver
// can skip a request of a type it does not know and still answer it:
//
//   request = {u8 type, u8 flags (0), u16 zero, u32 body_len} body
//   reply   = {u8 type, u8 status, u16 zero, u32 body_len} body
//
// Every body starts with the u64 request_id the client chose; replies echo it.
//
//   HELLO  {request_id, u32 descriptor_len, descriptor}: the client's buffer
//          pool (one transport::MemoryRegion, as MemoryRegion::Descriptor()).
//          Reply: DeviceInfo (device size, block size, largest IO, alignment,
//          queue depth). Must come before any READ or WRITE on a connection.
//   READ   {request_id, u64 offset, u32 length, u32 zero, u64 buffer_offset}:
//          the node reads device[offset, offset+length) and one-sided-writes it
//          to pool[buffer_offset, ...); the reply is sent after that write
//          completed, so the data is in place when the client sees it.
//   WRITE  same fields: the node one-sided-reads pool[buffer_offset, ...) and
//          writes it to device[offset, ...); replies when the device write is
//          done (durable only after a FLUSH).
//   FLUSH  {request_id}: fdatasync of the backing file; replies when done.
//
// Reply body: {u64 request_id, u64 bytes, u32 error_len, error text}, then for
// an OK HELLO the DeviceInfo (24 bytes). `status` is a rampart StatusCode
// (common/status.h); a non-OK reply carries the error text.
//
// Decoding is bounds-checked: a truncated frame is kCorruption (the message
// cannot be trusted past it), a well-framed request with bad fields is
// kInvalidArgument for that request alone.
//
// Thread-safety: plain functions and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rampart::storage::wire {

enum class MsgType : uint8_t {
  kHello = 1,
  kRead = 2,
  kWrite = 3,
  kFlush = 4,
};
inline constexpr uint8_t kMaxMsgType = 4;
// "HELLO", "READ", "WRITE", "FLUSH", "UNKNOWN".
std::string_view MsgTypeName(uint8_t type);

inline constexpr size_t kFrameHeaderBytes = 8;
inline constexpr size_t kIoBodyBytes = 32;          // READ / WRITE body
inline constexpr size_t kReplyFixedBytes = 20;      // request_id, bytes, error_len
inline constexpr size_t kDeviceInfoBytes = 24;
inline constexpr uint32_t kMaxErrorBytes = 1024;    // longer error texts are cut
inline constexpr uint32_t kMaxDescriptorBytes = 64u << 10;

// What a HELLO reply tells the client about the device.
struct DeviceInfo {
  uint64_t device_bytes = 0;
  uint32_t block_bytes = 0;
  uint32_t max_io_bytes = 0;
  uint32_t alignment = 1;     // offsets, lengths and buffer offsets: multiples of this
  uint32_t queue_depth = 0;   // requests in flight per connection the node serves at once

  bool operator==(const DeviceInfo&) const = default;
};

struct Request {
  MsgType type = MsgType::kRead;
  uint64_t request_id = 0;
  uint64_t offset = 0;         // READ, WRITE
  uint32_t length = 0;         // READ, WRITE
  uint64_t buffer_offset = 0;  // READ, WRITE
  std::span<const std::byte> descriptor;  // HELLO: a view into the message
};

struct Reply {
  MsgType type = MsgType::kRead;  // the request's type (raw value kept for unknown ones)
  uint8_t raw_type = 0;
  StatusCode status = StatusCode::kOk;
  uint64_t request_id = 0;
  uint64_t bytes = 0;
  std::string error;   // when status != kOk
  DeviceInfo info;     // an OK HELLO

  bool ok() const { return status == StatusCode::kOk; }
  // OK, or the reply's error as a Status.
  Status ToStatus() const;
};

// ---- encoding (appends to `out`) ----
void AppendHello(std::vector<std::byte>& out, uint64_t request_id,
                 std::span<const std::byte> descriptor);
void AppendRead(std::vector<std::byte>& out, uint64_t request_id, uint64_t offset,
                uint32_t length, uint64_t buffer_offset);
void AppendWrite(std::vector<std::byte>& out, uint64_t request_id, uint64_t offset,
                 uint32_t length, uint64_t buffer_offset);
void AppendFlush(std::vector<std::byte>& out, uint64_t request_id);

// An OK reply (`info` is written for HELLO only).
void AppendReply(std::vector<std::byte>& out, uint8_t type, uint64_t request_id,
                 uint64_t bytes, const DeviceInfo* info = nullptr);
// An error reply; `status` must not be OK (an OK status becomes kInternal).
// The message is cut to kMaxErrorBytes.
void AppendErrorReply(std::vector<std::byte>& out, uint8_t type, uint64_t request_id,
                      const Status& status);

// ---- decoding ----

// One framed request of a message: its raw type, its request_id (0 when the
// body is too short to hold one) and the body.
struct Frame {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint64_t request_id = 0;
  std::span<const std::byte> body;
};
// Splits a message into frames. kCorruption when a header or body runs past
// the end or the message is empty; nothing of such a message can be trusted.
Result<std::vector<Frame>> SplitFrames(std::span<const std::byte> message);
// Decodes one request frame: kInvalidArgument for an unknown type, nonzero
// flags, or a body of the wrong size for its type.
Result<Request> DecodeRequest(const Frame& frame);

// Decodes every reply of a message, all or nothing.
Result<std::vector<Reply>> DecodeReplies(std::span<const std::byte> message);

}  // namespace rampart::storage::wire
