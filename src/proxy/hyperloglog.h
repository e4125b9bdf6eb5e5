// HyperLogLog as Redis keeps it: a string value ("HYLL" header, then 16384
// six-bit registers, dense or run-length sparse), hashed with MurmurHash64A
// and counted with Redis's estimator, so that PFADD, PFCOUNT and PFMERGE
// answer what redis-server answers and their values move between the two
// with GET/SET or DUMP/RESTORE.
//
//   RAMPART_ASSIGN_OR_RETURN(HyperLogLog h, HyperLogLog::Decode(stored_string));
//   bool changed = h.Add("element");
//   uint64_t n = h.Count();
//   std::string value = h.Encode();   // sparse while it can be, like Redis
//
// The string format is Redis's (hyperloglog.c), not rampart's:
//   bytes 0..3   "HYLL"
//   byte 4       encoding: 0 dense, 1 sparse
//   bytes 5..7   0
//   bytes 8..15  cached cardinality, little-endian; bit 7 of byte 15 set: not valid
//   dense:  16384 registers of 6 bits, register i at bit 6i, least significant
//           bits first (12288 bytes)
//   sparse: runs — 00xxxxxx: xxxxxx+1 zero registers; 01xxxxxx yyyyyyyy: a
//           14-bit count+1 of zeros; 1vvvvvxx: xx+1 registers of value vvvvv+1
//
// Thread-safety: a value; pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace rampart::proxy {

class HyperLogLog {
 public:
  static constexpr size_t kRegisters = 16384;
  static constexpr size_t kHeaderBytes = 16;
  static constexpr size_t kDenseBytes = kHeaderBytes + kRegisters * 6 / 8;
  // Redis's hll-sparse-max-bytes default: a longer sparse form is written dense.
  static constexpr size_t kSparseMaxBytes = 3000;

  // An empty one (every register 0), written sparse.
  HyperLogLog();

  // The HyperLogLog of a string value: InvalidArgument("WRONGTYPE Key is not a
  // valid HyperLogLog string value.") when it is no HLL (magic, encoding,
  // dense size), InvalidArgument("INVALIDOBJ Corrupted HLL object detected")
  // when its sparse runs do not cover the registers exactly.
  static Result<HyperLogLog> Decode(std::string_view value);

  // Adds an element; true when a register grew.
  bool Add(std::string_view element);
  // Each register the larger of this one's and other's.
  void Merge(const HyperLogLog& other);
  // The estimated cardinality: the cached one when the value read had a valid
  // cache, else Redis's estimator over the registers.
  uint64_t Count() const;

  // Whether it was read dense, or is to be written dense whatever its registers.
  bool dense() const { return dense_; }
  void set_dense() { dense_ = true; }
  // The string value: sparse when it was not dense and its registers fit a
  // sparse form of at most kSparseMaxBytes (values up to 32), else dense;
  // the cache not valid.
  std::string Encode() const;

 private:
  // Redis's estimator (Ertl's improved HyperLogLog estimator).
  uint64_t Estimate() const;
  std::optional<std::string> EncodeSparse() const;

  std::array<uint8_t, kRegisters> registers_{};
  bool dense_ = false;
  std::optional<uint64_t> cached_;  // from the value read, until a change
};

}  // namespace rampart::proxy
