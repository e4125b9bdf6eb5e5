#include "proxy/data_view.h"

#include <algorithm>

#include "proxy/internal_keys.h"
#include "proxy/notify.h"

namespace rampart::proxy {
namespace {

template <typename... What>
Status Damaged(std::string_view key, const What&... what) {
  return Corruption("ERR rampart: the string at \"", key.substr(0, 64), "\" is damaged: ", what...);
}

}  // namespace

std::map<std::string, DataView::Entry, std::less<>>::iterator DataView::Set(
    std::string_view key, std::optional<std::string> stored, bool dirty) {
  return entries_.insert_or_assign(std::string(key), Entry{std::move(stored), dirty, next_generation_++})
      .first;
}

void DataView::Seed(std::string_view key, std::optional<std::string> stored) {
  Set(key, std::move(stored), false);
}

Result<std::optional<StoredValue>> DataView::FindStored(std::string_view key) const {
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.stored.has_value()) return std::optional<StoredValue>();
  auto decoded = DecodeStored(*it->second.stored);
  if (!decoded.ok()) {
    return Corruption("ERR key \"", key, "\" holds a value not written through the proxy (",
                      decoded.status().message(), ")");
  }
  if (Expired(*decoded, now_ms_)) return std::optional<StoredValue>();
  return std::optional<StoredValue>(*decoded);
}

Result<std::optional<StoredValue>> DataView::Find(std::string_view key) const {
  RAMPART_ASSIGN_OR_RETURN(auto found, FindStored(key));
  if (!found.has_value() || found->type != ValueType::kChunkedString) return found;
  return Join(key, *found);
}

Result<std::optional<StoredValue>> DataView::FindTyped(std::string_view key, ValueType type) const {
  RAMPART_ASSIGN_OR_RETURN(auto found, FindStored(key));
  if (!found.has_value()) return found;
  if (RedisTypeOf(found->type) != RedisTypeOf(type)) return InvalidArgument(kWrongType);
  if (found->type != ValueType::kChunkedString) return found;
  return Join(key, *found);
}

void DataView::Put(std::string_view key, std::string stored) {
  if (notify_flags_ != 0) NoteWrite(key, true);
  if (chunk_bytes_ > 0 && stored.size() > max_value_bytes_ &&
      stored[0] == static_cast<char>(ValueType::kString) && !IsInternalKey(key)) {
    const StoredValue v = *DecodeStored(stored);  // longer than its header: decodes
    return PutChunked(key, v.expire_at_ms, v.payload);
  }
  const std::optional<ChunkedHeader> header = ChunkedHeaderOf(stored);
  DropChunks(key, header.has_value() ? header->id : 0);  // EXPIRE of a long string keeps them
  Set(key, std::move(stored), true);
}

void DataView::Delete(std::string_view key) {
  if (notify_flags_ != 0) NoteWrite(key, false);
  DropChunks(key, 0);
  Set(key, std::nullopt, true);
}

void DataView::Notify(uint32_t cls, std::string_view event, std::string_view key) {
  if ((notify_flags_ & cls) == 0 || (notify_flags_ & (notify::kKeyspace | notify::kKeyevent)) == 0) return;
  events_.push_back({event, std::string(key)});
}

bool DataView::HoldsExpired(std::string_view key) const {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.dirty || !it->second.stored.has_value()) return false;
  auto v = DecodeStored(*it->second.stored);
  return v.ok() && Expired(*v, now_ms_);
}

void DataView::NoteWrite(std::string_view key, bool creates) {
  if ((notify_flags_ & (notify::kNew | notify::kExpired)) == 0 || IsInternalKey(key)) return;
  if (!entries_.contains(key)) return;  // a blind write: whether the key existed is not known
  // Removed (overwritten or deleted) as expired, as Redis's lookup of the
  // key for a write removes it first; not a value this view wrote.
  if (HoldsExpired(key)) Notify(notify::kExpired, "expired", key);
  if (!creates) return;
  auto held = FindStored(key);  // a damaged value counts as live
  if (held.ok() && !held->has_value()) Notify(notify::kNew, "new", key);
}

void DataView::set_max_value_bytes(uint64_t n) {
  max_value_bytes_ = n;
  chunk_bytes_ = ChunkBytesFor(n);
}

// ---- Chunked strings -------------------------------------------------------

