#include "common/timestamp.h"

#include <cassert>
#include <chrono>

namespace rampart {

Status ValidateTimestampClientId(uint64_t client_id) {
  if (client_id > kMaxTimestampClientId) {
    return InvalidArgument("timestamp client id ", client_id, " is out of range 0..",
                           kMaxTimestampClientId);
  }
  return Status::Ok();
}

uint64_t SystemClockUnixMs() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
  return ms < 0 ? 0 : static_cast<uint64_t>(ms);
}

TimestampSource::TimestampSource(uint32_t client_id, Clock clock)
    : client_id_(client_id), clock_(clock ? std::move(clock) : Clock(&SystemClockUnixMs)) {
  assert(client_id <= kMaxTimestampClientId);
}

Result<std::unique_ptr<TimestampSource>> TimestampSource::Create(uint64_t client_id,
                                                                 Clock clock) {
  RAMPART_RETURN_IF_ERROR(ValidateTimestampClientId(client_id));
  return std::make_unique<TimestampSource>(static_cast<uint32_t>(client_id), std::move(clock));
}

uint64_t TimestampSource::Next() { return NextAfter(kNoTimestamp); }

uint64_t TimestampSource::NextAfter(uint64_t floor) {
  // Clamp the clock into the representable range: before the epoch counts as
  // the epoch; past 2093 the millisecond field saturates (and the sequence
  // keeps the values increasing).
  uint64_t unix_ms = clock_();
  uint64_t ms = unix_ms <= kTimestampEpochUnixMs ? 0 : unix_ms - kTimestampEpochUnixMs;
  if (ms > kMaxTimestampMs) ms = kMaxTimestampMs;
  const uint64_t from_clock = PackTimestamp(ms, 0, client_id_);
  // One step of the sequence. The client id bits stay the same; a sequence
  // overflow carries into the millisecond field, which is exactly "roll into
  // the next millisecond".
  constexpr uint64_t kSeqStep = uint64_t{1} << kTimestampClientBits;

  uint64_t last = last_.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t next = last == kNoTimestamp ? from_clock + kSeqStep * (from_clock == 0)
                                         : last + kSeqStep;
    if (from_clock > next) next = from_clock;
    if (floor != kNoTimestamp && next <= floor) {
      // The smallest value with our client id above `floor`.
      next = (floor & ~uint64_t{kMaxTimestampClientId}) | client_id_;
      if (next <= floor) next += kSeqStep;
    }
    if (last_.compare_exchange_weak(last, next, std::memory_order_acq_rel,
                                    std::memory_order_relaxed)) {
      return next;
    }
  }
}

}  // namespace rampart
