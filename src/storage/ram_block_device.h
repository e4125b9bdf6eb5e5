// RamBlockDevice: a BlockDevice in anonymous memory, for tests and for
// serving a scratch export over NBD without storage nodes (`--ram`).
//
//   auto dev = RamBlockDevice::Create(64 * kMiB);
//   if (!dev.ok()) return dev.status();
//   NbdServer::Start(options, **dev);
//
// The memory is mapped lazily (pages cost nothing until written) and reads
// as zeros until written; Trim zeroes its range and gives whole pages back to
// the kernel. Flush has nothing to make durable and only counts calls.
//
// Thread-safety: as BlockDevice, none: one thread at a time. The counters
// (flush_count) and SetFailing may be used from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "storage/block_device.h"

namespace rampart::storage {

class RamBlockDevice final : public BlockDevice {
 public:
  // REQUIRES: preferred_block_size a power of two in [512, 1MiB].
  // InvalidArgument for a zero size or a bad block size, ResourceExhausted
  // when the memory cannot be mapped.
  static Result<std::unique_ptr<RamBlockDevice>> Create(uint64_t size,
                                                        uint32_t preferred_block_size = 4096);

  RamBlockDevice(const RamBlockDevice&) = delete;
  RamBlockDevice& operator=(const RamBlockDevice&) = delete;
  ~RamBlockDevice() override;

  uint64_t size() const override { return size_; }
  uint32_t preferred_block_size() const override { return preferred_block_size_; }
  Status Read(uint64_t offset, std::span<std::byte> out) override;
  Status Write(uint64_t offset, std::span<const std::byte> data) override;
  Status Flush() override;
  Status Trim(uint64_t offset, uint64_t length) override;

  // Calls of Flush() so far (tests check FUA and FLUSH reach the device).
  uint64_t flush_count() const { return flush_count_.load(std::memory_order_relaxed); }
  // While failing, every call returns IoError without touching the memory
  // (tests check that device errors reach the client as errors).
  void SetFailing(bool failing) { failing_.store(failing, std::memory_order_relaxed); }

 private:
  RamBlockDevice(std::byte* memory, uint64_t size, uint32_t preferred_block_size)
      : memory_(memory), size_(size), preferred_block_size_(preferred_block_size) {}
  // OK, or IoError when failing or the range is outside the device.
  Status Check(std::string_view op, uint64_t offset, uint64_t length) const;

  std::byte* const memory_;  // owned: an anonymous mapping of size_ bytes
  const uint64_t size_;
  const uint32_t preferred_block_size_;
  std::atomic<uint64_t> flush_count_{0};
  std::atomic<bool> failing_{false};
};

}  // namespace rampart::storage
