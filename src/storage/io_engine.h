// The device a storage-node serves and the IO engines that access it.
//
//   auto device = Device::Open({.path = "/data/vol0", .size = 1 << 30, .direct = true});
//   auto engine = IoEngine::Create(EngineKind::kThreads, **device, {.threads = 4},
//                                  [&] { fabric.Notify(); });
//   engine->Submit({.op = IoOp::kRead, .offset = 0, .length = 4096, .buffer = p, .tag = 7});
//   ... when woken (or engine->wait_fd() is readable):  engine->Reap(completions);
//
// Device: a file (opened with O_DIRECT when `direct` and the filesystem
// allows it, buffered otherwise; created and sized when missing or shorter)
// or RAM (path "ram").
//
// Engines (seed 001):
//   threads  a static pool of IO threads doing pread/pwrite, fed through a
//            queue; completions are queued back and `wake` is called, so the
//            polling thread never blocks on IO. On a memory-backed device a
//            worker is woken per burst, not per request, and `wake` is called
//            once per batch of completions (the hand-offs cost more than the
//            IO there).
//   uring    io_uring (liburing): Submit queues, Reap submits the burst and
//            reaps, both on the polling thread; no thread of its own and no
//            `wake`: the ring's fd (wait_fd()) is readable when completions
//            wait, so the polling thread blocks on it with its other fds
//            (Fabric::AddSource). On a RAM device the copy is done at Submit.
//   inline   the IO done at Submit, on the polling thread, completed at the
//            next Reap: no hand-off at all. For memory-backed devices (RAM,
//            tmpfs), where a copy costs less than waking a thread; on a disk
//            it would stall every connection of the node for each IO.
//   auto     inline on a memory-backed device, threads on anything else
//            (the engine's kind() says which).
//   none     completes at once without touching the device (transport-only
//            baseline): buffers are left as they are.
//
// Thread-safety: Submit and Reap from one thread (the polling thread); `wake`
// is called from engine threads and must be thread-safe (Fabric::Notify is).
// An engine with a wait_fd() never calls `wake`: the polling thread must wait
// on that fd (poll/epoll for readability) whenever IOs are in flight.
// REQUIRES: a buffer stays valid until its completion has been reaped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rampart::storage {

struct DeviceOptions {
  // A file path, or "ram".
  std::string path = "ram";
  // Bytes served. Default: 64MiB.
  uint64_t size = 64u << 20;
  // Try O_DIRECT. Default: true.
  bool direct = true;
};

class Device {
 public:
  static Result<std::unique_ptr<Device>> Open(const DeviceOptions& options);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  uint64_t size() const { return size_; }
  bool is_ram() const { return ram_ != nullptr; }
  // True when the file was opened with O_DIRECT.
  bool direct() const { return direct_; }
  // True for RAM and for a file on tmpfs or ramfs: an IO is a memory copy.
  bool memory_backed() const { return memory_backed_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  std::byte* ram() const { return ram_; }
  // "file /x (O_DIRECT)", "file /x (buffered: O_DIRECT refused: ...)", "ram".
  const std::string& description() const { return description_; }

  // Synchronous access, for the engines (and tests). Full transfers or an
  // error (a short read past the file's end reads zeros).
  Status ReadAt(uint64_t offset, std::byte* buffer, size_t length) const;
  Status WriteAt(uint64_t offset, const std::byte* buffer, size_t length) const;
  Status Sync() const;

 private:
  Device() = default;
  std::string path_;
  std::string description_;
  uint64_t size_ = 0;
  int fd_ = -1;
  bool direct_ = false;
  bool memory_backed_ = false;
  std::byte* ram_ = nullptr;
};

enum class EngineKind { kThreads, kUring, kInline, kAuto, kNone };
// "threads" | "uring" | "inline" | "auto" | "none"
Result<EngineKind> ParseEngineKind(std::string_view name);
std::string_view EngineKindName(EngineKind kind);

enum class IoOp : uint8_t { kRead, kWrite, kFlush };

struct IoRequest {
  IoOp op = IoOp::kRead;
  uint64_t offset = 0;
  uint32_t length = 0;
  std::byte* buffer = nullptr;
  uint64_t tag = 0;  // the caller's, handed back in the completion
};

struct IoCompletion {
  uint64_t tag = 0;
  Status status;
};

struct EngineOptions {
  // IO threads of the threads engine, 1..64. Default: 4.
  uint32_t threads = 4;
  // Submission queue entries of the uring engine. Default: 256.
  uint32_t queue_depth = 256;
};

class IoEngine {
 public:
  static Result<std::unique_ptr<IoEngine>> Create(EngineKind kind, Device& device,
                                                  const EngineOptions& options,
                                                  std::function<void()> wake);
  virtual ~IoEngine() = default;  // waits for IO in flight

  virtual EngineKind kind() const = 0;
  // Starts one IO; never blocks on the device. The range is checked by the
  // caller (the node). An error return means no completion will come. An
  // engine may queue the IO until the next Reap (uring hands a burst to the
  // kernel in one call there): callers Reap after a burst, before they wait.
  virtual Status Submit(const IoRequest& request) = 0;
  // Appends the completions that are ready; never blocks. Returns how many.
  virtual size_t Reap(std::vector<IoCompletion>& out) = 0;
  // IOs submitted and not yet reaped.
  virtual size_t in_flight() const = 0;
  // An fd that is readable while completions of IOs handed to the kernel
  // wait to be reaped, for engines that do not call `wake` (uring); -1 for
  // the others. Owned by the engine. Block on it only after a Reap that found
  // nothing: a burst reaches the kernel at Reap, and IOs done at Submit (a
  // RAM device) are found by Reap, not announced on the fd.
  virtual int wait_fd() const { return -1; }
};

}  // namespace rampart::storage
