#include "proxy/chunked_string.h"

#include <algorithm>

#include "common/little_endian.h"
#include "proxy/internal_keys.h"

namespace rampart::proxy {
namespace {

constexpr size_t kPayloadBytes = 8 + 8 + 4;  // id, length, chunk_bytes

}  // namespace

Result<ChunkedHeader> DecodeChunkedHeader(const StoredValue& v) {
  if (v.type != ValueType::kChunkedString) return Corruption("not a chunked string");
  if (v.payload.size() != kPayloadBytes) {
    return Corruption("chunked string header of ", v.payload.size(), " bytes, not ", kPayloadBytes);
  }
  ChunkedHeader h{v.expire_at_ms, LoadLittleEndian(v.payload, 8), LoadLittleEndian(v.payload.substr(8), 8),
                  static_cast<uint32_t>(LoadLittleEndian(v.payload.substr(16), 4))};
  if (h.id == 0 || h.chunk_bytes == 0) return Corruption("chunked string header with id or chunk size 0");
  return h;
}

std::string EncodeChunkedHeader(const ChunkedHeader& h) {
  std::string out;
  out.reserve(kStoredHeaderBytes + kPayloadBytes);
  out.push_back(static_cast<char>(ValueType::kChunkedString));
  PutLittleEndian(out, h.expire_at_ms, 8);
  PutLittleEndian(out, h.id, 8);
  PutLittleEndian(out, h.length, 8);
  PutLittleEndian(out, h.chunk_bytes, 4);
  return out;
}

std::optional<ChunkedHeader> ChunkedHeaderOf(std::string_view stored) {
  if (stored.empty() || stored[0] != static_cast<char>(ValueType::kChunkedString)) return std::nullopt;
  auto v = DecodeStored(stored);
  if (!v.ok()) return std::nullopt;
  auto h = DecodeChunkedHeader(*v);
  if (!h.ok()) return std::nullopt;
  return *h;
}

uint64_t ChunkCount(const ChunkedHeader& h) { return (h.length + h.chunk_bytes - 1) / h.chunk_bytes; }

std::string ChunkKey(const ChunkedHeader& h, uint64_t index, std::string_view user_key) {
  return PageKey(h.id, index + 1, user_key);
}

uint64_t ChunkLength(const ChunkedHeader& h, uint64_t index) {
  return std::min<uint64_t>(h.chunk_bytes, h.length - index * h.chunk_bytes);
}

uint32_t ChunkBytesFor(uint64_t max_value_bytes) {
  constexpr uint64_t kStep = 4096;
  const uint64_t capped = std::min<uint64_t>(max_value_bytes, UINT32_MAX);
  return static_cast<uint32_t>(capped < kStep ? capped : capped / kStep * kStep);
}

}  // namespace rampart::proxy
