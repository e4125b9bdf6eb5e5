// Transaction timestamps, unique across the cluster (docs/design.md §6).
//
// A timestamp is a uint64_t that packs, from the most significant bit down:
//
//   63                    23 22        13 12          0
//   +-----------------------+------------+------------+
//   | ms since 2024-01-01   | sequence   | client id  |
//   |        41 bits        |  10 bits   |  13 bits   |
//   +-----------------------+------------+------------+
//
// Why this split:
//  - 41 bits of milliseconds last 2^41 ms = 69.7 years, until 2093-09. The
//    epoch is 2024-01-01T00:00:00Z (Unix ms 1704067200000).
//  - 13 bits of client id: 8192 clients (processes with a TimestampSource:
//    client libraries, proxies) per cluster. Ids are handed out by the
//    cluster file/launcher; two sources with different ids can never produce
//    the same timestamp because the id occupies the low bits of every value.
//  - 10 bits of sequence: 1024 timestamps per millisecond per client, i.e.
//    ~1M transactions/s from one client, well above what one client process
//    issues. A client that goes faster does not block: the sequence carries
//    into the millisecond field, i.e. the source runs ahead of the wall clock
//    for a moment and the wall clock catches up.
//
// Ordering: comparing two timestamps as integers orders them by time first,
// then by sequence, then by client id. Values from one source are strictly
// increasing, also when the wall clock steps backwards (the source keeps
// using the last millisecond it issued and only advances the sequence).
//
// 0 (kNoTimestamp) is never issued and means "no timestamp".
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "common/status.h"

namespace rampart {

inline constexpr int kTimestampClientBits = 13;
inline constexpr int kTimestampSeqBits = 10;
inline constexpr int kTimestampMsBits = 64 - kTimestampSeqBits - kTimestampClientBits;  // 41
inline constexpr uint32_t kMaxTimestampClientId = (1u << kTimestampClientBits) - 1;     // 8191
inline constexpr uint32_t kMaxTimestampSeq = (1u << kTimestampSeqBits) - 1;             // 1023
inline constexpr uint64_t kMaxTimestampMs = (uint64_t{1} << kTimestampMsBits) - 1;
// 2024-01-01T00:00:00Z in Unix milliseconds.
inline constexpr uint64_t kTimestampEpochUnixMs = 1704067200000ull;
inline constexpr uint64_t kNoTimestamp = 0;

struct TimestampParts {
  uint64_t ms = 0;      // milliseconds since kTimestampEpochUnixMs
  uint32_t seq = 0;     // 0..kMaxTimestampSeq
  uint32_t client = 0;  // 0..kMaxTimestampClientId
  friend bool operator==(const TimestampParts&, const TimestampParts&) = default;
};

// REQUIRES: ms <= kMaxTimestampMs, seq <= kMaxTimestampSeq,
// client <= kMaxTimestampClientId (higher bits are masked off).
constexpr uint64_t PackTimestamp(uint64_t ms, uint32_t seq, uint32_t client) {
  return ((ms & kMaxTimestampMs) << (kTimestampSeqBits + kTimestampClientBits)) |
         (uint64_t{seq & kMaxTimestampSeq} << kTimestampClientBits) |
         (client & kMaxTimestampClientId);
}
constexpr TimestampParts UnpackTimestamp(uint64_t ts) {
  return TimestampParts{ts >> (kTimestampSeqBits + kTimestampClientBits),
                        static_cast<uint32_t>((ts >> kTimestampClientBits) & kMaxTimestampSeq),
                        static_cast<uint32_t>(ts & kMaxTimestampClientId)};
}
constexpr uint32_t TimestampClientId(uint64_t ts) {
  return static_cast<uint32_t>(ts & kMaxTimestampClientId);
}
// Wall-clock time the timestamp was issued at (or slightly after, see above).
constexpr uint64_t TimestampUnixMs(uint64_t ts) {
  return UnpackTimestamp(ts).ms + kTimestampEpochUnixMs;
}

// InvalidArgument unless client_id <= kMaxTimestampClientId.
Status ValidateTimestampClientId(uint64_t client_id);

// Milliseconds since the Unix epoch from the system (wall) clock.
uint64_t SystemClockUnixMs();

// Issues timestamps for one client id.
//
// Thread-safety: Next() may be called from any number of threads at once; it
// is lock-free (one atomic compare-and-swap loop on the last issued value).
// The clock function must be thread-safe too.
class TimestampSource {
 public:
  // Returns milliseconds since the Unix epoch. Injectable for tests.
  using Clock = std::function<uint64_t()>;

  // REQUIRES: client_id <= kMaxTimestampClientId (checked by assert; use
  // Create() for ids that come from outside). Default clock: system clock.
  explicit TimestampSource(uint32_t client_id, Clock clock = nullptr);

  // Validates the id: InvalidArgument("timestamp client id 9000 is out of
  // range 0..8191").
  static Result<std::unique_ptr<TimestampSource>> Create(uint64_t client_id,
                                                         Clock clock = nullptr);

  TimestampSource(const TimestampSource&) = delete;
  TimestampSource& operator=(const TimestampSource&) = delete;

  // A timestamp greater than every one this source returned before, with this
  // source's client id in the low bits: max(pack(now, 0, id), last + 1 seq).
  uint64_t Next();
  // Next(), and greater than `floor` too (a write that must order after a
  // version it read, whoever issued that version's timestamp).
  uint64_t NextAfter(uint64_t floor);

  // The last value Next() returned, kNoTimestamp before the first call.
  uint64_t Last() const { return last_.load(std::memory_order_acquire); }

  uint32_t client_id() const { return client_id_; }

 private:
  uint32_t client_id_;
  Clock clock_;
  std::atomic<uint64_t> last_{kNoTimestamp};
};

}  // namespace rampart