Result<std::optional<ChunkedHeader>> DataView::FindChunked(std::string_view key) const {
  RAMPART_ASSIGN_OR_RETURN(auto stored, FindStored(key));
  if (!stored.has_value() || stored->type != ValueType::kChunkedString) {
    return std::optional<ChunkedHeader>();
  }
  auto h = DecodeChunkedHeader(*stored);
  if (!h.ok()) return Damaged(key, h.status().message());
  return std::optional<ChunkedHeader>(*h);
}

Result<std::vector<std::string_view>> DataView::ChunkViews(std::string_view key, const ChunkedHeader& h,
                                                          uint64_t first, uint64_t last) const {
  const uint64_t count = ChunkCount(h);
  if (h.length > static_cast<uint64_t>(kMaxStringBytes) || count > kMaxChunks) {
    return Damaged(key, "a length of ", h.length, " bytes in ", count, " chunks");
  }
  std::vector<std::string_view> chunks;
  for (uint64_t i = first; i <= last; ++i) {
    const std::string chunk_key = ChunkKey(h, i, key);
    auto it = entries_.find(chunk_key);
    if (it == entries_.end()) {
      NoteMissing(chunk_key, ChunkLength(h, i));
      continue;
    }
    if (!it->second.stored.has_value()) return Damaged(key, "chunk ", i, " of ", count, " is missing");
    if (it->second.stored->size() != ChunkLength(h, i)) {
      return Damaged(key, "chunk ", i, " of ", count, " has ", it->second.stored->size(), " bytes, not ",
                     ChunkLength(h, i));
    }
    chunks.push_back(*it->second.stored);
  }
  if (chunks.size() < last - first + 1) return Unavailable("ERR rampart: a key not read yet");
  return chunks;
}

Result<std::string> DataView::ChunkRange(std::string_view key, const ChunkedHeader& h, uint64_t from,
                                         uint64_t n) const {
  if (n == 0) {
    RAMPART_RETURN_IF_ERROR(ChunkViews(key, h, 1, 0).status());  // no chunk: the header's checks
    return std::string();
  }
  const uint64_t first = from / h.chunk_bytes;
  RAMPART_ASSIGN_OR_RETURN(auto chunks, ChunkViews(key, h, first, (from + n - 1) / h.chunk_bytes));
  std::string bytes;
  bytes.reserve(n);
  uint64_t at = from - first * h.chunk_bytes;  // within the first chunk
  for (std::string_view chunk : chunks) {
    const std::string_view part = chunk.substr(at, n - bytes.size());
    bytes.append(part);
    at = 0;
  }
  return bytes;
}

Result<std::optional<StoredValue>> DataView::Join(std::string_view key, const StoredValue& header) const {
  auto h = DecodeChunkedHeader(header);
  if (!h.ok()) return Damaged(key, h.status().message());
  const uint64_t generation = this->generation(key);
  auto joined = joined_.find(key);
  if (joined == joined_.end() || joined->second.generation != generation) {
    RAMPART_ASSIGN_OR_RETURN(std::string bytes, ChunkRange(key, *h, 0, h->length));
    // Replaces the key's earlier joined bytes: like a plain value's, a joined
    // payload lives until the key changes (and is found again).
    joined = joined_.insert_or_assign(std::string(key), Joined{generation, std::move(bytes)}).first;
  }
  return std::optional<StoredValue>(StoredValue{ValueType::kString, h->expire_at_ms, joined->second.bytes});
}

Status DataView::WriteChunks(std::string_view key, const ChunkedHeader& h, uint64_t offset,
                             std::string_view bytes) {
  ChunkedHeader grown = h;
  grown.length = std::max(h.length, offset + bytes.size());
  const uint64_t first = std::min(offset, h.length) / h.chunk_bytes;  // chunks that change
  const uint64_t last = (offset + bytes.size() - 1) / h.chunk_bytes;
  const uint64_t old_count = ChunkCount(h);
  std::vector<std::string_view> old;  // the string's chunks among them
  if (first < old_count) {
    RAMPART_ASSIGN_OR_RETURN(old, ChunkViews(key, h, first, std::min(last, old_count - 1)));
  }
  for (uint64_t i = first; i <= last; ++i) {
    const std::string_view before = i - first < old.size() ? old[i - first] : std::string_view();
    std::string chunk(before);
    chunk.resize(ChunkLength(grown, i), '\0');  // zero bytes past the old end
    const uint64_t start = i * h.chunk_bytes;
    const uint64_t lo = std::max(start, offset), hi = std::min(start + chunk.size(), offset + bytes.size());
    if (hi > lo) chunk.replace(lo - start, hi - lo, bytes.substr(lo - offset, hi - lo));
    if (chunk != before) Set(ChunkKey(grown, i, key), std::move(chunk), true);  // only what changed
  }
  Set(key, EncodeChunkedHeader(grown), true);
  return Status::Ok();
}

