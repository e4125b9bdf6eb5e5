#include "kv/protocol.h"

#include <array>
#include <cstring>

namespace rampart::kv::wire {
namespace {

// ---- little-endian primitives ---------------------------------------------

void Put8(std::vector<std::byte>* out, uint8_t v) { out->push_back(std::byte{v}); }
void PutLe(std::vector<std::byte>* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<std::byte>(v >> (8 * i)));
}
void Put16(std::vector<std::byte>* out, uint16_t v) { PutLe(out, v, 2); }
void Put32(std::vector<std::byte>* out, uint32_t v) { PutLe(out, v, 4); }
void Put64(std::vector<std::byte>* out, uint64_t v) { PutLe(out, v, 8); }
void PutBytes(std::vector<std::byte>* out, std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out->insert(out->end(), p, p + s.size());
}
void PutString(std::vector<std::byte>* out, std::string_view s) {
  Put32(out, static_cast<uint32_t>(s.size()));
  PutBytes(out, s);
}
void PutKeyList(std::vector<std::byte>* out, std::string_view encoded) {
  if (encoded.empty()) {
    Put32(out, 0);
  } else {
    PutBytes(out, encoded);
  }
}
void Patch32(std::vector<std::byte>* out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*out)[at + i] = static_cast<std::byte>(v >> (8 * i));
}
uint64_t GetLe(const std::byte* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{std::to_integer<uint8_t>(p[i])} << (8 * i);
  return v;
}
uint32_t Get32(const char* p) { return static_cast<uint32_t>(GetLe(reinterpret_cast<const std::byte*>(p), 4)); }

}  // namespace

// ---- BodyReader: bounds-checked reads with field-naming errors ------------
//
// Every read names its field through a callable that is invoked only on error,
// so the success path builds no strings.
class BodyReader {
 public:
  BodyReader(std::span<const std::byte> bytes, std::string_view what, uint64_t request_id,
             const ProtocolLimits& limits)
      : p_(bytes.data()), left_(bytes.size()), what_(what), id_(request_id), limits_(limits) {}

  size_t left() const { return left_; }

  template <typename Field>
  Status Int(uint64_t* v, int bytes, Field&& field) {
    if (left_ < static_cast<size_t>(bytes)) return Truncated(field(), bytes);
    *v = GetLe(p_, bytes);
    Skip(bytes);
    return Status::Ok();
  }
  template <typename Field>
  Status U8(uint8_t* v, Field&& field) {
    uint64_t x = 0;
    RAMPART_RETURN_IF_ERROR(Int(&x, 1, field));
    *v = static_cast<uint8_t>(x);
    return Status::Ok();
  }
  template <typename Field>
  Status U32(uint32_t* v, Field&& field) {
    uint64_t x = 0;
    RAMPART_RETURN_IF_ERROR(Int(&x, 4, field));
    *v = static_cast<uint32_t>(x);
    return Status::Ok();
  }
  template <typename Field>
  Status U64(uint64_t* v, Field&& field) {
    return Int(v, 8, field);
  }

  // u32 length + bytes; the length is checked against `max` first.
  template <typename Field>
  Status String(std::string_view* out, uint32_t max, std::string_view limit_name,
                Field&& field) {
    uint32_t len;
    RAMPART_RETURN_IF_ERROR(U32(&len, [&] { return StrCat("length of ", field()); }));
    if (len > max) {
      return InvalidArgument(what_, " (id ", id_, "): ", field(), " is ", len,
                             " bytes, over the limit of ", max, " (", limit_name, ")");
    }
    if (left_ < len) return Truncated(field(), len);
    *out = std::string_view(reinterpret_cast<const char*>(p_), len);
    Skip(len);
    return Status::Ok();
  }

  // u32 count of items each at least `min_item_bytes` long; checked against
  // max_keys_per_request and against the bytes left (so a garbage count
  // never makes the caller reserve memory).
  template <typename Field>
  Status Count(uint32_t* n, size_t min_item_bytes, Field&& field) {
    RAMPART_RETURN_IF_ERROR(U32(n, field));
    if (*n > limits_.max_keys_per_request) {
      return InvalidArgument(what_, " (id ", id_, "): ", field(), " is ", *n,
                             ", over the limit of ", limits_.max_keys_per_request,
                             " (max_keys_per_request)");
    }
    if (uint64_t{*n} * min_item_bytes > left_) {
      return Corruption("truncated ", what_, " (id ", id_, "): ", field(), " is ", *n,
                        " but ", *n, " items need at least ", uint64_t{*n} * min_item_bytes,
                        " bytes, ", left_, " left");
    }
    return Status::Ok();
  }

