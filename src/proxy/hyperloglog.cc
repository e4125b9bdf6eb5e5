#include "proxy/hyperloglog.h"

#include <cmath>
#include <cstring>

#include "common/little_endian.h"

namespace rampart::proxy {
namespace {

constexpr uint64_t kHashSeed = 0xadc83b19ULL;
constexpr int kIndexBits = 14;  // Redis's HLL_P
constexpr int kQ = 64 - kIndexBits;
constexpr uint8_t kDense = 0, kSparse = 1;
constexpr uint8_t kMaxSparseValue = 32;
constexpr size_t kMaxZeroRun = 64, kMaxXZeroRun = 16384, kMaxValRun = 4;

Status NotAnHll() { return InvalidArgument("WRONGTYPE Key is not a valid HyperLogLog string value."); }
Status Corrupted() { return InvalidArgument("INVALIDOBJ Corrupted HLL object detected"); }

// Redis's hllSigma and hllTau (Ertl's estimator).
double Sigma(double x) {
  if (x == 1.) return INFINITY;
  double z_prime, y = 1, z = x;
  do {
    x *= x;
    z_prime = z;
    z += x * y;
    y += y;
  } while (z_prime != z);
  return z;
}
double Tau(double x) {
  if (x == 0. || x == 1.) return 0.;
  double z_prime, y = 1.0, z = 1 - x;
  do {
    x = std::sqrt(x);
    z_prime = z;
    y *= 0.5;
    z -= std::pow(1 - x, 2) * y;
  } while (z_prime != z);
  return z / 3;
}

// Redis's MurmurHash64A (hyperloglog.c): 8-byte words little-endian, then the tail.
uint64_t MurmurHash64A(std::string_view key, uint64_t seed) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  uint64_t h = seed ^ (key.size() * m);
  const size_t whole = key.size() - key.size() % 8;
  for (size_t at = 0; at < whole; at += 8) {
    uint64_t k = LoadLittleEndian(key.substr(at), 8);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  if (whole < key.size()) {
    h ^= LoadLittleEndian(key.substr(whole), key.size() - whole);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

}  // namespace

HyperLogLog::HyperLogLog() = default;

Result<HyperLogLog> HyperLogLog::Decode(std::string_view value) {
  if (value.size() < kHeaderBytes || value.substr(0, 4) != "HYLL") return NotAnHll();
  const auto* p = reinterpret_cast<const unsigned char*>(value.data());
  const uint8_t encoding = p[4];
  if (encoding > kSparse || (encoding == kDense && value.size() != kDenseBytes)) return NotAnHll();
  HyperLogLog h;
  if ((p[15] & 0x80) == 0) h.cached_ = LoadLittleEndian(value.substr(8), 8);
  const unsigned char* regs = p + kHeaderBytes;
  if (encoding == kDense) {
    h.dense_ = true;
    for (size_t i = 0; i < kRegisters; ++i) {
      const size_t bit = i * 6, byte = bit / 8, shift = bit % 8;
      const unsigned next = byte + 1 < kDenseBytes - kHeaderBytes ? regs[byte + 1] : 0;
      h.registers_[i] = static_cast<uint8_t>(((regs[byte] >> shift) | (next << (8 - shift))) & 63);
    }
    return h;
  }
  size_t i = 0;
  const size_t n = value.size() - kHeaderBytes;
  for (size_t at = 0; at < n;) {
    const uint8_t op = regs[at];
    size_t run = 0;
    uint8_t v = 0;
    if ((op & 0xc0) == 0x00) {  // ZERO
      run = (op & 0x3f) + 1u;
      at += 1;
    } else if ((op & 0xc0) == 0x40) {  // XZERO
      if (at + 1 >= n) return Corrupted();
      run = ((op & 0x3fu) << 8 | regs[at + 1]) + 1;
      at += 2;
    } else {  // VAL
      v = static_cast<uint8_t>(((op >> 2) & 0x1f) + 1);
      run = (op & 3u) + 1;
      at += 1;
    }
    if (i + run > kRegisters) return Corrupted();
    if (v != 0) std::memset(h.registers_.data() + i, v, run);
    i += run;
  }
  if (i != kRegisters) return Corrupted();
  return h;
}

bool HyperLogLog::Add(std::string_view element) {
  uint64_t hash = MurmurHash64A(element, kHashSeed);
  const size_t index = hash & (kRegisters - 1);
  hash >>= kIndexBits;
  hash |= uint64_t{1} << kQ;  // the loop ends; count <= kQ + 1
  uint8_t count = 1;
  for (uint64_t bit = 1; (hash & bit) == 0; bit <<= 1) ++count;
  if (registers_[index] >= count) return false;
  registers_[index] = count;
  cached_.reset();
  return true;
}

void HyperLogLog::Merge(const HyperLogLog& other) {
  for (size_t i = 0; i < kRegisters; ++i) {
    if (other.registers_[i] > registers_[i]) {
      registers_[i] = other.registers_[i];
      cached_.reset();
    }
  }
}

uint64_t HyperLogLog::Count() const { return cached_.has_value() ? *cached_ : Estimate(); }

uint64_t HyperLogLog::Estimate() const {
  const double m = kRegisters;
  int histogram[64] = {};
  for (uint8_t r : registers_) ++histogram[r];
  double z = m * Tau((m - histogram[kQ + 1]) / m);
  for (int j = kQ; j >= 1; --j) {
    z += histogram[j];
    z *= 0.5;
  }
  z += m * Sigma(histogram[0] / m);
  constexpr double kAlphaInf = 0.721347520444481703680;  // 0.5 / ln(2)
  return static_cast<uint64_t>(std::llround(kAlphaInf * m * m / z));
}

std::optional<std::string> HyperLogLog::EncodeSparse() const {
  std::string out;
  for (size_t i = 0; i < kRegisters;) {
    const uint8_t v = registers_[i];
    size_t run = 1;
    while (i + run < kRegisters && registers_[i + run] == v) ++run;
    i += run;
    if (v == 0) {
      for (; run > kMaxZeroRun; run -= std::min(run, kMaxXZeroRun)) {
        const size_t n = std::min(run, kMaxXZeroRun) - 1;
        out.push_back(static_cast<char>(0x40 | n >> 8));
        out.push_back(static_cast<char>(n & 0xff));
      }
      if (run > 0) out.push_back(static_cast<char>(run - 1));
      continue;
    }
    if (v > kMaxSparseValue) return std::nullopt;
    for (; run > 0; run -= std::min(run, kMaxValRun)) {
      out.push_back(static_cast<char>(0x80 | (v - 1) << 2 | (std::min(run, kMaxValRun) - 1)));
    }
    if (out.size() > kSparseMaxBytes) return std::nullopt;
  }
  return out;
}

std::string HyperLogLog::Encode() const {
  std::string out("HYLL", 4);
  std::optional<std::string> sparse = dense_ ? std::nullopt : EncodeSparse();
  out.push_back(static_cast<char>(sparse.has_value() ? kSparse : kDense));
  out.append(10, '\0');
  out.push_back(static_cast<char>(0x80));  // the cache is not valid
  if (sparse.has_value()) return out + *sparse;
  std::string regs(kDenseBytes - kHeaderBytes, '\0');
  for (size_t i = 0; i < kRegisters; ++i) {
    const size_t bit = i * 6, byte = bit / 8, shift = bit % 8;
    regs[byte] = static_cast<char>(static_cast<uint8_t>(regs[byte]) | registers_[i] << shift);
    if (shift > 2) {  // the register continues into the next byte
      regs[byte + 1] = static_cast<char>(static_cast<uint8_t>(regs[byte + 1]) | registers_[i] >> (8 - shift));
    }
  }
  return out + regs;
}

}  // namespace rampart::proxy
