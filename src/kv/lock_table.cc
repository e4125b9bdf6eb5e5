#include "kv/lock_table.h"

#include <algorithm>
#include <unordered_set>

namespace rampart::kv {

std::string_view LockModeName(LockMode mode) {
  switch (mode) {
    case LockMode::kShared: return "S";
    case LockMode::kExclusive: return "X";
  }
  return "?";
}

Result<AcquireOutcome> LockTable::Acquire(uint64_t txn, std::string_view key, LockMode mode,
                                          TimePoint now) {
  TxnState& ts = txns_[txn];
  ts.active = now;
  if (ts.waiting) {
    return FailedPrecondition("txn ", txn, " asked for a ", LockModeName(mode), " lock on '", key,
                              "' while still waiting for '", *ts.waiting, "'");
  }
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    it = keys_.emplace(std::string(key), KeyState{}).first;
  }
  KeyState& k = it->second;
  const bool holds = std::find(k.holders.begin(), k.holders.end(), txn) != k.holders.end();
  if (holds) {
    if (k.exclusive || mode == LockMode::kShared) return AcquireOutcome::kGranted;
    if (k.holders.size() == 1) {  // sole S holder: upgrade in place
      k.exclusive = true;
      return AcquireOutcome::kGranted;
    }
    if (!k.queue.empty() && k.queue.front().upgrade) {
      return Aborted("txn ", txn, " cannot upgrade its lock on '", key, "' to X: txn ",
                     k.queue.front().txn, " already waits to upgrade it (deadlock)");
    }
    // Ahead of everyone: the others wait for the S holders, this txn among them.
    k.queue.push_front(Waiter{txn, LockMode::kExclusive, true});
    ts.waiting = std::string(key);
    return AcquireOutcome::kWaiting;
  }
  const bool compatible =
      k.holders.empty() || (mode == LockMode::kShared && !k.exclusive);
  if (k.queue.empty() && compatible) {
    k.holders.push_back(txn);
    k.exclusive = mode == LockMode::kExclusive;
    ts.held.push_back(it->first);
    return AcquireOutcome::kGranted;
  }
  k.queue.push_back(Waiter{txn, mode, false});
  ts.waiting = std::string(key);
  return AcquireOutcome::kWaiting;
}

void LockTable::GrantWaiters(KeyMap::iterator it, TimePoint now, std::vector<LockGrant>* out) {
  KeyState& k = it->second;
  while (!k.queue.empty()) {
    const Waiter w = k.queue.front();
    if (w.upgrade) {
      if (k.holders.size() != 1 || k.holders[0] != w.txn) break;
      k.exclusive = true;
    } else if (w.mode == LockMode::kExclusive) {
      if (!k.holders.empty()) break;
      k.holders.push_back(w.txn);
      k.exclusive = true;
    } else {
      if (k.exclusive) break;
      k.holders.push_back(w.txn);
    }
    k.queue.pop_front();
    TxnState& ts = txns_[w.txn];
    ts.waiting.reset();
    ts.active = now;
    if (!w.upgrade) ts.held.push_back(it->first);
    out->push_back(LockGrant{w.txn, it->first, w.mode});
  }
}

void LockTable::EraseIfIdle(KeyMap::iterator it) {
  if (it->second.holders.empty() && it->second.queue.empty()) keys_.erase(it);
}

void LockTable::EraseTxnIfIdle(uint64_t txn) {
  auto t = txns_.find(txn);
  if (t != txns_.end() && t->second.held.empty() && !t->second.waiting) txns_.erase(t);
}

void LockTable::DropWait(uint64_t txn, const std::string& key, TimePoint now,
                         std::vector<LockGrant>* out) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  auto& q = it->second.queue;
  q.erase(std::remove_if(q.begin(), q.end(), [&](const Waiter& w) { return w.txn == txn; }),
          q.end());
  GrantWaiters(it, now, out);
  EraseIfIdle(it);
}

std::vector<LockGrant> LockTable::ReleaseAll(uint64_t txn, TimePoint now) {
  std::vector<LockGrant> out;
  auto t = txns_.find(txn);
  if (t == txns_.end()) return out;
  TxnState st = std::move(t->second);
  txns_.erase(t);
  // First take txn out of everything, then grant, so an upgrade waiter of
  // txn's own never sees txn as a holder.
  if (st.waiting) {
    auto it = keys_.find(*st.waiting);
    if (it != keys_.end()) {
      auto& q = it->second.queue;
      q.erase(std::remove_if(q.begin(), q.end(), [&](const Waiter& w) { return w.txn == txn; }),
              q.end());
    }
  }
  for (const std::string& key : st.held) {
    auto it = keys_.find(key);
    if (it == keys_.end()) continue;
    auto& h = it->second.holders;
    h.erase(std::remove(h.begin(), h.end(), txn), h.end());
    if (h.empty()) it->second.exclusive = false;
  }
  auto grant = [&](const std::string& key) {
    auto it = keys_.find(key);
    if (it == keys_.end()) return;
    GrantWaiters(it, now, &out);
    EraseIfIdle(it);
  };
  for (const std::string& key : st.held) grant(key);
  if (st.waiting) grant(*st.waiting);
  return out;
}

std::vector<LockGrant> LockTable::AbortWaiting(uint64_t txn, TimePoint now) {
  std::vector<LockGrant> out;
  auto t = txns_.find(txn);
  if (t == txns_.end() || !t->second.waiting) return out;
  std::string key = std::move(*t->second.waiting);
  t->second.waiting.reset();
  t->second.active = now;
  DropWait(txn, key, now, &out);
  EraseTxnIfIdle(txn);
  return out;
}

LockTable::Expired LockTable::ExpireOlderThan(TimePoint cutoff, TimePoint now) {
  Expired result;
  for (const auto& [txn, st] : txns_) {
    if (st.active < cutoff) result.txns.push_back(txn);
  }
  std::sort(result.txns.begin(), result.txns.end());
  for (uint64_t txn : result.txns) {
    std::vector<LockGrant> g = ReleaseAll(txn, now);
    result.grants.insert(result.grants.end(), std::make_move_iterator(g.begin()),
                         std::make_move_iterator(g.end()));
  }
  // A stale waiter may have been granted by another stale txn's release
  // before its own turn came; it was expired after that, so no grant for it.
  std::unordered_set<uint64_t> expired(result.txns.begin(), result.txns.end());
  std::erase_if(result.grants, [&](const LockGrant& g) { return expired.count(g.txn) != 0; });
  return result;
}

std::optional<LockMode> LockTable::HeldMode(uint64_t txn, std::string_view key) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return std::nullopt;
  const auto& h = it->second.holders;
  if (std::find(h.begin(), h.end(), txn) == h.end()) return std::nullopt;
  return it->second.exclusive ? LockMode::kExclusive : LockMode::kShared;
}

bool LockTable::IsWaiting(uint64_t txn) const {
  auto t = txns_.find(txn);
  return t != txns_.end() && t->second.waiting.has_value();
}

size_t LockTable::WaiterCount(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? 0 : it->second.queue.size();
}

size_t LockTable::HolderCount(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? 0 : it->second.holders.size();
}

}  // namespace rampart::kv
