#include "storage/buffer_pool.h"

#include <cassert>
#include <iterator>
#include <utility>

namespace rampart::storage {

namespace {
size_t RoundUp(size_t n, size_t alignment) { return (n + alignment - 1) & ~(alignment - 1); }
}  // namespace

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    ref_ = std::exchange(other.ref_, BufferRef{});
  }
  return *this;
}

void Buffer::Release() {
  if (pool_ == nullptr) return;
  std::exchange(pool_, nullptr)->Put(ref_);
  ref_ = BufferRef{};
}

Result<std::unique_ptr<BufferPool>> BufferPool::Create(transport::Fabric& fabric, size_t bytes,
                                                       size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096) {
    return InvalidArgument("buffer pool alignment must be a power of two up to 4096, got ",
                           alignment);
  }
  if (bytes == 0) return InvalidArgument("buffer pool size must be positive");
  bytes = RoundUp(bytes, alignment);
  auto region = fabric.Allocate(bytes);
  if (!region.ok()) return region.status().WithContext("allocating the IO buffer pool");
  auto pool = std::make_unique<BufferPool>(region->data(), bytes, alignment);
  pool->region_ = std::move(*region);
  return pool;
}

BufferPool::BufferPool(std::byte* base, size_t bytes, size_t alignment)
    : base_(base), capacity_(bytes & ~(alignment - 1)), alignment_(alignment) {
  assert((alignment & (alignment - 1)) == 0);
  assert(reinterpret_cast<uintptr_t>(base) % alignment == 0);
  free_bytes_ = capacity_;
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

BufferPool::~BufferPool() { assert(buffers_out_ == 0 && "a Buffer outlived its BufferPool"); }

Result<Buffer> BufferPool::Get(size_t length) {
  if (length == 0) return InvalidArgument("a pooled buffer needs at least one byte");
  const size_t want = RoundUp(length, alignment_);
  // First fit: the pool serves few, mostly equal sizes, so the first range is
  // nearly always large enough.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < want) continue;
    const uint64_t offset = it->first;
    const size_t rest = it->second - want;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + want, rest);
    free_bytes_ -= want;
    ++buffers_out_;
    return Buffer(this, BufferRef{offset, want, base_ + offset});
  }
  return ResourceExhausted("IO buffer pool: no free range of ", want, " bytes (", free_bytes_,
                           " of ", capacity_, " bytes free in ", free_.size(), " ranges)");
}

void BufferPool::Put(const BufferRef& ref) {
  uint64_t offset = ref.offset;
  size_t length = ref.length;
  // Coalesce with the free ranges right after and right before.
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + length == next->first) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += length;
      length = 0;
    }
  }
  if (length > 0) free_.emplace_hint(next, offset, length);
  free_bytes_ += ref.length;
  --buffers_out_;
}

}  // namespace rampart::storage
