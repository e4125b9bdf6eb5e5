// The KV wire protocol between the client library (src/txn, the proxy) and a
// kv-node. docs/kv_protocol.md has the byte layout; this is the C++ side.
//
// A message carries several requests (batching); one request is for ONE
// partition and carries ALL of that partition's keys for the phase:
//
//   message  = u32 count, then `count` requests           (little-endian)
//   request  = header {u8 type, u8 flags, u16 partition, u32 body_len,
//                      u64 request_id} (16 B), then body_len bytes of body
//
// Replies travel the same way (u32 count, then replies with a 16-byte header
// {u8 type, u8 status, u16 partition, u32 body_len, u64 request_id}).
//
// Request types: PREPARE, COMMIT, GET, GET_BY_TS, LOCK, UNLOCK, DESCRIBE (the
// descriptor of one extent of the partition's arena, for one-sided GET*
// reads), COUNT (live keys), FLUSH (drop every version; the proxy's DBSIZE and
// FLUSHDB) and STATS (keys and memory; the proxy's INFO memory). There is no
// separate PUT: isolation `none` and the writes of `s2pl` send PREPARE with
// kFlagCommitNow, which prepares and commits in one step (one round trip, and
// one write path in the version store).
//
// Encoding: RequestWriter / ReplyWriter append to a std::vector<std::byte>.
// Decoding is strictly bounds-checked; every count and length is checked
// against the bytes left and against ProtocolLimits before it is used, and a
// bad field gives kCorruption (truncated/inconsistent) or kInvalidArgument
// (well-formed but over a limit, unknown type/flag/mode) naming the field:
//   "truncated GET request (id 7): key 3 of 8 needs 120 bytes, 17 left".
// Decoded structs hold views (std::string_view, KeyList) into the message
// bytes: no key or value is copied. They are valid as long as the message
// buffer is.
//
// Two decoding levels, so a node can answer a bad request with an error reply
// and still serve the other requests of the message:
//   SplitRequests()  framing only (count, headers, body lengths); an error
//                    here means the message cannot be trusted at all.
//   DecodeRequest()  one request's body; an error is that request's alone.
// DecodeRequests() does both, all or nothing.
//
// Thread-safety: plain functions and values; a writer belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "kv/lock_table.h"

namespace rampart::kv::wire {

enum class MsgType : uint8_t {
  kPrepare = 1,
  kCommit = 2,
  kGet = 3,
  kGetByTs = 4,
  kLock = 5,
  kUnlock = 6,
  kDescribe = 7,
  kCount = 8,
  kFlush = 9,
  kStats = 10,
  kScan = 11,
};
inline constexpr uint8_t kMaxMsgType = 11;

// Keys that start with these bytes are the proxy's internal keys (the pages
// of paged collections, src/proxy/internal_keys.h): COUNT and STATS leave
// them out of the key counts; SCAN lists them like any key.
inline constexpr std::string_view kInternalKeyPrefix{"\x00\x01", 2};
// The most bytes of each value a SCAN reply carries.
inline constexpr uint32_t kMaxScanHeadBytes = 256;
// "PREPARE", ..., "UNKNOWN" for values outside the enum.
std::string_view MsgTypeName(MsgType type);

// Request flags (header byte 1). Unknown bits are rejected.
// PREPARE: commit the versions right away (isolation none, s2pl writes).
inline constexpr uint8_t kFlagCommitNow = 0x01;
// PREPARE: answer with the slot address of each item's version (an OK reply
// with slots instead of an empty body), so the writer can read its own
// writes one-sidedly (GET*) without a GET first.
inline constexpr uint8_t kFlagReturnSlots = 0x02;
// PREPARE, only with kFlagCommitNow: store the items only if none of their
// keys has a live version here (Partition::Absent); otherwise the request is
// refused as a whole with kAlreadyExists and nothing is written. A writer
// that guessed its keys are new (the proxy's write of a key it has never
// seen) saves the read it would otherwise need first.
inline constexpr uint8_t kFlagIfAbsent = 0x04;
// PREPARE, only with kFlagCommitNow: the body ends with a list of (key, ts)
// after the items, and the items are stored only if each listed key's newest
// version here is still the one at ts (0: none) — nothing newer committed or
// prepared since (Partition::Unchanged); otherwise the request is refused as
// a whole with kFailedPrecondition and nothing is written. A writer whose
// read-modify-write read those versions (the proxy) is serialized with every
// other writer of the keys, whichever proxy or client it is.
inline constexpr uint8_t kFlagIfUnchanged = 0x08;

inline constexpr size_t kMessageHeaderBytes = 4;
inline constexpr size_t kRequestHeaderBytes = 16;
inline constexpr size_t kReplyHeaderBytes = 16;
// ReplyWriter::Error truncates longer messages; decoders reject them.
inline constexpr uint32_t kMaxErrorMessageBytes = 1024;
// A DESCRIBE reply's arena descriptor (a few remote keys) is at most this.
inline constexpr uint32_t kMaxDescriptorBytes = 64u << 10;

// What a decoder accepts. The node takes these from the cluster
// configuration; clients use the same values.
struct ProtocolLimits {
  // Whole message. Default: 64 MiB.
  uint32_t max_message_bytes = 64u << 20;
  // Requests (or replies) in one message. Default: 4096.
  uint32_t max_requests_per_message = 4096;
  // Items of a PREPARE / GET_BY_TS, keys of a GET / LOCK, sibling keys of one
  // PREPARE item, results of a GET reply. Default: 65536.
  uint32_t max_keys_per_request = 65536;
  // One key. Default: 64 KiB.
  uint32_t max_key_bytes = 64u << 10;
  // One value. Default: 16 MiB.
  uint32_t max_value_bytes = 16u << 20;
};

// ---------------------------------------------------------------------------
// A list of keys as it is on the wire: u32 count, then per key u32 len +
// bytes. This is also exactly the slot metadata encoding (kv/slot.h
// EncodeSiblings), so PREPARE siblings can be copied into a slot and a slot's
// metadata into a GET reply without re-encoding.
class KeyList {
 public:
  KeyList() = default;