  template <typename Field>
  Status Keys(KeyList* out, Field&& field) {
    const std::byte* start = p_;
    uint32_t n;
    RAMPART_RETURN_IF_ERROR(Count(&n, 4, [&] { return StrCat("count of ", field()); }));
    for (uint32_t i = 0; i < n; ++i) {
      std::string_view key;
      RAMPART_RETURN_IF_ERROR(String(&key, limits_.max_key_bytes, "max_key_bytes", [&] {
        return StrCat(field(), " key ", i + 1, " of ", n);
      }));
    }
    *out = KeyList(std::string_view(reinterpret_cast<const char*>(start),
                                    static_cast<size_t>(p_ - start)),
                   n);
    return Status::Ok();
  }

  Status Finish() const {
    if (left_ != 0) {
      return Corruption(what_, " (id ", id_, ") has ", left_, " trailing bytes after its body");
    }
    return Status::Ok();
  }

  Status Error(StatusCode code, std::string_view detail) const {
    return Status(code, StrCat(what_, " (id ", id_, "): ", detail));
  }

  const ProtocolLimits& limits() const { return limits_; }

 private:
  void Skip(size_t n) {
    p_ += n;
    left_ -= n;
  }
  Status Truncated(const std::string& field, size_t need) const {
    return Corruption("truncated ", what_, " (id ", id_, "): ", field, " needs ", need,
                      " bytes, ", left_, " left");
  }

  const std::byte* p_;
  size_t left_;
  std::string_view what_;
  uint64_t id_;
  const ProtocolLimits& limits_;
};

// ---- KeyList ----------------------------------------------------------------

Result<KeyList> KeyList::Parse(std::string_view encoded, const ProtocolLimits& limits) {
  if (encoded.empty()) return KeyList();
  BodyReader r(std::as_bytes(std::span(encoded.data(), encoded.size())), "key list", 0, limits);
  KeyList list;
  RAMPART_RETURN_IF_ERROR(r.Keys(&list, [] { return std::string("list"); }));
  RAMPART_RETURN_IF_ERROR(r.Finish());
  return list;
}

std::vector<std::string_view> KeyList::ToVector() const {
  std::vector<std::string_view> v;
  v.reserve(count_);
  for (std::string_view k : *this) v.push_back(k);
  return v;
}

KeyList::Iterator KeyList::begin() const {
  return encoded_.empty() ? end() : Iterator(encoded_.data() + 4);
}
KeyList::Iterator KeyList::end() const { return Iterator(encoded_.data() + encoded_.size()); }
std::string_view KeyList::Iterator::operator*() const {
  return std::string_view(p_ + 4, Get32(p_));
}
KeyList::Iterator& KeyList::Iterator::operator++() {
  p_ += 4 + Get32(p_);
  return *this;
}

