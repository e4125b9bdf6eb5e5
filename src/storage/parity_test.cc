#include "storage/parity.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

namespace rampart::storage {
namespace {

// `count` buffers of `length` bytes, each starting `misalign[i]` bytes past a
// 64-byte boundary, filled with random bytes.
class Cells {
 public:
  Cells(size_t count, size_t length, const std::vector<size_t>& misalign, std::mt19937_64& rng)
      : length_(length) {
    for (size_t i = 0; i < count; ++i) {
      // aligned_alloc wants a size that is a multiple of the alignment.
      const size_t bytes = (length + 128 + 63) / 64 * 64;
      std::byte* raw = static_cast<std::byte*>(std::aligned_alloc(64, bytes));
      storage_.emplace_back(raw, &std::free);
      std::byte* cell = raw + misalign[i % misalign.size()];
      for (size_t j = 0; j < length; ++j) cell[j] = static_cast<std::byte>(rng());
      cells_.push_back(cell);
    }
  }
  MutableBytes operator[](size_t i) const { return {cells_[i], length_}; }
  std::vector<ConstBytes> Const(size_t from, size_t to) const {
    std::vector<ConstBytes> out;
    for (size_t i = from; i < to; ++i) out.push_back((*this)[i]);
    return out;
  }
  std::vector<MutableBytes> All() const {
    std::vector<MutableBytes> out;
    for (size_t i = 0; i < cells_.size(); ++i) out.push_back((*this)[i]);
    return out;
  }

 private:
  size_t length_;
  std::vector<std::unique_ptr<std::byte, decltype(&std::free)>> storage_;
  std::vector<std::byte*> cells_;
};

// The reference: one byte at a time.
std::vector<std::byte> ByteLoop(const std::vector<ConstBytes>& sources) {
  std::vector<std::byte> out(sources[0].begin(), sources[0].end());
  for (size_t s = 1; s < sources.size(); ++s) {
    for (size_t i = 0; i < out.size(); ++i) out[i] ^= sources[s][i];
  }
  return out;
}

bool Equal(ConstBytes a, const std::vector<std::byte>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

const size_t kLengths[] = {0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 100, 127, 128, 4095, 4096, 4097,
                           16 * 1024, 16 * 1024 + 24, 100'000};
const std::vector<std::vector<size_t>> kAlignments = {
    {0}, {32}, {5}, {0, 0, 0, 0, 16}, {3, 9, 0, 17}, {0, 32}};

TEST(ParityTest, MatchesAByteLoopForManySizesAndAlignments) {
  std::mt19937_64 rng(42);
  for (size_t k : {1, 2, 3, 4, 7, 20}) {  // 20: more buffers than fit inline
    for (size_t length : kLengths) {
      for (const auto& misalign : kAlignments) {
        SCOPED_TRACE(testing::Message() << "k " << k << ", length " << length << ", misalign "
                                        << misalign[0] << "...");
        Cells cells(k + 1, length, misalign, rng);
        const std::vector<ConstBytes> sources = cells.Const(0, k);
        const std::vector<std::byte> expected = ByteLoop(sources);
        ASSERT_TRUE(ComputeParity(sources, cells[k]).ok());
        EXPECT_TRUE(Equal(cells[k], expected));
        EXPECT_TRUE(CheckParity(sources, cells[k]).ok());

        Cells plain(1, length, misalign, rng);
        ASSERT_TRUE(ComputeParityPlain(sources, plain[0]).ok());
        EXPECT_TRUE(Equal(plain[0], expected));
      }
    }
  }
}

TEST(ParityTest, ReconstructsAnyLostCell) {
  std::mt19937_64 rng(7);
  for (size_t k : {2, 3, 5}) {
    for (size_t length : {size_t{33}, size_t{4096}, size_t{16 * 1024 + 5}}) {
      for (const auto& misalign : kAlignments) {
        Cells cells(k + 1, length, misalign, rng);
        ASSERT_TRUE(ComputeParity(cells.Const(0, k), cells[k]).ok());
        for (size_t lost = 0; lost <= k; ++lost) {
          const std::vector<std::byte> original(cells[lost].begin(), cells[lost].end());
          std::fill(cells[lost].begin(), cells[lost].end(), std::byte{0xAB});
          ASSERT_TRUE(Reconstruct(cells.All(), lost).ok());
          EXPECT_TRUE(Equal(cells[lost], original)) << "k " << k << " lost " << lost;
        }
      }
    }
  }
}

TEST(ParityTest, ReadModifyWriteUpdatesTheParity) {
  std::mt19937_64 rng(3);
  const size_t length = 16 * 1024;
  Cells cells(4, length, {0}, rng);  // 3 data cells + parity
  ASSERT_TRUE(ComputeParity(cells.Const(0, 3), cells[3]).ok());
  Cells fresh(2, length, {0}, rng);  // new contents of cell 1, new parity
  const ConstBytes rmw[] = {cells[3], cells[1], fresh[0]};
  ASSERT_TRUE(ComputeParity(rmw, fresh[1]).ok());
  std::copy(fresh[0].begin(), fresh[0].end(), cells[1].begin());
  EXPECT_TRUE(CheckParity(cells.Const(0, 3), fresh[1]).ok());
}

TEST(ParityTest, CheckFindsTheFirstBadByte) {
  std::mt19937_64 rng(5);
  for (const auto& misalign : kAlignments) {
    for (size_t k : {1, 3}) {
      const size_t length = 5000;
      Cells cells(k + 1, length, misalign, rng);
      const std::vector<ConstBytes> sources = cells.Const(0, k);
      ASSERT_TRUE(ComputeParity(sources, cells[k]).ok());
      for (size_t bad : {size_t{0}, size_t{20}, size_t{1000}, size_t{4999}}) {
        cells[k][bad] ^= std::byte{0x10};
        const Status st = CheckParity(sources, cells[k]);
        EXPECT_EQ(st.code(), StatusCode::kCorruption);
        EXPECT_EQ(st.message(), "parity does not match its " + std::to_string(k) +
                                    " cells at byte " + std::to_string(bad) + " of 5000");
        cells[k][bad] ^= std::byte{0x10};
      }
      EXPECT_TRUE(CheckParity(sources, cells[k]).ok());
    }
  }
}

TEST(ParityTest, BadShapesAreRefused) {
  std::mt19937_64 rng(1);
  Cells cells(3, 64, {0}, rng);
  std::vector<ConstBytes> sources = cells.Const(0, 2);
  EXPECT_EQ(ComputeParity({}, cells[2]).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeParity(sources, cells[2].first(32)).message(),
            "cell 0 has 64 bytes but the parity has 32 (all cells of a stripe have one length)");
  EXPECT_EQ(CheckParity(sources, cells[2].first(63)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeParityPlain(sources, cells[2].first(1)).code(), StatusCode::kInvalidArgument);
  const std::vector<MutableBytes> all = cells.All();
  EXPECT_EQ(Reconstruct(all, 3).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Reconstruct(std::span(all).first(1), 0).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rampart::storage
