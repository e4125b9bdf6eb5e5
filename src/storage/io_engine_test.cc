#include "storage/io_engine.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

namespace rampart::storage {
namespace {

constexpr uint64_t kDeviceBytes = 4u << 20;
constexpr uint32_t kBlock = 4096;

struct AlignedBuffer {
  explicit AlignedBuffer(size_t n) : size(n) {
    data = static_cast<std::byte*>(
        mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~AlignedBuffer() { munmap(data, size); }
  std::byte* data;
  size_t size;
};

std::string TempPath() {
  char tmpl[] = "/tmp/rampart_io_engine_XXXXXX";
  int fd = mkstemp(tmpl);
  close(fd);
  return tmpl;
}

// Waits until `n` completions have been reaped.
std::vector<IoCompletion> ReapAll(IoEngine& engine, size_t n) {
  std::vector<IoCompletion> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    if (engine.Reap(out) == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return out;
}

struct Case {
  EngineKind kind;
  bool ram;
};

class EngineTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    DeviceOptions o;
    o.size = kDeviceBytes;
    if (!GetParam().ram) {
      path_ = TempPath();
      o.path = path_;
    }
    auto d = Device::Open(o);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    device_ = std::move(*d);
    auto e = IoEngine::Create(GetParam().kind, *device_, {.threads = 3, .queue_depth = 64},
                              [this] { wakes_.fetch_add(1); });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
  }
  void TearDown() override {
    engine_.reset();
    device_.reset();
    if (!path_.empty()) unlink(path_.c_str());
  }

  std::string path_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<IoEngine> engine_;
  std::atomic<int> wakes_{0};
};

TEST_P(EngineTest, RandomRoundTrips) {
  std::mt19937_64 rng(42);
  const size_t n = 64;
  AlignedBuffer out(n * 16 * kBlock), in(n * 16 * kBlock);
  std::vector<uint64_t> offsets(n);
  std::vector<uint32_t> lengths(n);
  // Non-overlapping slots of 16 blocks, each written with a random length.
  for (size_t i = 0; i < n; ++i) {
    offsets[i] = i * 16 * kBlock;
    lengths[i] = kBlock * (1 + rng() % 16);
    for (size_t b = 0; b < lengths[i]; ++b) out.data[i * 16 * kBlock + b] = std::byte(rng());
  }
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(engine_->Submit({.op = IoOp::kWrite, .offset = offsets[i], .length = lengths[i],
                                 .buffer = out.data + i * 16 * kBlock, .tag = i})
                    .ok());
  }
  auto done = ReapAll(*engine_, n);
  ASSERT_EQ(done.size(), n);
  for (auto& c : done) EXPECT_TRUE(c.status.ok()) << c.status.ToString();
  ASSERT_TRUE(engine_->Submit({.op = IoOp::kFlush, .tag = 999}).ok());
  auto flushed = ReapAll(*engine_, 1);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].tag, 999u);
  EXPECT_TRUE(flushed[0].status.ok());
  EXPECT_EQ(engine_->in_flight(), 0u);

  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(engine_->Submit({.op = IoOp::kRead, .offset = offsets[i], .length = lengths[i],
                                 .buffer = in.data + i * 16 * kBlock, .tag = 1000 + i})
                    .ok());
  }
  done = ReapAll(*engine_, n);
  ASSERT_EQ(done.size(), n);
  for (auto& c : done) {
    EXPECT_TRUE(c.status.ok()) << c.status.ToString();
    EXPECT_GE(c.tag, 1000u);
  }
  if (GetParam().kind == EngineKind::kNone) return;  // touches nothing
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::memcmp(in.data + i * 16 * kBlock, out.data + i * 16 * kBlock, lengths[i]), 0)
        << "slot " << i;
  }
  // What the engine wrote is on the device.
  AlignedBuffer check(kBlock);
  ASSERT_TRUE(device_->ReadAt(offsets[3], check.data, kBlock).ok());
  EXPECT_EQ(std::memcmp(check.data, out.data + 3 * 16 * kBlock, kBlock), 0);
  if (GetParam().kind == EngineKind::kThreads) {
    EXPECT_GT(wakes_.load(), 0);
  }
}

// The engines that touch a file: an odd request completes, and the engine
// serves on.
class EngineOnFileTest : public EngineTest {};

TEST_P(EngineOnFileTest, OddRequestsComeBackAsCompletions) {
  AlignedBuffer buf(kBlock);
  // Misaligned under O_DIRECT is EINVAL; buffered, reading past the end gives
  // zeros. Either way a completion comes and the engine goes on.
  ASSERT_TRUE(engine_->Submit({.op = IoOp::kRead, .offset = 1, .length = 100,
                               .buffer = buf.data + 1, .tag = 5})
                  .ok());
  auto done = ReapAll(*engine_, 1);
  ASSERT_EQ(done.size(), 1u);
  // (Whether O_DIRECT refuses it depends on the filesystem; only the completion is checked.)
  ASSERT_TRUE(engine_->Submit({.op = IoOp::kRead, .offset = 0, .length = kBlock,
                               .buffer = buf.data, .tag = 6})
                  .ok());
  done = ReapAll(*engine_, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].status.ok()) << done[0].status.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    All, EngineTest,
    ::testing::Values(Case{EngineKind::kThreads, false}, Case{EngineKind::kThreads, true},
                      Case{EngineKind::kUring, false}, Case{EngineKind::kUring, true},
                      Case{EngineKind::kInline, false}, Case{EngineKind::kInline, true},
                      Case{EngineKind::kNone, false}, Case{EngineKind::kNone, true}),
    [](const auto& info) {
      return StrCat(EngineKindName(info.param.kind), info.param.ram ? "_ram" : "_file");
    });