std::string EncodeKeyList(std::span<const std::string_view> keys) {
  std::vector<std::byte> out;
  Put32(&out, static_cast<uint32_t>(keys.size()));
  for (std::string_view k : keys) PutString(&out, k);
  return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

std::string_view MsgTypeName(MsgType type) {
  switch (type) {
    case MsgType::kPrepare: return "PREPARE";
    case MsgType::kCommit: return "COMMIT";
    case MsgType::kGet: return "GET";
    case MsgType::kGetByTs: return "GET_BY_TS";
    case MsgType::kLock: return "LOCK";
    case MsgType::kUnlock: return "UNLOCK";
    case MsgType::kDescribe: return "DESCRIBE";
    case MsgType::kCount: return "COUNT";
    case MsgType::kFlush: return "FLUSH";
    case MsgType::kStats: return "STATS";
    case MsgType::kScan: return "SCAN";
  }
  return "UNKNOWN";
}

// ---- FrameWriter, RequestWriter ------------------------------------------------

static_assert(kRequestHeaderBytes == kReplyHeaderBytes, "FrameWriter writes both");

FrameWriter::FrameWriter(std::vector<std::byte>* out) : out_(out), start_(out->size()) {
  Put32(out_, 0);
}

size_t FrameWriter::Begin(uint8_t byte0, uint8_t byte1, uint16_t partition,
                          uint64_t request_id) {
  size_t at = out_->size();
  Put8(out_, byte0);
  Put8(out_, byte1);
  Put16(out_, partition);
  Put32(out_, 0);  // body_len, patched by End
  Put64(out_, request_id);
  return at;
}

void FrameWriter::End(size_t header_at) {
  Patch32(out_, header_at + 4,
          static_cast<uint32_t>(out_->size() - header_at - kRequestHeaderBytes));
  Patch32(out_, start_, ++count_);
}

void RequestWriter::Prepare(uint16_t partition, uint64_t request_id, uint64_t ts,
                            std::span<const PrepareItemIn> items, uint8_t flags,
                            std::span<const KeyTs> unchanged) {
  size_t at = BeginRequest(MsgType::kPrepare, flags, partition, request_id);
  Put64(out_, ts);
  Put32(out_, static_cast<uint32_t>(items.size()));
  for (const PrepareItemIn& item : items) {
    PutString(out_, item.key);
    PutString(out_, item.value);
    Put8(out_, item.tombstone ? 1 : 0);
    PutKeyList(out_, item.siblings);
  }
  if ((flags & kFlagIfUnchanged) != 0) {
    Put32(out_, static_cast<uint32_t>(unchanged.size()));
    for (const KeyTs& k : unchanged) {
      PutString(out_, k.key);
      Put64(out_, k.ts);
    }
  }
  End(at);
}

void RequestWriter::Commit(uint16_t partition, uint64_t request_id, uint64_t ts) {
  size_t at = BeginRequest(MsgType::kCommit, 0, partition, request_id);
  Put64(out_, ts);
  End(at);
}

void RequestWriter::Get(uint16_t partition, uint64_t request_id,
                        std::span<const std::string_view> keys) {
  size_t at = BeginRequest(MsgType::kGet, 0, partition, request_id);
  Put32(out_, static_cast<uint32_t>(keys.size()));
  for (std::string_view k : keys) PutString(out_, k);
  End(at);
}

void RequestWriter::GetByTs(uint16_t partition, uint64_t request_id,
                            std::span<const KeyTs> items) {
  size_t at = BeginRequest(MsgType::kGetByTs, 0, partition, request_id);
  Put32(out_, static_cast<uint32_t>(items.size()));
  for (const KeyTs& item : items) {
    PutString(out_, item.key);
    Put64(out_, item.ts);
  }
  End(at);
}

void RequestWriter::Lock(uint16_t partition, uint64_t request_id, uint64_t txn,
                         std::span<const LockKey> keys) {
  size_t at = BeginRequest(MsgType::kLock, 0, partition, request_id);
  Put64(out_, txn);
  Put32(out_, static_cast<uint32_t>(keys.size()));
  for (const LockKey& k : keys) {
    Put8(out_, static_cast<uint8_t>(k.mode));
    PutString(out_, k.key);
  }
  End(at);
}

void RequestWriter::Unlock(uint16_t partition, uint64_t request_id, uint64_t txn) {
  size_t at = BeginRequest(MsgType::kUnlock, 0, partition, request_id);
  Put64(out_, txn);
  End(at);
}

void RequestWriter::Describe(uint16_t partition, uint64_t request_id, uint32_t extent) {
  size_t at = BeginRequest(MsgType::kDescribe, 0, partition, request_id);
  Put32(out_, extent);
  End(at);
}

void RequestWriter::Count(uint16_t partition, uint64_t request_id) {
  End(BeginRequest(MsgType::kCount, 0, partition, request_id));
}

void RequestWriter::Flush(uint16_t partition, uint64_t request_id) {
  End(BeginRequest(MsgType::kFlush, 0, partition, request_id));
}

void RequestWriter::Stats(uint16_t partition, uint64_t request_id) {
  End(BeginRequest(MsgType::kStats, 0, partition, request_id));
}

void RequestWriter::Scan(uint16_t partition, uint64_t request_id, const ScanRequest& scan) {
  size_t at = BeginRequest(MsgType::kScan, 0, partition, request_id);
  Put64(out_, scan.from);
  Put32(out_, scan.max_keys);
  Put32(out_, scan.head_bytes);
  End(at);
}

// ---- framing ------------------------------------------------------------------

namespace {

// Shared by requests and replies: both have a 16-byte header whose bytes 4..8
// are body_len. `kind` is "request" or "reply".
template <typename Frame, typename ParseHeader>
Result<std::vector<Frame>> SplitFrames(std::span<const std::byte> message,
                                       const ProtocolLimits& limits, std::string_view kind,
                                       ParseHeader&& parse_header) {
  if (message.size() > limits.max_message_bytes) {
    return InvalidArgument(kind, " message is ", message.size(), " bytes, over the limit of ",
                           limits.max_message_bytes, " (max_message_bytes)");
  }
  if (message.size() < kMessageHeaderBytes) {
    return Corruption("truncated ", kind, " message: count needs 4 bytes, ", message.size(),
                      " left");
  }
  const uint32_t count = static_cast<uint32_t>(GetLe(message.data(), 4));
  if (count > limits.max_requests_per_message) {
    return InvalidArgument(kind, " message has ", count, " ", kind, "s, over the limit of ",
                           limits.max_requests_per_message, " (max_requests_per_message)");
  }
  size_t pos = kMessageHeaderBytes;
  if (uint64_t{count} * kRequestHeaderBytes > message.size() - pos) {
    return Corruption("truncated ", kind, " message: ", count, " ", kind, "s need at least ",
                      uint64_t{count} * kRequestHeaderBytes, " bytes, ", message.size() - pos,
                      " left");
  }
  std::vector<Frame> frames;
  frames.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t left = message.size() - pos;
    if (left < kRequestHeaderBytes) {
      return Corruption("truncated ", kind, " message: header of ", kind, " ", i + 1, " of ",
                        count, " needs ", kRequestHeaderBytes, " bytes, ", left, " left");
    }
    Frame frame;
    parse_header(message.data() + pos, &frame.header);
    pos += kRequestHeaderBytes;
    if (frame.header.body_len > message.size() - pos) {
      return Corruption("truncated ", kind, " message: body of ", kind, " ", i + 1, " of ",
                        count, " (id ", frame.header.request_id, ") needs ",
                        frame.header.body_len, " bytes, ", message.size() - pos, " left");
    }
    frame.body = message.subspan(pos, frame.header.body_len);
    pos += frame.header.body_len;
    frames.push_back(frame);
  }
  if (pos != message.size()) {
    return Corruption(kind, " message has ", message.size() - pos, " trailing bytes after ",
                      count, " ", kind, "s");
  }
  return frames;
}

void ParseRequestHeader(const std::byte* p, RequestHeader* h) {
  h->type = static_cast<MsgType>(GetLe(p, 1));
  h->flags = static_cast<uint8_t>(GetLe(p + 1, 1));
  h->partition = static_cast<uint16_t>(GetLe(p + 2, 2));
  h->body_len = static_cast<uint32_t>(GetLe(p + 4, 4));
  h->request_id = GetLe(p + 8, 8);
}

}  // namespace