  // Validates `encoded` (must be the complete encoding; "" is the empty list).
  static Result<KeyList> Parse(std::string_view encoded,
                               const ProtocolLimits& limits = ProtocolLimits());

  uint32_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // The encoding with its count; "" for a default-constructed list.
  std::string_view encoded() const { return encoded_; }
  std::vector<std::string_view> ToVector() const;

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = std::string_view;
    Iterator() = default;
    std::string_view operator*() const;
    Iterator& operator++();
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.p_ == b.p_; }

   private:
    friend class KeyList;
    explicit Iterator(const char* p) : p_(p) {}
    const char* p_ = nullptr;
  };
  Iterator begin() const;
  Iterator end() const;

 private:
  friend class BodyReader;
  KeyList(std::string_view encoded, uint32_t count) : encoded_(encoded), count_(count) {}
  std::string_view encoded_;
  uint32_t count_ = 0;
};

// The KeyList encoding of `keys`.
std::string EncodeKeyList(std::span<const std::string_view> keys);

// ---------------------------------------------------------------------------
// Requests.

struct RequestHeader {
  MsgType type = MsgType::kGet;  // may hold an unknown value after SplitRequests
  uint8_t flags = 0;
  uint16_t partition = 0;
  uint32_t body_len = 0;
  uint64_t request_id = 0;
};

// One item of a PREPARE as the writer takes it.
struct PrepareItemIn {
  std::string_view key;
  std::string_view value;
  // KeyList encoding (EncodeKeyList or kv/slot.h EncodeSiblings); "" = none.
  // REQUIRES: well-formed (the writer copies it as is).
  std::string_view siblings;
  bool tombstone = false;
};

struct KeyTs {
  std::string_view key;
  uint64_t ts = 0;
};

struct LockKey {
  std::string_view key;
  LockMode mode = LockMode::kShared;
};

// Decoded bodies. Views point into the message.
struct PrepareItem {
  std::string_view key;
  std::string_view value;
  KeyList siblings;
  bool tombstone = false;
};
struct PrepareRequest {
  uint64_t ts = 0;
  std::vector<PrepareItem> items;
  // kFlagIfUnchanged: the versions the writer read, which must still be the newest.
  std::vector<KeyTs> unchanged;
  // The body's bytes up to the end of the items: what the redo log keeps
  // (docs/log_format.md), without the kFlagIfUnchanged list.
  size_t items_bytes = 0;
};
struct CommitRequest {
  uint64_t ts = 0;
};
struct GetRequest {
  std::vector<std::string_view> keys;
};
struct GetByTsRequest {
  std::vector<KeyTs> items;
};
// Keys are locked in the order given (the client sorts them globally).
struct LockRequest {
  uint64_t txn = 0;
  std::vector<LockKey> keys;
};
// Releases every lock txn holds at this partition (commit or abort).
struct UnlockRequest {
  uint64_t txn = 0;
};
// Asks for the descriptor of one extent of the partition's arena.
struct DescribeRequest {
  uint32_t extent = 0;
};
// Asks how many keys of the partition are live: their latest committed
// version is not a tombstone (empty body; the reply carries a u64).
struct CountRequest {};
// Drops every version of the partition, committed and prepared (empty body).
struct FlushRequest {};
// Asks for the partition's key count and memory (empty body).
struct StatsRequest {};
// Lists keys whose latest committed version is not a tombstone, in the order
// of their 64-bit hash (kv::Partition::ScanKeys), from hash position `from`
// on: at least `max_keys` keys looked at (then the rest of the keys in the
// same 2^16-wide hash range), each with the first `head_bytes` of its value.
struct ScanRequest {
  uint64_t from = 0;
  uint32_t max_keys = 0;
  uint32_t head_bytes = 0;
};

