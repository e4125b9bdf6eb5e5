// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP): a command that finds nothing to
// pop parks its session — the command goes back to the front of the queue
// and the session takes nothing until a write to one of its keys (seen as a
// change of the keys' lock-table write epochs, LockTable::BumpEpochs) or its
// timeout. A woken command simply runs again, when its turn has come among
// the clients blocked on the same keys (first come, first served): it pops
// if something is there now, or parks again with its first deadline. Writers on any worker poke
// every worker's wake_fd when sessions are parked, so a parked session of an
// idle worker wakes without polling.
//
// A write through another proxy moves no epoch here. So with several proxies
// a parked command that is the oldest waiter on one of its lock slots runs
// again every kRemoteWritePollMs to look, and one behind older waiters on all
// of its slots every kRemoteWritePollBehindMs (it mostly wakes on their pops,
// writes of this proxy; the slower look is for a key of its own that shares
// a slot, or a key only it waits on among several): another proxy's push
// reaches a waiter within that time, and a key costs its proxy about one read
// per 100 ms for its first waiter and one a second for each other.
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "proxy/worker_job.h"

namespace rampart::proxy {
namespace {

// The timeout of a blocking command (seconds, validated by the command;
// where it is: BlockingOf) as a deadline; 0: none.
uint64_t DeadlineOf(const Command& c, uint64_t now_ms) {
  const bool first = BlockingOf(*c.spec)->timeout_first;
  const double seconds = std::strtod((first ? c.args[1] : c.args.back()).c_str(), nullptr);
  if (!(seconds > 0)) return 0;
  return now_ms + static_cast<uint64_t>(std::ceil(seconds * 1000));
}

// What a blocking command answers when its time is up (or an UNBLOCK
// TIMEOUT ends it): a null array, whatever the command.
std::string TimeoutReply(int protocol) {
  std::string out;
  resp::Writer w(&out);
  w.SetProtocol(protocol);
  w.NullArray();
  return out;
}

// Whether a write moved any of `slots` past the epoch `epochs` holds for it.
bool EpochsMoved(const LockTable& locks, const std::vector<uint32_t>& slots,
                 const std::vector<uint32_t>& epochs) {
  for (size_t i = 0; i < slots.size(); ++i) {
    if (locks.Epoch(slots[i]) != epochs[i]) return true;
  }
  return false;
}

}  // namespace

void Poke(int fd) {
  const uint64_t one = 1;
  (void)!::write(fd, &one, sizeof(one));
}

void Worker::Park(Job& job) {
  Session& s = *job.session;
  Command& c = job.commands[0];
  if (s.unblock != Unblock::kNone) {  // an UNBLOCK came while it ran again
    s.queue.push_front(std::move(c));
    EndBlocked(s, s.unblock, /*unblocked=*/true);
    return;
  }
  s.park_slots = shared_.locks.SlotsOf(KeysOf(*c.spec, c.Views()));
  s.park_epochs.clear();
  for (uint32_t slot : s.park_slots) s.park_epochs.push_back(shared_.locks.Epoch(slot));
  if (!s.park_started) {
    s.park_started = true;
    s.park_deadline_ms = DeadlineOf(c, NowMs());
  }
  s.queue.push_front(std::move(c));
  s.parked = true;
  s.park_poll_ms = NowMs() + kRemoteWritePollMs;
  s.park_poll_behind = false;
  ++parked_here_;
  ++shared_.parked;
  QueueWaiter(s);
}

void Worker::QueueWaiter(Session& s) {
  bool others = false;
  {
    std::lock_guard lock(shared_.waiters_mutex);
    const bool first_park = s.park_seq == 0;
    if (first_park) s.park_seq = shared_.next_waiter_seq.fetch_add(1);
    RegisterBlockedLocked(s, Unblock::kNone);
    for (size_t i = 0; i < s.park_slots.size(); ++i) {
      std::vector<SharedState::Waiter>& line = shared_.waiters[s.park_slots[i]];
      if (first_park) {
        line.push_back({s.park_seq, s.park_epochs[i]});
        continue;
      }
      bool saw_more = false;  // it ran on a write it had not seen: younger waiters may be next
      for (SharedState::Waiter& w : line) {
        if (w.seq != s.park_seq) continue;
        saw_more = w.ran_epoch != s.park_epochs[i];
        w.ran_epoch = s.park_epochs[i];
      }
      others = others || (saw_more && line.size() > 1);
    }
  }
  // Parked again after a run: a younger waiter held back behind it (on any
  // worker) may run now.
  if (others) WakeParked();
}

void Worker::DequeueWaiter(Session& s) {
  if (s.park_seq == 0) return;
  bool others = false;
  {
    std::lock_guard lock(shared_.waiters_mutex);
    shared_.blocked.erase(s.id);
    for (uint32_t slot : s.park_slots) {
      auto it = shared_.waiters.find(slot);
      if (it == shared_.waiters.end()) continue;
      std::erase_if(it->second, [&](const SharedState::Waiter& w) { return w.seq == s.park_seq; });
      if (it->second.empty()) {
        shared_.waiters.erase(it);
      } else {
        others = true;
      }
    }
  }
  s.park_seq = 0;
  if (others) WakeParked();  // a younger waiter may be next now
}

bool Worker::WriteReached(const Session& s) {
  if (!EpochsMoved(shared_.locks, s.park_slots, s.park_epochs)) return false;
  std::lock_guard lock(shared_.waiters_mutex);
  return FirstInLineLocked(s.park_seq, s.park_slots);
}

bool Worker::StillFirstInLine(const Session& s) {
  std::lock_guard lock(shared_.waiters_mutex);
  return FirstInLineLocked(s.park_seq, s.park_slots);
}

void Worker::ParkBehind(Session& s) {
  s.parked = true;
  // With several proxies a poll may have woken it: the next is a full
  // interval away, or it would be woken again at once while still behind.
  s.park_poll_ms = NowMs() + kRemoteWritePollMs;
  s.park_poll_behind = false;
  ++parked_here_;
  ++shared_.parked;
}

bool Worker::FirstInLineLocked(uint64_t seq, const std::vector<uint32_t>& slots) const {
  for (uint32_t slot : slots) {
    auto it = shared_.waiters.find(slot);
    if (it == shared_.waiters.end()) continue;
    const uint32_t now = shared_.locks.Epoch(slot);
    for (const SharedState::Waiter& w : it->second) {
      if (w.seq == seq) break;
      if (w.ran_epoch != now) return false;  // an older waiter has not seen this write yet
    }
  }
  return true;
}

bool Worker::PollsRemoteWrites(Session& s, uint64_t now) {
  if (!shared_.several_proxies() || now < s.park_poll_ms) return false;
  if (s.park_poll_behind) return true;  // its slower look is due
  std::lock_guard lock(shared_.waiters_mutex);
  const bool first = std::any_of(s.park_slots.begin(), s.park_slots.end(), [&](uint32_t slot) {
    auto it = shared_.waiters.find(slot);
    return it == shared_.waiters.end() || it->second.empty() || it->second.front().seq == s.park_seq;
  });
  // Behind an older waiter on every slot: look again at the slower pace.
  if (!first) {
    s.park_poll_ms += kRemoteWritePollBehindMs - kRemoteWritePollMs;
    s.park_poll_behind = true;
  }
  return first;
}

bool Worker::BeingServedLocked(const SharedState::Blocked& b) const {
  return EpochsMoved(shared_.locks, b.slots, b.epochs) && FirstInLineLocked(b.seq, b.slots);
}

void Worker::RegisterBlockedLocked(const Session& s, Unblock unblock) {
  shared_.blocked[s.id] = {index_, unblock, s.park_seq, s.park_slots, s.park_epochs};
}

void Worker::Unpark(Session& s) {
  s.parked = false;
  --parked_here_;
  --shared_.parked;
}

int Worker::CheckParked() {
  const uint64_t now = NowMs();
  uint64_t next = 0;
  for (auto& [fd, sp] : sessions_) {
    Session& s = *sp;
    if (!s.parked) continue;
    if (WriteReached(s) || PollsRemoteWrites(s, now)) {
      Unpark(s);  // runs again in the next turn
      continue;
    }
    if (s.park_deadline_ms != 0 && now >= s.park_deadline_ms) {
      EndBlocked(s, Unblock::kTimeout, /*unblocked=*/false);
      continue;
    }
    auto sooner = [&](uint64_t at) {
      if (at != 0 && (next == 0 || at < next)) next = at;
    };
    sooner(s.park_deadline_ms);
    // (A poll time passed: it is behind an older waiter, whose pop or
    // leaving wakes it.)
    if (shared_.several_proxies() && s.park_poll_ms > now) sooner(s.park_poll_ms);
  }
  if (next == 0) return -1;
  return static_cast<int>(std::min<uint64_t>(next - now, 1000));
}

void Worker::UnblockClient(const Command& c, resp::Writer& out) {
  Unblock how = Unblock::kTimeout;
  if (c.args.size() == 4) {
    const std::string reason = Lower(c.args[3]);
    if (reason == "error") {
      how = Unblock::kError;
    } else if (reason != "timeout") {
      return out.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
    }
  }
  auto id = ParseInt64(c.args[2]);
  if (!id.ok()) return out.Error("ERR value is not an integer or out of range");
  std::optional<uint32_t> owner;
  {
    std::lock_guard lock(shared_.waiters_mutex);
    auto it = shared_.blocked.find(static_cast<uint64_t>(*id));
    // A client a write has reached is being served (Redis served it within
    // the write): not blocked any more.
    if (it != shared_.blocked.end() && it->second.unblock == Unblock::kNone &&
        !BeingServedLocked(it->second)) {
      it->second.unblock = how;
      owner = it->second.worker;
    }
  }
  if (!owner.has_value()) return out.Integer(0);  // not blocked, or running its command now
  Wake(shared_.unblock_pending.get(), *owner);
  out.Integer(1);
}

void Worker::ApplyUnblocks() {
  if (!shared_.unblock_pending[index_].exchange(false)) return;
  std::unordered_map<uint64_t, Unblock> marked;
  {
    std::lock_guard lock(shared_.waiters_mutex);
    for (const auto& [id, b] : shared_.blocked) {
      if (b.worker == index_ && b.unblock != Unblock::kNone) marked.emplace(id, b.unblock);
    }
  }
  for (auto& [fd, sp] : sessions_) {
    Session& s = *sp;
    auto it = marked.find(s.id);
    if (it == marked.end() || !s.park_started || s.queue.empty()) continue;
    if (!s.parked || WriteReached(s)) {
      // A write woke it before the UNBLOCK came: Redis would have served it
      // within that write. It runs; the mark holds if it parks again.
      ClaimForRun(s);
      continue;
    }
    EndBlocked(s, it->second, /*unblocked=*/true);
  }
}

void Worker::ClaimForRun(Session& s) {
  std::lock_guard lock(shared_.waiters_mutex);
  auto it = shared_.blocked.find(s.id);
  if (it == shared_.blocked.end()) return;
  if (it->second.unblock != Unblock::kNone) s.unblock = it->second.unblock;
  shared_.blocked.erase(it);  // running: an UNBLOCK now finds it not blocked
}

void Worker::StillBlocked(Session& s) {
  const Unblock mark = std::exchange(s.unblock, Unblock::kNone);
  std::lock_guard lock(shared_.waiters_mutex);
  RegisterBlockedLocked(s, mark);
  if (mark != Unblock::kNone) shared_.unblock_pending[index_].store(true);
}

void Worker::EndBlocked(Session& s, Unblock how, bool unblocked) {
  s.unblock = Unblock::kNone;
  if (s.parked) Unpark(s);
  const std::string reply =
      how == Unblock::kError ? ErrorReply("UNBLOCKED client unblocked via CLIENT UNBLOCK") : TimeoutReply(s.protocol);
  // INFO commandstats: the call counted when it first parked; CLIENT UNBLOCK
  // makes it a failed one, as Redis counts it (either way it asks for).
  if (unblocked) CountUnblocked(s.queue.front(), reply);
  if (!s.queue.front().silent) s.out += reply;  // CLIENT REPLY
  s.queue.pop_front();
  s.park_started = false;
  DequeueWaiter(s);
}

void Worker::WakeParked() {
  for (int fd : shared_.wake_fds) Poke(fd);
}

void Worker::WakeLockWaiters() {
  for (uint32_t w = 0; w < shared_.worker_count; ++w) {
    if (w == index_ || !shared_.waiting_for_locks[w].load(std::memory_order_relaxed)) continue;
    // The exchange makes one poke per wait, however many workers unlock.
    if (shared_.waiting_for_locks[w].exchange(false)) Poke(shared_.wake_fds[w]);
  }
}

}  // namespace rampart::proxy