Result<std::vector<RequestFrame>> SplitRequests(std::span<const std::byte> message,
                                                const ProtocolLimits& limits) {
  return SplitFrames<RequestFrame>(message, limits, "request", ParseRequestHeader);
}

// ---- request bodies ---------------------------------------------------------------

namespace {

auto Item(const char* noun, uint32_t i, uint32_t n) {
  return [=] { return StrCat(noun, " ", i + 1, " of ", n); };
}
auto Field(const char* name) {
  return [=] { return std::string(name); };
}

Status DecodeKeyTimestamps(BodyReader& r, std::vector<KeyTs>* out) {
  uint32_t n;
  RAMPART_RETURN_IF_ERROR(r.Count(&n, 4 + 8, Field("item count")));
  out->resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    RAMPART_RETURN_IF_ERROR(r.String(&(*out)[i].key, r.limits().max_key_bytes,
                                     "max_key_bytes", Item("key", i, n)));
    RAMPART_RETURN_IF_ERROR(r.U64(&(*out)[i].ts, [&] { return StrCat("ts of key ", i + 1, " of ", n); }));
  }
  return Status::Ok();
}

Status DecodePrepare(BodyReader& r, size_t body_bytes, bool if_unchanged, PrepareRequest* out) {
  RAMPART_RETURN_IF_ERROR(r.U64(&out->ts, Field("ts")));
  uint32_t n;
  // Smallest item: key len, value len, flags, sibling count.
  RAMPART_RETURN_IF_ERROR(r.Count(&n, 4 + 4 + 1 + 4, Field("item count")));
  out->items.resize(n);
  const ProtocolLimits& lim = r.limits();
  for (uint32_t i = 0; i < n; ++i) {
    PrepareItem& item = out->items[i];
    auto what = [&](const char* part) {
      return [=] { return StrCat(part, " of item ", i + 1, " of ", n); };
    };
    RAMPART_RETURN_IF_ERROR(r.String(&item.key, lim.max_key_bytes, "max_key_bytes", what("key")));
    RAMPART_RETURN_IF_ERROR(
        r.String(&item.value, lim.max_value_bytes, "max_value_bytes", what("value")));
    uint8_t flags;
    RAMPART_RETURN_IF_ERROR(r.U8(&flags, what("flags")));
    if (flags > 1) {
      return r.Error(StatusCode::kInvalidArgument,
                     StrCat("flags of item ", i + 1, " of ", n, " are ", flags,
                            "; only bit 0 (tombstone) is defined"));
    }
    item.tombstone = flags != 0;
    RAMPART_RETURN_IF_ERROR(r.Keys(&item.siblings, what("siblings")));
  }
  out->items_bytes = body_bytes - r.left();
  if (if_unchanged) return DecodeKeyTimestamps(r, &out->unchanged);
  return Status::Ok();
}

