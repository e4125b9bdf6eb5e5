// RamBlockDevice: anonymous memory behind the BlockDevice interface.
#include "storage/ram_block_device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "common/size.h"

namespace rampart::storage {

Result<std::unique_ptr<RamBlockDevice>> RamBlockDevice::Create(uint64_t size,
                                                               uint32_t preferred_block_size) {
  if (size == 0) return InvalidArgument("RAM device: size must not be 0");
  if (!std::has_single_bit(preferred_block_size) || preferred_block_size < 512 ||
      preferred_block_size > kMiB) {
    return InvalidArgument("RAM device: preferred block size ", preferred_block_size,
                           " must be a power of two in [512, 1MiB]");
  }
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    const int e = errno;
    return ResourceExhausted("RAM device: cannot map ", FormatSize(size), ": ", ErrnoText(e));
  }
  return std::unique_ptr<RamBlockDevice>(
      new RamBlockDevice(static_cast<std::byte*>(memory), size, preferred_block_size));
}

RamBlockDevice::~RamBlockDevice() { munmap(memory_, size_); }

Status RamBlockDevice::Check(std::string_view op, uint64_t offset, uint64_t length) const {
  if (failing_.load(std::memory_order_relaxed)) {
    return IoError("RAM device: ", op, " failed (error injection)");
  }
  if (offset > size_ || length > size_ - offset) {
    return IoError("RAM device: ", op, " of [", offset, ", +", length, ") is outside the ",
                   size_, " bytes of the device");
  }
  return Status::Ok();
}

Status RamBlockDevice::Read(uint64_t offset, std::span<std::byte> out) {
  RAMPART_RETURN_IF_ERROR(Check("read", offset, out.size()));
  std::memcpy(out.data(), memory_ + offset, out.size());
  return Status::Ok();
}

Status RamBlockDevice::Write(uint64_t offset, std::span<const std::byte> data) {
  RAMPART_RETURN_IF_ERROR(Check("write", offset, data.size()));
  std::memcpy(memory_ + offset, data.data(), data.size());
  return Status::Ok();
}

Status RamBlockDevice::Flush() {
  RAMPART_RETURN_IF_ERROR(Check("flush", 0, 0));
  flush_count_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status RamBlockDevice::Trim(uint64_t offset, uint64_t length) {
  RAMPART_RETURN_IF_ERROR(Check("trim", offset, length));
  // Whole pages go back to the kernel (and read as zeros again); the ragged
  // ends are zeroed by hand, so a trimmed range always reads as zeros.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t end = offset + length;
  const uint64_t first_page = (offset + page - 1) / page * page;
  const uint64_t last_page = end / page * page;
  if (first_page < last_page &&
      madvise(memory_ + first_page, last_page - first_page, MADV_DONTNEED) == 0) {
    std::memset(memory_ + offset, 0, first_page - offset);
    std::memset(memory_ + last_page, 0, end - last_page);
  } else {
    std::memset(memory_ + offset, 0, length);
  }
  return Status::Ok();
}

}  // namespace rampart::storage
