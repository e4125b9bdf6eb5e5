// Per-partition lock table for the Strict 2PL baseline (docs/design.md §5).
//
// Shared (S) / exclusive (X) locks per key, owned by a transaction id. Clients
// take locks in global key order and hold them to commit/abort, so lock-order
// deadlocks cannot occur and the table does not look for them. The one
// deadlock key order does not prevent, two S holders both upgrading to X, is
// refused: the second upgrader gets kAborted and must abort.
//
// Granting is FIFO per key: a request that cannot be granted at once joins the
// key's queue, and a new S request queues behind a waiting X even when the
// current holders are all S, so writers are never starved by a stream of
// readers. When locks are released the table grants from the head of the
// queue for as long as the head is compatible (one X, or a run of S), and
// returns the grants so the executor can reply to those waiters.
//
// A transaction waits on at most one key at a time (it asks for the next key
// only once the previous one was granted), which the table enforces.
//
// Holder death: every transaction records when it was last active (its last
// Acquire, or the moment one of its waits was granted). ExpireOlderThan()
// releases everything held or awaited by transactions inactive since before a
// cutoff, so a lock held by a client that died is broken after a timeout.
//
// Time is passed in by the caller (`now`), never read here, so tests are
// deterministic.
//
// Thread-safety: none. A LockTable belongs to one partition and is used only
// by that partition's writer thread (docs/design.md §5, shared-nothing); it takes no
// locks itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/string_map.h"

namespace rampart::kv {

enum class LockMode : uint8_t { kShared = 1, kExclusive = 2 };
std::string_view LockModeName(LockMode mode);

enum class AcquireOutcome : uint8_t {
  kGranted,  // the transaction holds the lock now
  kWaiting,  // queued; a later ReleaseAll/AbortWaiting/ExpireOlderThan grants it
};

// A waiting request that has just been granted.
struct LockGrant {
  uint64_t txn = 0;
  std::string key;
  LockMode mode = LockMode::kShared;
  friend bool operator==(const LockGrant&, const LockGrant&) = default;
};

class LockTable {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  LockTable() = default;
  LockTable(const LockTable&) = delete;
  LockTable& operator=(const LockTable&) = delete;

  // Asks for `key` in `mode` on behalf of `txn`.
  //  - Already held in this mode or stronger: kGranted (idempotent).
  //  - S: granted when no X is held and nobody waits; else queued.
  //  - X: granted when nothing is held and nobody waits; else queued.
  //  - S->X upgrade: granted at once when txn is the only holder; otherwise
  //    it waits at the head of the queue for the other S holders to leave.
  // Errors (nothing changes, except the activity time):
  //  - kFailedPrecondition: txn is already waiting (on this or another key).
  //  - kAborted: another holder of this key already waits to upgrade; two
  //    upgraders would wait for each other forever. The caller should abort
  //    txn (ReleaseAll).
  Result<AcquireOutcome> Acquire(uint64_t txn, std::string_view key, LockMode mode,
                                 TimePoint now);

  // Commit/abort: releases every lock txn holds and drops its wait, if any.
  // Returns the waiters that got their lock as a result, per key in FIFO
  // order. A txn the table does not know is a no-op.
  std::vector<LockGrant> ReleaseAll(uint64_t txn, TimePoint now);

  // Drops txn's pending wait (e.g. the client gave up) but keeps what it
  // holds. Returns the grants this made possible (a queued X at the head that
  // goes away can let the S requests behind it in).
  std::vector<LockGrant> AbortWaiting(uint64_t txn, TimePoint now);

  struct Expired {
    // Transactions whose locks and waits were dropped. Those that were
    // waiting should get a timed-out reply.
    std::vector<uint64_t> txns;
    std::vector<LockGrant> grants;  // waiters granted as a result
  };
  // Releases everything of every transaction last active before `cutoff`
  // (typically now - lock timeout).
  Expired ExpireOlderThan(TimePoint cutoff, TimePoint now);

  // Introspection (tests, stats).
  std::optional<LockMode> HeldMode(uint64_t txn, std::string_view key) const;
  bool IsWaiting(uint64_t txn) const;
  size_t WaiterCount(std::string_view key) const;
  size_t HolderCount(std::string_view key) const;
  size_t key_count() const { return keys_.size(); }  // keys held or awaited
  size_t txn_count() const { return txns_.size(); }  // txns holding or waiting

 private:
  struct Waiter {
    uint64_t txn;
    LockMode mode;
    bool upgrade;  // txn already holds S and waits for X
  };
  struct KeyState {
    std::vector<uint64_t> holders;  // all S, or exactly one X
    bool exclusive = false;
    std::deque<Waiter> queue;
  };
  struct TxnState {
    std::vector<std::string> held;        // keys, in acquisition order
    std::optional<std::string> waiting;   // key it waits on
    TimePoint active{};
  };
  using KeyMap = StringMap<KeyState>;

  // Grants from the head of key's queue while compatible; appends to *out.
  void GrantWaiters(KeyMap::iterator it, TimePoint now, std::vector<LockGrant>* out);
  // Removes txn from the queue of `key`, then grants what became possible.
  void DropWait(uint64_t txn, const std::string& key, TimePoint now,
                std::vector<LockGrant>* out);
  void EraseIfIdle(KeyMap::iterator it);
  void EraseTxnIfIdle(uint64_t txn);

  KeyMap keys_;
  std::unordered_map<uint64_t, TxnState> txns_;
};

}  // namespace rampart::kv
