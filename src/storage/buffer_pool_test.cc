#include "storage/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <vector>

namespace rampart::storage {
namespace {

struct AlignedMemory {
  explicit AlignedMemory(size_t bytes)
      : p(static_cast<std::byte*>(std::aligned_alloc(4096, bytes))) {}
  ~AlignedMemory() { std::free(p); }
  std::byte* p;
};

TEST(BufferPool, HandsOutAlignedDisjointBuffers) {
  AlignedMemory mem(1 << 20);
  BufferPool pool(mem.p, 1 << 20);
  auto a = pool.Get(100);
  auto b = pool.Get(4096);
  auto c = pool.Get(5000);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->size(), 4096u);
  EXPECT_EQ(c->size(), 8192u);
  for (const Buffer* x : {&*a, &*b, &*c}) {
    EXPECT_EQ(x->ref().offset % 4096, 0u);
    EXPECT_EQ(x->data(), mem.p + x->ref().offset);
  }
  EXPECT_NE(a->ref().offset, b->ref().offset);
  EXPECT_NE(b->ref().offset, c->ref().offset);
  EXPECT_EQ(pool.buffers_out(), 3u);
  EXPECT_EQ(pool.free_bytes(), (1u << 20) - 4096 * 4);
}

TEST(BufferPool, ExhaustionAndReuse) {
  AlignedMemory mem(16384);
  BufferPool pool(mem.p, 16384);
  auto a = pool.Get(16384);
  ASSERT_TRUE(a.ok());
  auto b = pool.Get(1);
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  a->Release();
  EXPECT_FALSE(a->valid());
  EXPECT_EQ(pool.free_bytes(), 16384u);
  EXPECT_TRUE(pool.Get(16384).ok());  // destroyed at once: back in the pool
  EXPECT_EQ(pool.Get(0).status().code(), StatusCode::kInvalidArgument);
}

TEST(BufferPool, MoveTransfersOwnership) {
  AlignedMemory mem(8192);
  BufferPool pool(mem.p, 8192);
  Buffer outer;
  {
    auto a = pool.Get(4096);
    ASSERT_TRUE(a.ok());
    outer = std::move(*a);
  }
  EXPECT_TRUE(outer.valid());
  EXPECT_EQ(pool.buffers_out(), 1u);
  outer = Buffer();
  EXPECT_EQ(pool.buffers_out(), 0u);
}

// Random gets and frees, in random order: free ranges coalesce back to one.
TEST(BufferPool, FragmentsCoalesce) {
  constexpr size_t kBytes = 4 << 20;
  AlignedMemory mem(kBytes);
  BufferPool pool(mem.p, kBytes, 512);
  std::mt19937 rng(7);
  std::vector<Buffer> held;
  for (int round = 0; round < 2000; ++round) {
    if (held.empty() || rng() % 3 != 0) {
      auto b = pool.Get(1 + rng() % 70000);
      if (b.ok()) {
        EXPECT_EQ(b->ref().offset % 512, 0u);
        held.push_back(std::move(*b));
      }
    } else {
      held.erase(held.begin() + rng() % held.size());
    }
  }
  held.clear();
  EXPECT_EQ(pool.free_bytes(), kBytes);
  EXPECT_TRUE(pool.Get(kBytes).ok());
}

}  // namespace
}  // namespace rampart::storage
