// BufferPool: IO buffers carved out of one registered region (seed 004:
// register once, address by offset).
//
//   auto pool = BufferPool::Create(fabric, 64 << 20);       // one Allocate()
//   Result<Buffer> buf = pool->Get(16384);                    // 4 KiB-aligned
//   client.Read(offset, 16384, buf->ref(), callback);         // by offset
//   // buf returns to the pool when it is destroyed (or Release()d)
//
// The region is registered once, when the pool is created; a transfer names a
// buffer by its offset into the region (BufferRef::offset), so no IO ever
// registers memory. Buffers are aligned to `alignment` (default 4096, what
// O_DIRECT needs) and their sizes rounded up to it.
//
// Ownership. Get() hands out a Buffer, a move-only handle that owns its range
// until it is destroyed. A BufferRef is a non-owning view of a Buffer given to
// an IO: the caller must keep the Buffer alive, and must neither read nor
// write its bytes, until the IO's callback has run.
//
// Thread-safety: none. A pool belongs to the thread that owns its Fabric (and
// the VolumeClient using it). The pool must outlive every Buffer it handed out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>

#include "common/status.h"
#include "transport/transport.h"

namespace rampart::storage {

class BufferPool;

// A non-owning view of a pooled buffer: where it lies in the pool's region
// and in this process.
struct BufferRef {
  uint64_t offset = 0;      // into the pool's MemoryRegion
  size_t length = 0;        // usable bytes (a multiple of the pool's alignment)
  std::byte* data = nullptr;

  std::span<std::byte> bytes() const { return {data, length}; }
};

// Owns one range of a BufferPool; returns it to the pool when destroyed.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { Release(); }

  bool valid() const { return pool_ != nullptr; }
  const BufferRef& ref() const { return ref_; }
  std::byte* data() const { return ref_.data; }
  size_t size() const { return ref_.length; }
  std::span<std::byte> bytes() const { return ref_.bytes(); }

  // Returns the range to the pool now. No-op on an invalid Buffer.
  void Release();

 private:
  friend class BufferPool;
  Buffer(BufferPool* pool, BufferRef ref) : pool_(pool), ref_(ref) {}
  BufferPool* pool_ = nullptr;
  BufferRef ref_;
};

class BufferPool {
 public:
  // Allocates and registers `bytes` (rounded up to `alignment`) through
  // `fabric` (Fabric::Allocate: page-aligned, zero-filled, reachable by peers
  // one-sidedly). REQUIRES: alignment is a power of two, at most 4096.
  static Result<std::unique_ptr<BufferPool>> Create(transport::Fabric& fabric, size_t bytes,
                                                    size_t alignment = 4096);
  // A pool over memory the caller owns and registered (or, in tests, plain
  // memory: region() is then invalid). `base` must be aligned to `alignment`.
  BufferPool(std::byte* base, size_t bytes, size_t alignment = 4096);

  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();

  // A buffer of at least `length` bytes (rounded up to the alignment).
  // ResourceExhausted when no free range is large enough; InvalidArgument for 0.
  Result<Buffer> Get(size_t length);

  // The registered region (what peers import). Invalid for a pool made over
  // caller memory.
  const transport::MemoryRegion& region() const { return region_; }
  std::byte* base() const { return base_; }
  size_t capacity() const { return capacity_; }
  size_t alignment() const { return alignment_; }
  size_t free_bytes() const { return free_bytes_; }
  size_t buffers_out() const { return buffers_out_; }

 private:
  friend class Buffer;
  void Put(const BufferRef& ref);

  transport::MemoryRegion region_;
  std::byte* base_ = nullptr;
  size_t capacity_ = 0;
  size_t alignment_ = 4096;
  size_t free_bytes_ = 0;
  size_t buffers_out_ = 0;
  // Free ranges, offset -> length, never adjacent (coalesced on Put).
  std::map<uint64_t, size_t> free_;
};

}  // namespace rampart::storage