Status DecodeGet(BodyReader& r, GetRequest* out) {
  uint32_t n;
  RAMPART_RETURN_IF_ERROR(r.Count(&n, 4, Field("key count")));
  out->keys.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    RAMPART_RETURN_IF_ERROR(r.String(&out->keys[i], r.limits().max_key_bytes, "max_key_bytes",
                                     Item("key", i, n)));
  }
  return Status::Ok();
}

Status DecodeGetByTs(BodyReader& r, GetByTsRequest* out) {
  return DecodeKeyTimestamps(r, &out->items);
}

Status DecodeScan(BodyReader& r, ScanRequest* out) {
  RAMPART_RETURN_IF_ERROR(r.U64(&out->from, Field("from")));
  RAMPART_RETURN_IF_ERROR(r.U32(&out->max_keys, Field("max keys")));
  RAMPART_RETURN_IF_ERROR(r.U32(&out->head_bytes, Field("head bytes")));
  if (out->max_keys == 0 || out->max_keys > r.limits().max_keys_per_request) {
    return r.Error(StatusCode::kInvalidArgument,
                   StrCat("max keys ", out->max_keys, " is not within 1..", r.limits().max_keys_per_request));
  }
  if (out->head_bytes > kMaxScanHeadBytes) {
    return r.Error(StatusCode::kInvalidArgument,
                   StrCat("head bytes ", out->head_bytes, " is over ", kMaxScanHeadBytes));
  }
  return Status::Ok();
}

Status DecodeLock(BodyReader& r, LockRequest* out) {
  RAMPART_RETURN_IF_ERROR(r.U64(&out->txn, Field("txn")));
  uint32_t n;
  RAMPART_RETURN_IF_ERROR(r.Count(&n, 1 + 4, Field("key count")));
  out->keys.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t mode;
    RAMPART_RETURN_IF_ERROR(
        r.U8(&mode, [&] { return StrCat("mode of key ", i + 1, " of ", n); }));
    if (mode != static_cast<uint8_t>(LockMode::kShared) &&
        mode != static_cast<uint8_t>(LockMode::kExclusive)) {
      return r.Error(StatusCode::kInvalidArgument,
                     StrCat("mode of key ", i + 1, " of ", n, " is ", mode,
                            "; expected 1 (shared) or 2 (exclusive)"));
    }
    out->keys[i].mode = static_cast<LockMode>(mode);
    RAMPART_RETURN_IF_ERROR(r.String(&out->keys[i].key, r.limits().max_key_bytes,
                                     "max_key_bytes", Item("key", i, n)));
  }
  return Status::Ok();
}

bool KnownType(uint8_t type) { return type != 0 && type <= kMaxMsgType; }

// "GET request" / "GET reply" for every known type, built once, so decoding
// a well-formed frame builds no string (BodyReader only names errors).
const std::string& KnownWhat(uint8_t type, bool reply) {
  static const auto table = [] {
    std::array<std::array<std::string, 2>, kMaxMsgType + 1> t;
    for (uint8_t i = 1; i <= kMaxMsgType; ++i) {
      const std::string_view name = MsgTypeName(static_cast<MsgType>(i));
      t[i] = {StrCat(name, " request"), StrCat(name, " reply")};
    }
    return t;
  }();
  return table[type][reply ? 1 : 0];
}

}  // namespace

