// The proxy's lock table (seed 003's exclusive control at the proxy): every
// command that writes a key holds the key's lock from before it reads the key
// until its write is done, so read-modify-write commands (INCR, SET NX,
// GETSET, HSET, ZADD ...) are serialized with every other write of the key
// here and no lock traffic reaches the kv-nodes.
//
// Two modes: a read-modify-write takes its keys exclusively; a blind write
// (SET, MSET) takes them shared. Blind writes need no order among themselves
// beyond their timestamps (a write that starts after another finished draws
// a later one), only none may land between a read-modify-write's read and
// its write.
//
// A fixed array of slots; a key locks slot XXH3(key) mod size. Two keys that
// share a slot serialize each other, which is safe. Locks are taken all at
// once or not at all (TryLock never waits), so no two holders can wait for
// each other: there are no deadlocks, and a worker that fails to lock leaves
// the command for its next event-loop turn.
//
// Thread-safety: every method may be called from any thread (CAS on atomics);
// the workers of one proxy share one table. Several proxies do not share
// locks (docs/proxy.md, "Several proxies").
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace rampart::proxy {

class LockTable {
 public:
  // REQUIRES: slots is a power of two.
  explicit LockTable(size_t slots = size_t{1} << 16);

  // The distinct slots of `keys`, ascending: what TryLock takes.
  std::vector<uint32_t> SlotsOf(std::span<const std::string_view> keys) const;

  enum class Mode { kShared, kExclusive };

  // Takes every slot of `slots` (distinct) in `mode`, or none. Returns
  // whether it did. A slot is held exclusively by one, or shared by up to
  // 254 holders.
  bool TryLock(std::span<const uint32_t> slots, Mode mode = Mode::kExclusive);
  // REQUIRES: the caller holds every slot of `slots` in `mode` (from TryLock).
  void Unlock(std::span<const uint32_t> slots, Mode mode = Mode::kExclusive);

  // Slots held right now, in either mode (for INFO and tests).
  size_t HeldForTesting() const;

  // Write epochs: a counter per slot that a writer bumps once its write is
  // done (before it unlocks), so that a parked blocking command (BLPOP ...)
  // sees that one of its keys may have changed.
  void BumpEpochs(std::span<const uint32_t> slots);
  uint32_t Epoch(uint32_t slot) const { return epochs_[slot].load(std::memory_order_acquire); }

 private:
  std::unique_ptr<std::atomic<uint8_t>[]> slots_;
  std::unique_ptr<std::atomic<uint32_t>[]> epochs_;
  size_t mask_;
};

}  // namespace rampart::proxy