struct Request {
  RequestHeader header;
  std::variant<PrepareRequest, CommitRequest, GetRequest, GetByTsRequest, LockRequest,
               UnlockRequest, DescribeRequest, CountRequest, FlushRequest, StatsRequest,
               ScanRequest>
      body;
};

// The framing RequestWriter and ReplyWriter share: a u32 count, then frames
// of a 16-byte header {u8, u8, u16 partition, u32 body_len, u64 request_id}
// and a body. The count and each body_len are patched as frames complete, so
// the bytes form a complete message at any point.
class FrameWriter {
 public:
  uint32_t count() const { return count_; }
  size_t message_bytes() const { return out_->size() - start_; }

 protected:
  explicit FrameWriter(std::vector<std::byte>* out);
  // Writes a header (body_len 0 for now); returns where it starts.
  size_t Begin(uint8_t byte0, uint8_t byte1, uint16_t partition, uint64_t request_id);
  // Patches the body_len of the frame at `header_at` and the count.
  void End(size_t header_at);

  std::vector<std::byte>* out_;

 private:
  size_t start_;
  uint32_t count_ = 0;
};

// Appends one request message to *out (which may already hold other bytes).
// The count at the start of the message is kept up to date after every call,
// so the bytes form a complete message at any point.
// REQUIRES: every key, value and body shorter than 4 GiB; `out` outlives the
// writer.
class RequestWriter : public FrameWriter {
 public:
  explicit RequestWriter(std::vector<std::byte>* out) : FrameWriter(out) {}

  // `unchanged` is written after the items when flags has kFlagIfUnchanged
  // (REQUIRES: empty otherwise).
  void Prepare(uint16_t partition, uint64_t request_id, uint64_t ts,
               std::span<const PrepareItemIn> items, uint8_t flags = 0,
               std::span<const KeyTs> unchanged = {});
  void Commit(uint16_t partition, uint64_t request_id, uint64_t ts);
  void Get(uint16_t partition, uint64_t request_id, std::span<const std::string_view> keys);
  void GetByTs(uint16_t partition, uint64_t request_id, std::span<const KeyTs> items);
  void Lock(uint16_t partition, uint64_t request_id, uint64_t txn,
            std::span<const LockKey> keys);
  void Unlock(uint16_t partition, uint64_t request_id, uint64_t txn);
  void Describe(uint16_t partition, uint64_t request_id, uint32_t extent);
  void Count(uint16_t partition, uint64_t request_id);
  void Flush(uint16_t partition, uint64_t request_id);
  void Stats(uint16_t partition, uint64_t request_id);
  void Scan(uint16_t partition, uint64_t request_id, const ScanRequest& scan);

 private:
  size_t BeginRequest(MsgType type, uint8_t flags, uint16_t partition, uint64_t request_id) {
    return Begin(static_cast<uint8_t>(type), flags, partition, request_id);
  }
};

// One request of a message, framed but not decoded. `body` views the message.
struct RequestFrame {
  RequestHeader header;
  std::span<const std::byte> body;
};

// Framing: kCorruption/kInvalidArgument if the count, a header or a body
// length does not fit the message or the limits, or bytes trail the last
// request.
Result<std::vector<RequestFrame>> SplitRequests(std::span<const std::byte> message,
                                                const ProtocolLimits& limits);
// One request's body. Errors concern this request only.
Result<Request> DecodeRequest(const RequestFrame& frame, const ProtocolLimits& limits);
// SplitRequests + DecodeRequest for each; the first error wins.
Result<std::vector<Request>> DecodeRequests(std::span<const std::byte> message,
                                            const ProtocolLimits& limits);

// ---------------------------------------------------------------------------
// Replies.

// Where a version lives in the node's arena: what a one-sided (GET*) reader
// reads later and checks against the gen.
struct SlotAddress {
  uint64_t offset = 0;  // the arena address: extent << 40 | offset in the extent
  uint32_t extent() const { return static_cast<uint32_t>(offset >> 40); }
  uint64_t extent_offset() const { return offset & ((uint64_t{1} << 40) - 1); }
  uint32_t bytes = 0;
  uint32_t gen = 0;
  friend bool operator==(const SlotAddress&, const SlotAddress&) = default;
};