std::optional<ChunkedHeader> DataView::ChunkedAt(std::string_view key) const {
  if (IsInternalKey(key)) return std::nullopt;  // a page or a chunk, whatever its first byte
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.stored.has_value()) return std::nullopt;
  return ChunkedHeaderOf(*it->second.stored);
}

void DataView::PutChunked(std::string_view key, uint64_t expire_at_ms, std::string_view payload) {
  const std::optional<ChunkedHeader> old = ChunkedAt(key);
  ChunkedHeader h{expire_at_ms, 0, payload.size(), chunk_bytes_};
  // Only a live string's id is kept: an expired one's chunks may be going
  // already (any proxy's sweeper deletes the pages of an expired header).
  const bool live = old.has_value() && (old->expire_at_ms == 0 || old->expire_at_ms > now_ms_);
  const bool same = live && old->chunk_bytes == h.chunk_bytes;
  h.id = same ? old->id : (Random() | 1);
  const uint64_t count = ChunkCount(h);
  for (uint64_t i = 0; i < count; ++i) {
    const std::string_view bytes = payload.substr(i * h.chunk_bytes, ChunkLength(h, i));
    std::string chunk_key = ChunkKey(h, i, key);
    auto it = entries_.find(chunk_key);
    if (same && it != entries_.end() && it->second.stored.has_value() && *it->second.stored == bytes) {
      continue;  // the view holds these bytes there already
    }
    Set(chunk_key, std::string(bytes), true);
  }
  if (old.has_value()) DeleteChunks(key, *old, same ? count : 0);  // past the new end, or all
  Set(key, EncodeChunkedHeader(h), true);
}

void DataView::DropChunks(std::string_view key, uint64_t keep) {
  const std::optional<ChunkedHeader> old = ChunkedAt(key);
  if (old.has_value() && old->id != keep) DeleteChunks(key, *old, 0);
}

void DataView::DeleteChunks(std::string_view key, const ChunkedHeader& h, uint64_t first) {
  for (uint64_t i = first; i < ChunkCount(h); ++i) Set(ChunkKey(h, i, key), std::nullopt, true);
}

bool DataView::IsChunk(std::string_view key) const {
  if (!IsInternalKey(key)) return false;
  const PageKeyParts parts = ParsePageKey(key);
  const std::optional<ChunkedHeader> h = ChunkedAt(parts.user_key);
  return h.has_value() && h->id == parts.collection;
}

void DataView::NoteMissing(std::string_view key, uint64_t expected_bytes) const {
  if (std::find(missing_.begin(), missing_.end(), key) == missing_.end()) missing_.emplace_back(key);
  if (expected_bytes > 0) expected_bytes_.insert_or_assign(std::string(key), expected_bytes);
}

uint64_t DataView::ExpectedBytes(std::string_view key) const {
  auto it = expected_bytes_.find(key);
  return it == expected_bytes_.end() ? 0 : it->second;
}

uint64_t DataView::generation(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.generation;
}

void DataView::KeepDecoded(std::string_view name, uint64_t generation,
                           std::unique_ptr<TreeNode> node) {
  if (generation == 0 || node == nullptr) return;
  Decoded& d = decoded_[std::string(name)];
  d.generation = generation;
  d.node = std::move(node);
}

std::unique_ptr<TreeNode> DataView::TakeDecoded(std::string_view name, uint64_t generation) {
  auto it = decoded_.find(name);
  if (it == decoded_.end()) return nullptr;
  std::unique_ptr<TreeNode> node =
      it->second.generation == generation ? std::move(it->second.node) : nullptr;
  decoded_.erase(it);
  return node;
}

Result<std::optional<std::string_view>> DataView::Raw(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end() && guess_) {
    if (const std::string* guess = guess_(key); guess != nullptr) {
      guessed_.emplace_back(key);
      it = Set(key, *guess, false);
    }
  }
  if (it == entries_.end()) {
    NoteMissing(key);
    return Unavailable("ERR rampart: a key not read yet");
  }
  if (!it->second.stored.has_value()) return std::optional<std::string_view>();
  return std::optional<std::string_view>(*it->second.stored);
}

uint64_t DataView::Random() {
  // splitmix64: small state, good enough spread for random members.
  uint64_t z = (random_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace rampart::proxy