Result<Request> DecodeRequest(const RequestFrame& frame, const ProtocolLimits& limits) {
  const uint8_t type = static_cast<uint8_t>(frame.header.type);
  const std::string what =
      KnownType(type) ? std::string() : StrCat("request of type ", type);
  BodyReader r(frame.body, KnownType(type) ? KnownWhat(type, false) : what,
               frame.header.request_id, limits);
  if (!KnownType(type)) {
    return r.Error(StatusCode::kInvalidArgument, "unknown request type");
  }
  const uint8_t allowed_flags = frame.header.type == MsgType::kPrepare
                                    ? (kFlagCommitNow | kFlagReturnSlots | kFlagIfAbsent | kFlagIfUnchanged)
                                    : 0;
  if ((frame.header.flags & ~allowed_flags) != 0) {
    return r.Error(StatusCode::kInvalidArgument,
                   StrCat("unknown flags ", frame.header.flags));
  }
  if ((frame.header.flags & kFlagIfAbsent) != 0 && (frame.header.flags & kFlagCommitNow) == 0) {
    return r.Error(StatusCode::kInvalidArgument, "flag IF_ABSENT needs COMMIT_NOW");
  }
  if ((frame.header.flags & kFlagIfUnchanged) != 0 && (frame.header.flags & kFlagCommitNow) == 0) {
    return r.Error(StatusCode::kInvalidArgument, "flag IF_UNCHANGED needs COMMIT_NOW");
  }
  Request req;
  req.header = frame.header;
  Status st;
  switch (frame.header.type) {
    case MsgType::kPrepare:
      st = DecodePrepare(r, frame.body.size(), (frame.header.flags & kFlagIfUnchanged) != 0,
                         &req.body.emplace<PrepareRequest>());
      break;
    case MsgType::kCommit:
      st = r.U64(&req.body.emplace<CommitRequest>().ts, Field("ts"));
      break;
    case MsgType::kGet:
      st = DecodeGet(r, &req.body.emplace<GetRequest>());
      break;
    case MsgType::kGetByTs:
      st = DecodeGetByTs(r, &req.body.emplace<GetByTsRequest>());
      break;
    case MsgType::kLock:
      st = DecodeLock(r, &req.body.emplace<LockRequest>());
      break;
    case MsgType::kUnlock:
      st = r.U64(&req.body.emplace<UnlockRequest>().txn, Field("txn"));
      break;
    case MsgType::kDescribe:
      st = r.U32(&req.body.emplace<DescribeRequest>().extent, Field("extent"));
      break;
    case MsgType::kCount:
      req.body.emplace<CountRequest>();
      break;
    case MsgType::kFlush:
      req.body.emplace<FlushRequest>();
      break;
    case MsgType::kStats:
      req.body.emplace<StatsRequest>();
      break;
    case MsgType::kScan:
      st = DecodeScan(r, &req.body.emplace<ScanRequest>());
      break;
  }
  RAMPART_RETURN_IF_ERROR(st);
  RAMPART_RETURN_IF_ERROR(r.Finish());
  return req;
}

Result<std::vector<Request>> DecodeRequests(std::span<const std::byte> message,
                                            const ProtocolLimits& limits) {
  RAMPART_ASSIGN_OR_RETURN(std::vector<RequestFrame> frames, SplitRequests(message, limits));
  std::vector<Request> out;
  out.reserve(frames.size());
  for (const RequestFrame& f : frames) {
    RAMPART_ASSIGN_OR_RETURN(Request req, DecodeRequest(f, limits));
    out.push_back(std::move(req));
  }
  return out;
}

// ---- replies ------------------------------------------------------------------

Status Reply::ToStatus() const {
  if (ok()) return Status::Ok();
  return Status(header.status, std::string(error));
}


void ReplyWriter::Ok(MsgType type, uint16_t partition, uint64_t request_id) {
  End(BeginReply(static_cast<uint8_t>(type), StatusCode::kOk, partition, request_id));
}

void ReplyWriter::Error(uint8_t type, uint16_t partition, uint64_t request_id,
                        const Status& status) {
  StatusCode code = status.ok() ? StatusCode::kInternal : status.code();
  size_t at = BeginReply(type, code, partition, request_id);
  std::string_view msg = status.message();
  PutString(out_, msg.substr(0, kMaxErrorMessageBytes));
  End(at);
}

void ReplyWriter::Slots(uint16_t partition, uint64_t request_id,
                        std::span<const SlotAddress> slots) {
  size_t at = BeginReply(static_cast<uint8_t>(MsgType::kPrepare), StatusCode::kOk, partition,
                         request_id);
  Put32(out_, static_cast<uint32_t>(slots.size()));
  for (const SlotAddress& slot : slots) {
    Put64(out_, slot.offset);
    Put32(out_, slot.bytes);
    Put32(out_, slot.gen);
  }
  End(at);
}

void ReplyWriter::GetResults(MsgType type, uint16_t partition, uint64_t request_id,
                             std::span<const GetResultIn> results) {
  size_t at = BeginReply(static_cast<uint8_t>(type), StatusCode::kOk, partition, request_id);
  Put32(out_, static_cast<uint32_t>(results.size()));
  for (const GetResultIn& res : results) {
    Put8(out_, static_cast<uint8_t>(res.found ? (res.tombstone ? 3 : 1) : 0));
    if (!res.found) continue;
    Put64(out_, res.ts);
    Put64(out_, res.slot.offset);
    Put32(out_, res.slot.bytes);
    Put32(out_, res.slot.gen);
    PutString(out_, res.value);
    PutKeyList(out_, res.siblings);
  }
  End(at);
}

size_t ReplyWriter::GetResultsBytes(std::span<const GetResultIn> results) {
  size_t bytes = 16 + 4;  // frame header, count
  for (const GetResultIn& res : results) {
    bytes += 1;
    if (!res.found) continue;
    bytes += 8 + 8 + 4 + 4 + 4 + res.value.size() + (res.siblings.empty() ? 4 : res.siblings.size());
  }
  return bytes;
}