// One key's result in a GET / GET_BY_TS reply, in request key order.
struct GetResultIn {
  bool found = false;  // false: no committed version / no version at that ts
  bool tombstone = false;
  uint64_t ts = 0;
  std::string_view value;
  std::string_view siblings;  // KeyList encoding, "" = none (slot metadata as is)
  SlotAddress slot;
};
struct GetResult {
  bool found = false;
  bool tombstone = false;
  uint64_t ts = 0;
  std::string_view value;
  KeyList siblings;
  SlotAddress slot;
};

struct ReplyHeader {
  uint8_t type = 0;  // the request's type byte, echoed (also when unknown)
  StatusCode status = StatusCode::kOk;
  uint16_t partition = 0;
  uint32_t body_len = 0;
  uint64_t request_id = 0;
};

// An OK DESCRIBE reply: how a client reaches one extent of the partition's
// arena (the addresses extent << kv::Arena::kExtentShift ...).
struct ArenaInfo {
  uint64_t extent_bytes = 0;
  // transport::MemoryRegion::Descriptor() of the extent, for Endpoint::Import.
  std::string_view descriptor;
};

// An OK STATS reply.
struct PartitionStatsInfo {
  uint64_t keys = 0;            // live keys (as COUNT)
  uint64_t versions = 0;        // prepared + committed versions held
  uint64_t used_bytes = 0;      // arena pages in use (slabs and large slots)
  uint64_t reserved_bytes = 0;  // arena extents registered
  uint64_t max_ts = 0;          // largest timestamp prepared (Partition::max_ts)
  uint64_t internal_keys = 0;   // live internal keys (kInternalKeyPrefix), not in `keys`
};

// One key of an OK SCAN reply: views into the reply message.
struct ScanItem {
  std::string_view key;
  std::string_view head;  // the first head_bytes of the value (all of a shorter one)
};
// An OK SCAN reply.
struct ScanResult {
  bool done = false;   // no keys after these
  uint64_t next = 0;   // !done: the hash position to continue from
  std::vector<ScanItem> items;
};

struct Reply {
  ReplyHeader header;
  std::string_view error;          // status != OK
  std::vector<GetResult> results;  // OK GET / GET_BY_TS
  ArenaInfo arena;                 // OK DESCRIBE
  uint64_t count = 0;              // OK COUNT: the partition's live keys
  PartitionStatsInfo stats;        // OK STATS
  ScanResult scan;                 // OK SCAN
  // OK PREPARE with kFlagReturnSlots: one per item in the request's order;
  // bytes == 0 where the version has no slot to read (see ReplyWriter::Slots).
  std::vector<SlotAddress> slots;
  bool ok() const { return header.status == StatusCode::kOk; }
  // OK, or the node's error with its message.
  Status ToStatus() const;
};

class ReplyWriter : public FrameWriter {
 public:
  explicit ReplyWriter(std::vector<std::byte>* out) : FrameWriter(out) {}

  // PREPARE, COMMIT, LOCK (all keys granted), UNLOCK, FLUSH: empty body.
  void Ok(MsgType type, uint16_t partition, uint64_t request_id);
  // REQUIRES: !status.ok(). `type` is the request's raw type byte.
  void Error(uint8_t type, uint16_t partition, uint64_t request_id, const Status& status);
  // PREPARE with kFlagReturnSlots: `slots[i]` is item i's version — with
  // COMMIT_NOW only when that version became the key's latest committed one
  // (else bytes 0); without it, the prepared version, readable once a COMMIT
  // makes it the latest.
  void Slots(uint16_t partition, uint64_t request_id, std::span<const SlotAddress> slots);
  // GET / GET_BY_TS.
  void GetResults(MsgType type, uint16_t partition, uint64_t request_id,
                  std::span<const GetResultIn> results);
  // The bytes GetResults appends for `results` (its frame, header included).
  static size_t GetResultsBytes(std::span<const GetResultIn> results);
  // DESCRIBE.
  void Arena(uint16_t partition, uint64_t request_id, const ArenaInfo& arena);
  // COUNT: `keys` live keys.
  void Count(uint16_t partition, uint64_t request_id, uint64_t keys);
  // STATS.
  void Stats(uint16_t partition, uint64_t request_id, const PartitionStatsInfo& stats);
  // SCAN: `next` nullopt when done.
  void Scan(uint16_t partition, uint64_t request_id, std::optional<uint64_t> next,
            std::span<const ScanItem> items);

 private:
  size_t BeginReply(uint8_t type, StatusCode status, uint16_t partition, uint64_t request_id) {
    return Begin(type, static_cast<uint8_t>(status), partition, request_id);
  }
};

Result<std::vector<Reply>> DecodeReplies(std::span<const std::byte> message,
                                         const ProtocolLimits& limits);

}  // namespace rampart::kv::wire
