#include "storage/parity.h"

#include <isa-l/raid.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace rampart::storage {
namespace {

constexpr uintptr_t kIsalAlignment = 32;         // xor_gen wants 32-byte aligned pointers
constexpr size_t kIsalLengthUnit = 64;           // and gets whole 64-byte lines
constexpr size_t kIsalMaxLength = size_t{1} << 30;  // its length is an int

// The buffers of one call, in ISA-L's order: the sources, then the parity
// (or the output). Small stripes need no allocation.
class Buffers {
 public:
  Buffers(std::span<const ConstBytes> sources, const std::byte* last)
      : count_(sources.size() + 1) {
    if (count_ > inline_.size()) heap_.resize(count_);
    std::byte** p = data();
    for (size_t i = 0; i < sources.size(); ++i) p[i] = const_cast<std::byte*>(sources[i].data());
    p[count_ - 1] = const_cast<std::byte*>(last);
  }

  std::byte** data() { return heap_.empty() ? inline_.data() : heap_.data(); }
  size_t count() const { return count_; }

  // The part [begin, end) of every buffer that ISA-L can take: all
  // addresses equal modulo 32, begin at a 32-byte boundary, whole 64-byte
  // lines. {length, length} when the alignments differ.
  std::pair<size_t, size_t> IsalPart(size_t length) {
    const uintptr_t offset = reinterpret_cast<uintptr_t>(data()[0]) % kIsalAlignment;
    for (size_t i = 1; i < count_; ++i) {
      if (reinterpret_cast<uintptr_t>(data()[i]) % kIsalAlignment != offset) {
        return {length, length};
      }
    }
    const size_t begin = std::min(length, (kIsalAlignment - offset) % kIsalAlignment);
    return {begin, begin + (length - begin) / kIsalLengthUnit * kIsalLengthUnit};
  }

  // Runs `isal` (xor_gen or xor_check) on [begin, end) of every buffer, in
  // pieces its int length can hold. Returns the first nonzero result, or 0.
  int CallIsal(int (*isal)(int, int, void**), size_t begin, size_t end) {
    std::array<void*, kInline> inline_shifted;
    std::vector<void*> heap_shifted(count_ > kInline ? count_ : 0);
    void** shifted = heap_shifted.empty() ? inline_shifted.data() : heap_shifted.data();
    for (size_t at = begin; at < end; at += kIsalMaxLength) {
      for (size_t i = 0; i < count_; ++i) shifted[i] = data()[i] + at;
      const size_t n = std::min(kIsalMaxLength, end - at);
      if (int rc = isal(static_cast<int>(count_), static_cast<int>(n), shifted); rc != 0) {
        return rc;
      }
    }
    return 0;
  }

 private:
  static constexpr size_t kInline = 16;
  size_t count_;
  std::array<std::byte*, kInline> inline_{};
  std::vector<std::byte*> heap_;
};

// Bytes [begin, end) of the last buffer = XOR of the others there, 8 bytes
// at a time.
void XorPlain(Buffers& buffers, size_t begin, size_t end) {
  std::byte* const* p = buffers.data();
  const size_t sources = buffers.count() - 1;
  std::byte* out = p[sources];
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    uint64_t word;
    std::memcpy(&word, p[0] + i, 8);
    for (size_t s = 1; s < sources; ++s) {
      uint64_t other;
      std::memcpy(&other, p[s] + i, 8);
      word ^= other;
    }
    std::memcpy(out + i, &word, 8);
  }
  for (; i < end; ++i) {
    std::byte b = p[0][i];
    for (size_t s = 1; s < sources; ++s) b ^= p[s][i];
    out[i] = b;
  }
}

// The first byte in [begin, end) where the XOR of all buffers (sources and
// parity) is not zero, or `end`.
size_t FirstMismatch(Buffers& buffers, size_t begin, size_t end) {
  std::byte* const* p = buffers.data();
  for (size_t i = begin; i < end; ++i) {
    std::byte b{0};
    for (size_t s = 0; s < buffers.count(); ++s) b ^= p[s][i];
    if (b != std::byte{0}) return i;
  }
  return end;
}

Status CheckLengths(std::span<const ConstBytes> sources, size_t length) {
  if (sources.empty()) return InvalidArgument("parity of no cells");
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].size() != length) {
      return InvalidArgument("cell ", i, " has ", sources[i].size(), " bytes but the parity has ",
                             length, " (all cells of a stripe have one length)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ComputeParity(std::span<const ConstBytes> sources, MutableBytes parity) {
  RAMPART_RETURN_IF_ERROR(CheckLengths(sources, parity.size()));
  if (sources.size() == 1) {
    if (!parity.empty()) std::memcpy(parity.data(), sources[0].data(), parity.size());
    return Status::Ok();
  }
  Buffers buffers(sources, parity.data());
  const auto [begin, end] = buffers.IsalPart(parity.size());
  XorPlain(buffers, 0, begin);
  if (begin < end && buffers.CallIsal(xor_gen, begin, end) != 0) {
    XorPlain(buffers, begin, end);  // not expected: ISA-L refuses only bad shapes
  }
  XorPlain(buffers, end, parity.size());
  return Status::Ok();
}

Status ComputeParityPlain(std::span<const ConstBytes> sources, MutableBytes parity) {
  RAMPART_RETURN_IF_ERROR(CheckLengths(sources, parity.size()));
  Buffers buffers(sources, parity.data());
  XorPlain(buffers, 0, parity.size());
  return Status::Ok();
}

Status Reconstruct(std::span<const MutableBytes> cells, size_t missing) {
  if (cells.size() < 2 || missing >= cells.size()) {
    return InvalidArgument("cannot rebuild cell ", missing, " of ", cells.size(),
                           " (a stripe has at least two cells)");
  }
  std::vector<ConstBytes> others;
  others.reserve(cells.size() - 1);
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i != missing) others.emplace_back(cells[i]);
  }
  return ComputeParity(others, cells[missing]);
}

Status CheckParity(std::span<const ConstBytes> sources, ConstBytes parity) {
  RAMPART_RETURN_IF_ERROR(CheckLengths(sources, parity.size()));
  Buffers buffers(sources, parity.data());
  const size_t length = parity.size();
  // xor_check needs at least three buffers; two are equal or not.
  const auto [begin, end] =
      sources.size() >= 2 ? buffers.IsalPart(length) : std::pair<size_t, size_t>{length, length};
  size_t bad = FirstMismatch(buffers, 0, begin);
  if (bad == begin) {
    const bool body_ok = begin == end || buffers.CallIsal(xor_check, begin, end) == 0;
    bad = body_ok ? FirstMismatch(buffers, end, length) : FirstMismatch(buffers, begin, end);
  }
  if (bad >= length) return Status::Ok();
  return Corruption("parity does not match its ", sources.size(), " cells at byte ", bad, " of ",
                    length);
}

}  // namespace rampart::storage