void ReplyWriter::Arena(uint16_t partition, uint64_t request_id, const ArenaInfo& arena) {
  size_t at = BeginReply(static_cast<uint8_t>(MsgType::kDescribe), StatusCode::kOk, partition,
                    request_id);
  Put64(out_, arena.extent_bytes);
  PutString(out_, arena.descriptor);
  End(at);
}

void ReplyWriter::Count(uint16_t partition, uint64_t request_id, uint64_t keys) {
  size_t at = BeginReply(static_cast<uint8_t>(MsgType::kCount), StatusCode::kOk, partition,
                         request_id);
  Put64(out_, keys);
  End(at);
}

void ReplyWriter::Scan(uint16_t partition, uint64_t request_id, std::optional<uint64_t> next,
                       std::span<const ScanItem> items) {
  size_t at = BeginReply(static_cast<uint8_t>(MsgType::kScan), StatusCode::kOk, partition, request_id);
  Put8(out_, next.has_value() ? 0 : 1);
  Put64(out_, next.value_or(0));
  Put32(out_, static_cast<uint32_t>(items.size()));
  for (const ScanItem& item : items) {
    PutString(out_, item.key);
    PutString(out_, item.head);
  }
  End(at);
}

void ReplyWriter::Stats(uint16_t partition, uint64_t request_id, const PartitionStatsInfo& stats) {
  size_t at = BeginReply(static_cast<uint8_t>(MsgType::kStats), StatusCode::kOk, partition,
                         request_id);
  Put64(out_, stats.keys);
  Put64(out_, stats.versions);
  Put64(out_, stats.used_bytes);
  Put64(out_, stats.reserved_bytes);
  Put64(out_, stats.max_ts);
  Put64(out_, stats.internal_keys);
  End(at);
}

namespace {

struct ReplyFrame {
  ReplyHeader header;
  std::span<const std::byte> body;
};

void ParseReplyHeader(const std::byte* p, ReplyHeader* h) {
  h->type = static_cast<uint8_t>(GetLe(p, 1));
  h->status = static_cast<StatusCode>(GetLe(p + 1, 1));
  h->partition = static_cast<uint16_t>(GetLe(p + 2, 2));
  h->body_len = static_cast<uint32_t>(GetLe(p + 4, 4));
  h->request_id = GetLe(p + 8, 8);
}

Status DecodeScanResult(BodyReader& r, ScanResult* out) {
  uint8_t done;
  RAMPART_RETURN_IF_ERROR(r.U8(&done, Field("done")));
  if (done > 1) return r.Error(StatusCode::kCorruption, StrCat("done flag ", done, "; expected 0 or 1"));
  out->done = done == 1;
  RAMPART_RETURN_IF_ERROR(r.U64(&out->next, Field("next position")));
  uint32_t n;
  RAMPART_RETURN_IF_ERROR(r.Count(&n, 8, Field("key count")));
  out->items.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    auto what = [&](const char* part) { return [=] { return StrCat(part, " of key ", i + 1, " of ", n); }; };
    RAMPART_RETURN_IF_ERROR(r.String(&out->items[i].key, r.limits().max_key_bytes, "max_key_bytes", what("key")));
    RAMPART_RETURN_IF_ERROR(
        r.String(&out->items[i].head, kMaxScanHeadBytes, "kMaxScanHeadBytes", what("value head")));
  }
  return Status::Ok();
}

Status DecodeGetResults(BodyReader& r, std::vector<GetResult>* out) {
  uint32_t n;
  RAMPART_RETURN_IF_ERROR(r.Count(&n, 1, Field("result count")));
  out->resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    GetResult& res = (*out)[i];
    auto what = [&](const char* part) {
      return [=] { return StrCat(part, " of result ", i + 1, " of ", n); };
    };
    uint8_t flags;
    RAMPART_RETURN_IF_ERROR(r.U8(&flags, what("flags")));
    if (flags > 3 || flags == 2) {
      return r.Error(StatusCode::kCorruption,
                     StrCat("flags of result ", i + 1, " of ", n, " are ", flags,
                            "; expected 0, 1 (found) or 3 (found tombstone)"));
    }
    res.found = (flags & 1) != 0;
    res.tombstone = (flags & 2) != 0;
    if (!res.found) continue;
    RAMPART_RETURN_IF_ERROR(r.U64(&res.ts, what("ts")));
    RAMPART_RETURN_IF_ERROR(r.U64(&res.slot.offset, what("slot offset")));
    RAMPART_RETURN_IF_ERROR(r.U32(&res.slot.bytes, what("slot bytes")));
    RAMPART_RETURN_IF_ERROR(r.U32(&res.slot.gen, what("slot gen")));
    RAMPART_RETURN_IF_ERROR(
        r.String(&res.value, r.limits().max_value_bytes, "max_value_bytes", what("value")));
    RAMPART_RETURN_IF_ERROR(r.Keys(&res.siblings, what("siblings")));
  }
  return Status::Ok();
}