INSTANTIATE_TEST_SUITE_P(
    File, EngineOnFileTest,
    ::testing::Values(Case{EngineKind::kThreads, false}, Case{EngineKind::kUring, false},
                      Case{EngineKind::kInline, false}),
    [](const auto& info) { return std::string(EngineKindName(info.param.kind)); });

// The uring engine is driven by blocking on its wait fd alone: every
// completion makes it readable (or was reaped with the burst), and it never
// calls `wake`. The other engines have no wait fd.
TEST(UringEngine, BlockingOnTheWaitFdSeesEveryCompletion) {
  const std::string path = TempPath();
  auto device = Device::Open({.path = path, .size = kDeviceBytes});
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  std::atomic<int> wakes{0};
  auto engine = IoEngine::Create(EngineKind::kUring, **device, {.queue_depth = 64},
                                 [&] { wakes.fetch_add(1); });
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  IoEngine& e = **engine;
  ASSERT_GE(e.wait_fd(), 0);
  constexpr size_t kIos = 64;
  AlignedBuffer buf(kIos * kBlock);
  for (size_t round = 0; round < 20; ++round) {
    for (size_t i = 0; i < kIos; ++i) {
      ASSERT_TRUE(e.Submit({.op = IoOp::kRead, .offset = ((i * 7 + round) % 1024) * kBlock,
                            .length = kBlock, .buffer = buf.data + i * kBlock, .tag = i})
                      .ok());
    }
    // Reads from the page cache may complete inside the submission; an
    // fdatasync always goes to an io-wq worker, so it completes later.
    ASSERT_TRUE(e.Submit({.op = IoOp::kFlush, .tag = kIos}).ok());
    std::vector<IoCompletion> done;
    e.Reap(done);  // hands the burst to the kernel
    while (done.size() < kIos + 1) {
      pollfd p{.fd = e.wait_fd(), .events = POLLIN, .revents = 0};
      int r;
      do r = poll(&p, 1, 10000); while (r < 0 && errno == EINTR);
      ASSERT_EQ(r, 1) << "round " << round << ": " << done.size() << " of " << kIos + 1
                      << " completions, and the wait fd stayed quiet for 10 s";
      e.Reap(done);
    }
    for (const IoCompletion& c : done) EXPECT_TRUE(c.status.ok()) << c.status.ToString();
  }
  EXPECT_EQ(e.in_flight(), 0u);
  EXPECT_EQ(wakes.load(), 0);
  engine->reset();
  unlink(path.c_str());
  for (EngineKind kind : {EngineKind::kThreads, EngineKind::kInline, EngineKind::kNone}) {
    auto other = IoEngine::Create(kind, **device, {}, [] {});
    ASSERT_TRUE(other.ok());
    EXPECT_EQ((*other)->wait_fd(), -1) << EngineKindName(kind);
  }
}

// Completions that find earlier ones not yet reaped do not wake the polling
// thread again: one wake covers everything queued until the next Reap.
TEST(ThreadsEngine, OneWakeCoversCompletionsUntilTheNextReap) {
  auto device = Device::Open({.path = "ram", .size = kDeviceBytes});
  ASSERT_TRUE(device.ok());
  std::atomic<int> wakes{0};
  auto engine = IoEngine::Create(EngineKind::kThreads, **device, {.threads = 3},
                                 [&] { wakes.fetch_add(1); });
  ASSERT_TRUE(engine.ok());
  constexpr size_t kRequests = 200;
  AlignedBuffer buffer(kRequests * kBlock);
  for (size_t i = 0; i < kRequests; ++i) {
    ASSERT_TRUE((*engine)
                    ->Submit({.op = IoOp::kRead, .offset = i * kBlock, .length = kBlock,
                              .buffer = buffer.data + i * kBlock, .tag = i})
                    .ok());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (wakes.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the rest complete meanwhile
  EXPECT_EQ(wakes.load(), 1);
  std::vector<IoCompletion> done = ReapAll(**engine, kRequests);
  ASSERT_EQ(done.size(), kRequests);
  std::vector<bool> seen(kRequests);
  for (const IoCompletion& c : done) {
    EXPECT_TRUE(c.status.ok()) << c.status.ToString();
    ASSERT_LT(c.tag, kRequests);
    EXPECT_FALSE(seen[c.tag]) << c.tag;
    seen[c.tag] = true;
  }
}

TEST(Device, MemoryBacked) {
  auto ram = Device::Open({.path = "ram", .size = kDeviceBytes});
  ASSERT_TRUE(ram.ok());
  EXPECT_TRUE((*ram)->memory_backed());
  // /dev/shm is tmpfs on Linux.
  const std::string shm = "/dev/shm/rampart_io_engine_test_" + std::to_string(getpid());
  auto file = Device::Open({.path = shm, .size = kDeviceBytes});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE((*file)->memory_backed()) << (*file)->description();
  file->reset();
  unlink(shm.c_str());
  // A device node lives on devtmpfs (TMPFS_MAGIC) but is no memory.
  auto node = Device::Open({.path = "/dev/zero", .size = kDeviceBytes, .direct = false});
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_FALSE((*node)->memory_backed());
}

TEST(Device, OpenErrorsAndParse) {
  EXPECT_FALSE(Device::Open({.path = "/nonexistent/dir/x", .size = 4096}).ok());
  EXPECT_FALSE(Device::Open({.path = "ram", .size = 0}).ok());
  EXPECT_FALSE(ParseEngineKind("fast").ok());
  EXPECT_EQ(*ParseEngineKind("uring"), EngineKind::kUring);
  EXPECT_EQ(*ParseEngineKind("inline"), EngineKind::kInline);
}

}  // namespace
}  // namespace rampart::storage
