// BlockDevice: a byte-addressed device as the NBD export sees it. A volume
// (XOR-parity stripes over storage nodes) implements it; tests use a RAM one.
//
// Calls are synchronous: each returns when the operation completed (reads
// filled `out`; writes reached the device, durable only after Flush). Only
// ReadMany overlaps operations, inside one call.
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

  struct ReadRange {
    uint64_t offset = 0;
    std::span<std::byte> out;
  };
  // Several reads in one call, for a device that can overlap them (a volume
  // issues the cells of all of them at once). OK when every read succeeded;
  // an error does not say which failed and leaves every `out` unspecified
  // (read them one by one to find out). The default reads one after another.
  // REQUIRES: each range inside the device.
  virtual Status ReadMany(std::span<const ReadRange> reads) {
    for (const ReadRange& r : reads) RAMPART_RETURN_IF_ERROR(Read(r.offset, r.out));
    return Status::Ok();
  }
  // REQUIRES: offset + data.size() <= size().
  virtual Status Write(uint64_t offset, std::span<const std::byte> data) = 0;
  // Makes every completed Write durable.
  virtual Status Flush() = 0;
  // The range's contents become unspecified (a device may zero them or keep
  // them). REQUIRES: offset + length <= size().
  virtual Status Trim(uint64_t offset, uint64_t length) = 0;
};

}  // namespace rampart::storage