// An OK PREPARE reply's slots (kFlagReturnSlots): 16 bytes each.
Status DecodeSlots(BodyReader& r, std::vector<SlotAddress>* out) {
  uint32_t n;
  RAMPART_RETURN_IF_ERROR(r.Count(&n, 16, Field("slot count")));
  out->resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    SlotAddress& slot = (*out)[i];
    auto what = [&](const char* part) {
      return [=] { return StrCat(part, " of slot ", i + 1, " of ", n); };
    };
    RAMPART_RETURN_IF_ERROR(r.U64(&slot.offset, what("offset")));
    RAMPART_RETURN_IF_ERROR(r.U32(&slot.bytes, what("bytes")));
    RAMPART_RETURN_IF_ERROR(r.U32(&slot.gen, what("gen")));
  }
  return Status::Ok();
}

Result<Reply> DecodeReply(const ReplyFrame& frame, const ProtocolLimits& limits) {
  const uint8_t type = frame.header.type;
  const std::string what = KnownType(type) ? std::string() : StrCat("type ", type, " reply");
  BodyReader r(frame.body, KnownType(type) ? KnownWhat(type, true) : what,
               frame.header.request_id, limits);
  Reply reply;
  reply.header = frame.header;
  const auto status = static_cast<uint8_t>(frame.header.status);
  if (status > static_cast<uint8_t>(StatusCode::kInternal)) {
    return r.Error(StatusCode::kCorruption, StrCat("unknown status code ", status));
  }
  if (!reply.ok()) {
    RAMPART_RETURN_IF_ERROR(
        r.String(&reply.error, kMaxErrorMessageBytes, "kMaxErrorMessageBytes", Field("error message")));
  } else if (!KnownType(type)) {
    return r.Error(StatusCode::kCorruption, "OK reply of unknown type");
  } else if (type == static_cast<uint8_t>(MsgType::kGet) ||
             type == static_cast<uint8_t>(MsgType::kGetByTs)) {
    RAMPART_RETURN_IF_ERROR(DecodeGetResults(r, &reply.results));
  } else if (type == static_cast<uint8_t>(MsgType::kPrepare) && !frame.body.empty()) {
    RAMPART_RETURN_IF_ERROR(DecodeSlots(r, &reply.slots));
  } else if (type == static_cast<uint8_t>(MsgType::kDescribe)) {
    RAMPART_RETURN_IF_ERROR(r.U64(&reply.arena.extent_bytes, Field("extent bytes")));
    RAMPART_RETURN_IF_ERROR(r.String(&reply.arena.descriptor, kMaxDescriptorBytes,
                                     "kMaxDescriptorBytes", Field("arena descriptor")));
  } else if (type == static_cast<uint8_t>(MsgType::kCount)) {
    RAMPART_RETURN_IF_ERROR(r.U64(&reply.count, Field("key count")));
  } else if (type == static_cast<uint8_t>(MsgType::kScan)) {
    RAMPART_RETURN_IF_ERROR(DecodeScanResult(r, &reply.scan));
  } else if (type == static_cast<uint8_t>(MsgType::kStats)) {
    PartitionStatsInfo& st = reply.stats;
    RAMPART_RETURN_IF_ERROR(r.U64(&st.keys, Field("key count")));
    RAMPART_RETURN_IF_ERROR(r.U64(&st.versions, Field("version count")));
    RAMPART_RETURN_IF_ERROR(r.U64(&st.used_bytes, Field("used bytes")));
    RAMPART_RETURN_IF_ERROR(r.U64(&st.reserved_bytes, Field("reserved bytes")));
    RAMPART_RETURN_IF_ERROR(r.U64(&st.max_ts, Field("max ts")));
    RAMPART_RETURN_IF_ERROR(r.U64(&st.internal_keys, Field("internal key count")));
  }
  RAMPART_RETURN_IF_ERROR(r.Finish());
  return reply;
}

}  // namespace

Result<std::vector<Reply>> DecodeReplies(std::span<const std::byte> message,
                                         const ProtocolLimits& limits) {
  RAMPART_ASSIGN_OR_RETURN(std::vector<ReplyFrame> frames,
                           SplitFrames<ReplyFrame>(message, limits, "reply", ParseReplyHeader));
  std::vector<Reply> out;
  out.reserve(frames.size());
  for (const ReplyFrame& f : frames) {
    RAMPART_ASSIGN_OR_RETURN(Reply reply, DecodeReply(f, limits));
    out.push_back(std::move(reply));
  }
  return out;
}

}  // namespace rampart::kv::wire
