// Device and the three IO engines (io_engine.h).
#include "storage/io_engine.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <liburing.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace rampart::storage {

// ---------------------------------------------------------------------------
// Device

Result<std::unique_ptr<Device>> Device::Open(const DeviceOptions& options) {
  std::unique_ptr<Device> d(new Device());
  d->path_ = options.path;
  d->size_ = options.size;
  if (options.size == 0) return InvalidArgument("device size must not be 0");
  if (options.path == "ram") {
    void* p = mmap(nullptr, options.size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return ErrnoStatus(StrCat("mapping ", options.size, " bytes of RAM"), errno);
    d->ram_ = static_cast<std::byte*>(p);
    d->description_ = "ram";
    d->memory_backed_ = true;
    return d;
  }
  std::string why_buffered;
  if (options.direct) {
    d->fd_ = open(options.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_DIRECT, 0644);
    if (d->fd_ >= 0) {
      d->direct_ = true;
    } else if (errno == EINVAL) {
      why_buffered = StrCat("buffered: O_DIRECT refused by the filesystem (", ErrnoText(errno), ")");
    } else {
      return ErrnoStatus(StrCat("opening ", options.path), errno);
    }
  } else {
    why_buffered = "buffered: storage.direct = false";
  }
  if (d->fd_ < 0) {
    d->fd_ = open(options.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (d->fd_ < 0) return ErrnoStatus(StrCat("opening ", options.path), errno);
  }
  struct stat st {};
  if (fstat(d->fd_, &st) != 0) return ErrnoStatus(StrCat("stat ", options.path), errno);
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) < options.size) {
    if (ftruncate(d->fd_, static_cast<off_t>(options.size)) != 0) {
      return ErrnoStatus(StrCat("sizing ", options.path, " to ", options.size, " bytes"), errno);
    }
  }
  d->description_ = StrCat("file ", options.path, d->direct_ ? " (O_DIRECT)" : StrCat(" (", why_buffered, ")"));
  // A regular file only: a block device node lives on devtmpfs, which reports
  // TMPFS_MAGIC for the node, not for the disk behind it.
  struct statfs fs {};
  d->memory_backed_ = S_ISREG(st.st_mode) && fstatfs(d->fd_, &fs) == 0 &&
                      (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
  return d;
}

Device::~Device() {
  if (ram_ != nullptr) munmap(ram_, size_);
  if (fd_ >= 0) close(fd_);
}

Status Device::ReadAt(uint64_t offset, std::byte* buffer, size_t length) const {
  if (ram_ != nullptr) {
    std::memcpy(buffer, ram_ + offset, length);
    return Status::Ok();
  }
  size_t done = 0;
  while (done < length) {
    const ssize_t n = pread(fd_, buffer + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(StrCat("read of ", length, " bytes at ", offset, " from ", path_), errno);
    }
    if (n == 0) {  // past the end of a file that shrank: zeros
      std::memset(buffer + done, 0, length - done);
      break;
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status Device::WriteAt(uint64_t offset, const std::byte* buffer, size_t length) const {
  if (ram_ != nullptr) {
    std::memcpy(ram_ + offset, buffer, length);
    return Status::Ok();
  }
  size_t done = 0;
  while (done < length) {
    const ssize_t n = pwrite(fd_, buffer + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(StrCat("write of ", length, " bytes at ", offset, " to ", path_), errno);
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status Device::Sync() const {
  if (fd_ < 0) return Status::Ok();
  if (fdatasync(fd_) != 0) return ErrnoStatus(StrCat("fdatasync ", path_), errno);
  return Status::Ok();
}

Result<EngineKind> ParseEngineKind(std::string_view name) {
  if (name == "threads") return EngineKind::kThreads;
  if (name == "uring") return EngineKind::kUring;
  if (name == "inline") return EngineKind::kInline;
  if (name == "auto") return EngineKind::kAuto;
  if (name == "none") return EngineKind::kNone;
  return InvalidArgument("storage engine must be \"threads\", \"uring\", \"inline\", "
                         "\"auto\" or \"none\", got \"", name, "\"");
}

std::string_view EngineKindName(EngineKind kind) {
  switch (kind) {
    case EngineKind::kThreads: return "threads";
    case EngineKind::kUring: return "uring";
    case EngineKind::kInline: return "inline";
    case EngineKind::kAuto: return "auto";
    case EngineKind::kNone: return "none";
  }
  return "?";
}

namespace {

Status RunSync(const Device& device, const IoRequest& r) {
  switch (r.op) {
    case IoOp::kRead: return device.ReadAt(r.offset, r.buffer, r.length);
    case IoOp::kWrite: return device.WriteAt(r.offset, r.buffer, r.length);
    case IoOp::kFlush: return device.Sync();
  }
  return InternalError("unknown IO op");
}

// ---------------------------------------------------------------------------
// inline and none: the IO (if any) done at Submit, on the polling thread

class ImmediateEngine final : public IoEngine {
 public:
  // `device` null: none (nothing touched).
  explicit ImmediateEngine(const Device* device) : device_(device) {}
  EngineKind kind() const override { return device_ != nullptr ? EngineKind::kInline : EngineKind::kNone; }
  Status Submit(const IoRequest& r) override {
    ready_.push_back({r.tag, device_ != nullptr ? RunSync(*device_, r) : Status::Ok()});
    return Status::Ok();
  }
  size_t Reap(std::vector<IoCompletion>& out) override {
    const size_t n = ready_.size();
    for (auto& c : ready_) out.push_back(std::move(c));
    ready_.clear();
    return n;
  }
  size_t in_flight() const override { return ready_.size(); }

 private:
  const Device* device_;
  std::vector<IoCompletion> ready_;
};

// ---------------------------------------------------------------------------
// threads: seed 001's static pool

class ThreadsEngine final : public IoEngine {
 public:
  ThreadsEngine(Device& device, uint32_t threads, std::function<void()> wake)
      : device_(device),
        wake_(std::move(wake)),
        threads_count_(threads),
        batched_wakes_(device.memory_backed()) {
    for (uint32_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~ThreadsEngine() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;  // the threads finish the queue first
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  EngineKind kind() const override { return EngineKind::kThreads; }

  // On a disk every request wakes a worker, so the workers overlap their IO.
  // On memory (RAM, tmpfs: an IO takes a microsecond) only the first request
  // of an empty queue and every kMaxTake-th after it do: a woken worker keeps
  // taking requests until the queue is empty, so nothing waits without a
  // worker awake, and waking a sleeping worker per request cost more than the
  // IO (remote 4 KiB reads from tmpfs ran 2.5x faster without it).
  Status Submit(const IoRequest& r) override {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake = !batched_wakes_ || queue_.size() % kMaxTake == 0;
      queue_.push_back(r);
    }
    ++in_flight_;
    if (wake) cv_.notify_one();
    return Status::Ok();
  }

  size_t Reap(std::vector<IoCompletion>& out) override {
    std::lock_guard<std::mutex> lock(done_mu_);
    const size_t n = done_.size();
    for (auto& c : done_) out.push_back(std::move(c));
    done_.clear();
    in_flight_ -= n;
    return n;
  }
  size_t in_flight() const override { return in_flight_; }

 private:
  // Each pass takes one request, or on a memory-backed device its share of
  // the queue (up to kMaxTake; on a disk a batch would hold each completion
  // back until the batch's slowest IO), runs them, and queues their
  // completions at once. The polling thread is woken
  // only by the completions that find the done queue empty: until it reaps,
  // the wake already sent covers the ones queued after them. On a fast device
  // (page cache, tmpfs) the hand-offs, not the IO, were the cost: one futex
  // and one eventfd write per request.
  void Work() {
    std::vector<IoRequest> taken;
    std::vector<IoCompletion> finished;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        const size_t share = (queue_.size() + threads_count_ - 1) / threads_count_;
        const size_t n = batched_wakes_ ? std::min(share, kMaxTake) : 1;
        taken.assign(queue_.begin(), queue_.begin() + static_cast<ptrdiff_t>(n));
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<ptrdiff_t>(n));
      }
      finished.clear();
      for (const IoRequest& r : taken) finished.push_back({r.tag, RunSync(device_, r)});
      bool was_empty;
      {
        std::lock_guard<std::mutex> lock(done_mu_);
        was_empty = done_.empty();
        for (IoCompletion& c : finished) done_.push_back(std::move(c));
      }
      if (was_empty && wake_) wake_();
    }
  }

  static constexpr size_t kMaxTake = 8;

  Device& device_;
  std::function<void()> wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<IoRequest> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;            // GUARDED_BY(mu_)
  std::mutex done_mu_;
  std::vector<IoCompletion> done_;  // GUARDED_BY(done_mu_)
  size_t in_flight_ = 0;            // polling thread only
  const size_t threads_count_;
  const bool batched_wakes_;  // the device is memory: see Submit
  std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------------------
// uring

class UringEngine final : public IoEngine {
 public:
  explicit UringEngine(Device& device) : device_(device) {}

  Status Init(uint32_t entries) {
    // Completions that an io-wq worker finishes reach the ring through task
    // work on this thread. By default the worker interrupts the thread for it
    // (an IPI per completion, a third of the time at 32 in flight on tmpfs);
    // cooperatively, the work waits for the thread's next Reap (the flag tells
    // liburing's peek to enter the kernel for it) or wakes it if it sleeps.
    // Kernels before 5.19 refuse the flags: then without them.
    int rc = io_uring_queue_init(entries, &ring_, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
    if (rc == -EINVAL) rc = io_uring_queue_init(entries, &ring_, 0);
    if (rc < 0) return ErrnoStatus(StrCat("io_uring_queue_init(", entries, ")"), -rc);
    ring_ok_ = true;
    return Status::Ok();
  }

  ~UringEngine() override {
    if (!ring_ok_) return;
    if (!unsubmitted_.empty()) io_uring_submit(&ring_);
    while (!pending_.empty()) {  // wait for the device before the buffers go
      io_uring_cqe* cqe = nullptr;
      if (io_uring_wait_cqe(&ring_, &cqe) < 0) break;
      pending_.erase(cqe->user_data);
      io_uring_cqe_seen(&ring_, cqe);
    }
    io_uring_queue_exit(&ring_);
  }

  EngineKind kind() const override { return EngineKind::kUring; }

  Status Submit(const IoRequest& r) override {
    if (device_.is_ram()) {  // nothing to wait for: copy now
      ready_.push_back({r.tag, RunSync(device_, r)});
      return Status::Ok();
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {  // the queue is full of this burst's: start them now
      (void)Push();  // an error stays for Reap's SubmitQueued to handle
      sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) return ResourceExhausted("io_uring submission queue full");
    }
    switch (r.op) {
      case IoOp::kRead:
        io_uring_prep_read(sqe, device_.fd(), r.buffer, r.length, r.offset);
        break;
      case IoOp::kWrite:
        io_uring_prep_write(sqe, device_.fd(), r.buffer, r.length, r.offset);
        break;
      case IoOp::kFlush:
        io_uring_prep_fsync(sqe, device_.fd(), IORING_FSYNC_DATASYNC);
        break;
    }
    const uint64_t id = next_id_++;
    io_uring_sqe_set_data64(sqe, id);
    pending_.emplace(id, r);
    unsubmitted_.push_back(id);  // one io_uring_submit for the burst, at Reap
    return Status::Ok();
  }

  size_t Reap(std::vector<IoCompletion>& out) override {
    size_t n = ready_.size();
    for (auto& c : ready_) out.push_back(std::move(c));
    ready_.clear();
    SubmitQueued(out, n);
    io_uring_cqe* cqe = nullptr;
    // Every completion is consumed, also one no request waits for, so the
    // ring's fd does not stay readable under a blocked Wait.
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      auto it = pending_.find(cqe->user_data);
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (it == pending_.end()) continue;
      IoRequest r = it->second;
      pending_.erase(it);
      ++n;
      out.push_back({r.tag, Finish(r, res)});
    }
    return n;
  }

  size_t in_flight() const override { return pending_.size() + ready_.size(); }
  int wait_fd() const override { return ring_.ring_fd; }

 private:
  // Hands the queued submissions to the kernel in one call. The entries are
  // in the submission ring already, so a transient refusal (EAGAIN, EBUSY:
  // completions to reap first; EINTR) or a partial submission keeps the rest
  // queued for the next Reap. Any other error means the ring is broken: they
  // fail as completions (appended to `out`, counted in `n`).
  void SubmitQueued(std::vector<IoCompletion>& out, size_t& n) {
    if (unsubmitted_.empty()) return;
    const int rc = Push();
    if (rc >= 0 || rc == -EAGAIN || rc == -EBUSY || rc == -EINTR) return;
    for (uint64_t id : unsubmitted_) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      out.push_back({it->second.tag, ErrnoStatus("io_uring_submit", -rc)});
      pending_.erase(it);
      ++n;
    }
    unsubmitted_.clear();
  }

  // io_uring_submit; what the kernel took leaves unsubmitted_ (in order).
  int Push() {
    const int rc = io_uring_submit(&ring_);
    if (rc > 0) {
      const size_t taken = std::min(static_cast<size_t>(rc), unsubmitted_.size());
      unsubmitted_.erase(unsubmitted_.begin(), unsubmitted_.begin() + static_cast<ptrdiff_t>(taken));
    }
    return rc;
  }

  // A short transfer (rare on files) is finished synchronously.
  Status Finish(const IoRequest& r, int res) {
    if (res < 0) {
      return ErrnoStatus(StrCat(r.op == IoOp::kRead ? "read" : r.op == IoOp::kWrite ? "write" : "fdatasync",
                                " of ", r.length, " bytes at ", r.offset, " on ", device_.path()),
                         -res);
    }
    if (r.op == IoOp::kFlush || static_cast<uint32_t>(res) == r.length) return Status::Ok();
    IoRequest rest = r;
    rest.offset += res;
    rest.buffer += res;
    rest.length -= res;
    return RunSync(device_, rest);
  }

  Device& device_;
  io_uring ring_{};
  bool ring_ok_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, IoRequest> pending_;
  std::vector<uint64_t> unsubmitted_;  // prepared, not yet handed to the kernel
  std::vector<IoCompletion> ready_;
};

}  // namespace

Result<std::unique_ptr<IoEngine>> IoEngine::Create(EngineKind kind, Device& device,
                                                   const EngineOptions& options,
                                                   std::function<void()> wake) {
  if (kind == EngineKind::kAuto) kind = device.memory_backed() ? EngineKind::kInline : EngineKind::kThreads;
  switch (kind) {
    case EngineKind::kAuto: break;  // resolved above
    case EngineKind::kNone: return std::unique_ptr<IoEngine>(new ImmediateEngine(nullptr));
    case EngineKind::kInline: return std::unique_ptr<IoEngine>(new ImmediateEngine(&device));
    case EngineKind::kThreads:
      if (options.threads < 1 || options.threads > 64) {
        return InvalidArgument("storage.io_threads must be 1..64, got ", options.threads);
      }
      return std::unique_ptr<IoEngine>(new ThreadsEngine(device, options.threads, std::move(wake)));
    case EngineKind::kUring: {
      auto e = std::make_unique<UringEngine>(device);  // no `wake`: see wait_fd()
      RAMPART_RETURN_IF_ERROR(e->Init(std::max<uint32_t>(options.queue_depth, 8)));
      return std::unique_ptr<IoEngine>(std::move(e));
    }
  }
  return InvalidArgument("unknown engine");
}

}  // namespace rampart::storage
