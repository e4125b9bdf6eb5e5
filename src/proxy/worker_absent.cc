// Writes of keys the worker has never seen: a read-modify-write (HSET, SADD,
// LPUSH, INCR, ... of one key) whose keys GET*'s address cache does not know
// is most likely creating them (only on partitions GET* reads: elsewhere the
// client keeps no addresses, and nothing is guessed). Instead of reading
// first (for an unknown key that read is GET+, a message round trip, not a
// one-sided read), the worker runs
// the command on "absent" and sends its write set in the turn's first round
// as a commit-now PREPARE with IF_ABSENT (docs/kv_protocol.md): the kv-node
// stores it only if the keys have no live version. If one has, nothing is
// written, and the job reads and runs again like any other — one round more
// than reading first would have cost, so the worker stops guessing while
// its guesses keep failing (AbsentGuesses).
//
// Guarded as every read-modify-write is: the job holds its keys' locks, so no
// command of this proxy runs between the guess and the write, and the node's
// check covers everything else (another worker or proxy, expiry: an expired
// value is still a live version to the node, so the guess fails and the read
// finds the key expired). A job is only guessed for when its whole write set
// is one partition's (one replica, every key on one partition), the command
// wrote every key it names (a command that reads an absent key and writes
// nothing — HDEL of a missing key — must see the key really is absent), and
// it needed no key beyond its own.
#include <algorithm>

#include "proxy/worker_job.h"

namespace rampart::proxy {

bool RefusedAsUnknownFlag(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument &&
         status.message().find("unknown flags") != std::string_view::npos;
}

bool Worker::AbsentGuesses::Allowed() {
  if (off) return false;
  if (score > 0) return true;
  return ++skipped % kProbeEvery == 0;
}

void Worker::AbsentGuesses::Held() { score = std::min(score + 1, kMaxScore); }

void Worker::AbsentGuesses::Failed() { score = std::max(score - 2, 0); }

bool Worker::MayGuessAbsent(const Job& job) const {
  if (job.kind != Job::Kind::kWrite || !job.needs_read || job.multi || job.watch ||
      !job.watch_check.empty() || !job.followers.empty() || job.commands.size() != 1 ||
      IsBlocking(*job.commands[0].spec) || shared_.ring.replicas() != 1 || job.keys.empty()) {
    return false;
  }
  return std::none_of(job.keys.begin(), job.keys.end(), [&](std::string_view k) {
    return client_->MayExist(k, shared_.ring.ReplicasOf(k).partition[0]);
  });
}

bool Worker::GuessAbsent(Job& job, uint64_t now, txn::BatchTxn& txn) {
  if (!absent_.Allowed()) return false;
  DataView view = NewView(now, job.seed);
  for (std::string_view k : job.keys) view.Seed(k, std::nullopt);
  ApplyTo(job, view);
  const auto& entries = view.entries();
  const bool wrote_every_key = std::all_of(job.keys.begin(), job.keys.end(), [&](std::string_view k) {
    auto it = entries.find(k);
    return it != entries.end() && it->second.dirty && it->second.stored.has_value();
  });
  if (!wrote_every_key || !view.missing().empty() || view.blocked() || !job.undeclared.empty()) {
    job.reply.clear();
    return false;
  }
  job.view.emplace(std::move(view));
  if (!PlaceWrites(job, txn).empty() ||
      std::any_of(txn.writes.begin(), txn.writes.end(), [&](const txn::PlacedWrite& w) {
        return w.partition != txn.writes.front().partition;
      })) {
    // Too large, or pages on other partitions: the ordinary path decides.
    job.view.reset();
    job.reply.clear();
    txn.writes.clear();
    return false;
  }
  txn.if_absent = true;
  job.guessed_absent = true;
  return true;
}

bool Worker::GuessedWriteDone(Job& job, const Status& status) {
  // A kv-node older than IF_ABSENT refuses the flag: stop guessing.
  const bool unknown_flag = RefusedAsUnknownFlag(status);
  if (unknown_flag) absent_.off = true;
  if (status.code() == StatusCode::kAlreadyExists || unknown_flag) {
    absent_.Failed();
    ++shared_.absent_refused;
    job.guessed_absent = false;
    job.view.reset();
    job.reply.clear();
    return false;
  }
  if (status.ok()) {
    absent_.Held();
    ++shared_.absent_writes;
    OfferWrites(job);
  } else {
    FailJob(job, status);
  }
  return true;
}

}  // namespace rampart::proxy
