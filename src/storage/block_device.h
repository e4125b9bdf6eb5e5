// BlockDevice: a byte-addressed device as the NBD export sees it. A volume
// (XOR-parity stripes over storage nodes) implements it; tests use a RAM one.
//
// Calls are synchronous: each returns when the operation completed (reads
// filled `out`; writes reached the device, durable only after Flush).
//
// Thread-safety: none required. The NBD server calls one device from one
// thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/status.h"

namespace rampart::storage {

class BlockDevice {
 public:
  virtual ~BlockDevice() = default;

  // Bytes of the device.
  virtual uint64_t size() const = 0;
  // The IO size the device handles best (a power of two, 512 ... 1 MiB);
  // requests of any size and alignment inside the device still work.
  virtual uint32_t preferred_block_size() const = 0;

  // REQUIRES: offset + out.size() <= size().
  virtual Status Read(uint64_t offset, std::span<std::byte> out) = 0;
  // REQUIRES: offset + data.size() <= size().
  virtual Status Write(uint64_t offset, std::span<const std::byte> data) = 0;
  // Makes every completed Write durable.
  virtual Status Flush() = 0;
  // The range's contents become unspecified (a device may zero them or keep
  // them). REQUIRES: offset + length <= size().
  virtual Status Trim(uint64_t offset, uint64_t length) = 0;
};

}  // namespace rampart::storage
