// Running a turn's jobs: their transactions together (one batch per round
// trip), read rounds until every job has the keys it needs, the writes of
// read-modify-writes, then the replies. Which jobs a turn takes, and in
// what order, is worker_take.cc's.
#include <algorithm>

#include "kv/memory_budget.h"
#include "proxy/worker_job.h"

namespace rampart::proxy {

void Worker::Turn() {
  const auto started = std::chrono::steady_clock::now();
  TakeJobs(turn_jobs_);
  if (!turn_jobs_.empty()) AnswerJobs(turn_jobs_, started);
  turn_jobs_.clear();
}

void Worker::AnswerJobs(std::vector<Job>& jobs, std::chrono::steady_clock::time_point started) {
  RunJobs(jobs);
  PublishReadPath();
  CountTurn(jobs, started);
  // The replies in the order their commands were taken, so that a follower's
  // reply lands at its own place in its session's replies, not at its
  // leader's (a session's read taken before its joined read-modify-write is
  // answered first).
  // `jobs` is in that order already: only followers need the sort.
  std::vector<Job*> answers;
  answers.reserve(jobs.size());
  bool followers = false;
  for (Job& j : jobs) {
    if (j.kind == Job::Kind::kParked || j.kind == Job::Kind::kRunAgain) continue;  // back in its session
    if (!j.session->parked) {
      // A blocking command of the session that is done. Not when a later
      // command of the same session (a BLPOP behind a pipelined PING) parked
      // in this turn: it keeps its place in line, its deadline and `woken`.
      j.session->park_started = false;
      j.session->unblock = Unblock::kNone;  // served: an UNBLOCK during the run came too late
      DequeueWaiter(*j.session);
    }
    if (!j.replied) answers.push_back(&j);  // else ReplyToReaders sent it
    for (Job& f : j.followers) answers.push_back(&f);
    followers = followers || !j.followers.empty();
  }
  if (followers) {
    std::sort(answers.begin(), answers.end(), [](const Job* a, const Job* b) { return a->taken < b->taken; });
  }
  for (const Job* a : answers) {
    if (!a->silent) a->session->out += a->reply;
  }
}

// INFO commandstats: every answer of the turn (followers', and those
// ReplyToReaders sent, too), each command with an equal share of the turn's
// time.
void Worker::CountTurn(const std::vector<Job>& jobs, std::chrono::steady_clock::time_point started) {
  const auto nsec = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
  size_t answers = 0;
  for (const Job& j : jobs) answers += (j.kind == Job::Kind::kRunAgain ? 0 : 1) + j.followers.size();
  if (answers == 0) return;
  const uint64_t share = static_cast<uint64_t>(nsec.count()) / answers;
  for (const Job& j : jobs) {
    if (j.kind != Job::Kind::kRunAgain) CountAnswered(j, share);
    for (const Job& f : j.followers) CountAnswered(f, share);
  }
}

// Sends the replies of the sessions whose every job of this turn is done (a
// read whose rounds are over, or a reply known from the start) before the
// turn's write round: their clients need not wait for another session's
// read-modify-write. A session with any other job keeps all its replies for
// the end of the turn, so its replies stay in order and go out in one write.
void Worker::ReplyToReaders(std::vector<Job>& jobs) {
  std::vector<std::pair<Session*, bool>> sessions;  // a turn's few sessions: a linear search
  auto note = [&](Session* session, bool done) {
    auto it = std::find_if(sessions.begin(), sessions.end(),
                           [&](const auto& e) { return e.first == session; });
    if (it == sessions.end()) {
      sessions.emplace_back(session, done && !session->internal);
    } else {
      it->second = it->second && done;
    }
  };
  for (const Job& j : jobs) {
    note(j.session, j.kind == Job::Kind::kRead || j.kind == Job::Kind::kDone);
    // A follower is its session's command too, not answered before the end.
    for (const Job& f : j.followers) note(f.session, false);
  }
  for (Job& j : jobs) {
    auto it = std::find_if(sessions.begin(), sessions.end(),
                           [&](const auto& e) { return e.first == j.session; });
    if (!it->second) continue;
    if (!j.silent) j.session->out += j.reply;
    j.replied = true;
  }
  for (const auto& [session, ready] : sessions) {
    if (ready && session->HasOutput()) WriteTo(*session);
  }
}

void Worker::PublishReadPath() {
  const txn::Client::Stats st = client_->stats();
  SharedState::ReadPath& mine = shared_.read_paths[index_];
  mine.slot_reads.store(st.slot_reads, std::memory_order_relaxed);
  mine.slot_fallbacks.store(st.slot_rejects + st.cache_misses, std::memory_order_relaxed);
  mine.repair_rounds.store(st.repair_rounds, std::memory_order_relaxed);
}

std::string Worker::BackendError(const Status& status) {
  ++shared_.backend_errors;
  if (status.code() == StatusCode::kResourceExhausted &&
      status.message().find(kv::kOutOfMemory) != std::string_view::npos) {
    return "OOM command not allowed when used memory > 'maxmemory'.";
  }
  return StrCat("ERR rampart: ", status.ToString());
}

void Worker::AnswerGroup(Job& job, std::string reply) {
  for (Job& f : job.followers) {
    ForgetRun(f);
    f.reply = reply;
  }
  ForgetRun(job);
  job.reply = std::move(reply);
}

void Worker::ForgetRun(Job& job) {
  job.reply.clear();
  job.commands_run = 0;
  job.failed_at.clear();
  job.script_calls.clear();
}

void Worker::FailJob(Job& job, const Status& status) {
  job.failed = true;
  AnswerGroup(job, ErrorReply(BackendError(status)));
  shared_.backend_errors += job.followers.size();  // INFO counts commands
}

uint32_t Worker::ReadPartition(std::string_view key, uint64_t now_ms) const {
  const Replicas replicas = shared_.ring.ReplicasOf(key);
  for (uint32_t p : replicas) {
    if (down_until_ms_[p] <= now_ms) return p;
  }
  return replicas.partition[0];
}

void Worker::PlaceReads(const Job& job, txn::BatchTxn& txn) {
  const uint64_t now = NowMs();
  txn.reads.clear();
  for (std::string_view k : job.keys) txn.reads.push_back({k, ReadPartition(k, now)});
  // Followers mostly name their leader's keys: each key is read once.
  for (const Job& f : job.followers) {
    for (std::string_view k : f.keys) {
      auto same = [k](const txn::PlacedRead& r) { return r.key == k; };
      if (std::none_of(txn.reads.begin(), txn.reads.end(), same)) {
        txn.reads.push_back({k, ReadPartition(k, now)});
      }
    }
  }
  for (const std::string& k : job.extra_keys) {
    // A long string's chunks: their sizes let RunBatch keep each reply within one message.
    auto bytes = job.extra_bytes.find(k);
    txn.reads.push_back({k, ReadPartition(k, now), bytes == job.extra_bytes.end() ? 0 : bytes->second});
  }
}

std::string Worker::PlaceWrites(Job& job, txn::BatchTxn& txn) {
  const KvConfig& kv = shared_.config.kv;
  struct Load {
    uint64_t bytes = 0;  // keys and values
    uint64_t items = 0;
  };
  std::map<uint32_t, Load> on_partition;
  uint64_t siblings = 4;  // every item carries the write set's keys (a KeyList)
  for (const auto& [key, entry] : job.view->entries()) {
    if (!entry.dirty) continue;
    if (entry.stored.has_value() && entry.stored->size() > kv.max_value_bytes) {
      return StrCat("ERR rampart: the value of '", key.substr(0, 64), "' would be ",
                    entry.stored->size(), " bytes stored; kv.max_value_bytes is ",
                    kv.max_value_bytes);
    }
    for (uint32_t p : shared_.ring.ReplicasOf(key)) {
      txn.writes.push_back({key, entry.stored.has_value() ? std::string_view(*entry.stored) : "",
                            !entry.stored.has_value(), p});
      Load& load = on_partition[p];
      load.bytes += key.size() + (entry.stored.has_value() ? entry.stored->size() : 0);
      ++load.items;
      siblings += 4 + key.size();
    }
  }
  // A write set travels to its partition in one message (a long string's
  // chunks with its header): kept a MiB under the bound, for the framing.
  const uint64_t max_message = shared_.config.transport.max_message_size;
  const uint64_t max_write_bytes = max_message - std::min<uint64_t>(max_message / 2, kMiB);
  for (const auto& [partition, load] : on_partition) {
    if (load.bytes + load.items * siblings > max_write_bytes) {
      return StrCat("ERR rampart: this command writes more than ", max_write_bytes,
                    " bytes to one kv partition, what one message carries (transport.max_message_size ",
                    max_message, " less 1 MiB)");
    }
  }
  return "";
}

void Worker::OfferWrites(const Job& job) {
  for (const auto& [key, entry] : job.view->entries()) {
    if (entry.dirty && !job.view->IsChunk(key)) page_cache_.Offer(key, entry.stored);
  }
}

DataView Worker::NewView(uint64_t now, uint64_t seed) const {
  DataView view(now, seed);
  view.set_max_key_bytes(MaxUserKeyBytes());
  view.set_max_value_bytes(shared_.config.kv.max_value_bytes);  // longer strings go in chunks
  if (const uint32_t flags = shared_.notify_flags.load(std::memory_order_relaxed); notify::Publishing(flags)) {
    view.set_notify_flags(flags);
  }
  return view;
}

// Runs the commands of `job` (one of a group) on `view`, into job.reply.
void Worker::ApplyTo(Job& job, DataView& view) {
  ForgetRun(job);  // a run before this one (a prediction, an earlier read round)
  job.undeclared.clear();
  resp::Writer out(&job.reply);
  out.SetProtocol(job.session->protocol);
  if (job.multi) out.Array(job.commands.size());
  for (size_t i = 0; i < job.commands.size(); ++i) {
    const Command& c = job.commands[i];
    const size_t at = job.reply.size();
    ApplyOne(job, c, view, out);
    if (job.reply.size() > at && job.reply[at] == '-') job.failed_at.emplace_back(i, at);
  }
  job.commands_run = job.commands.size();
}

void Worker::ApplyOne(Job& job, const Command& c, DataView& view, resp::Writer& out) {
  if (ScriptRunner::IsEval(c.spec->name)) {
    // Inside MULTI a key not in KEYS is an error at its call (a block is not
    // taken again).
    scripts_.Eval(c.Views(), view, out, c.script_keys, /*may_run_again=*/!job.multi);
    if (!job.multi && view.missing().empty()) job.undeclared = scripts_.undeclared();
    job.script_calls.insert(job.script_calls.end(), scripts_.calls().begin(), scripts_.calls().end());
    return;
  }
  if (c.spec->apply == nullptr) {  // CONFIG, TIME, CLIENT … queued in MULTI
    ConnectionCommand(*job.session, c, job.reply);
    return;
  }
  const std::vector<std::string_view> args = c.Views();
  ApplyCommand(*c.spec, args, view, out);
}

void Worker::ApplyCommands(Job& job) {
  job.view->set_may_block(!job.multi && job.followers.empty());
  job.view->set_woken(job.view->may_block() && job.session->park_started);
  ApplyTo(job, *job.view);
  for (Job& f : job.followers) ApplyTo(f, *job.view);
  if (job.view->blocked()) job.kind = Job::Kind::kParked;
}

void Worker::RunWithFailover(std::vector<txn::BatchTxn>& batch, std::vector<Job*>& owners,
                             bool reads) {
  shared_.backend_transactions += batch.size();
  client_->RunBatch(batch, shared_.config.proxy.aggregate);
  if (!reads) return;
  // A read that failed on a partition reads from the key's next replica (the
  // partition is skipped for a second); one that lost a race with GC is read
  // again.
  const uint32_t max_attempts = std::max<uint32_t>(shared_.ring.replicas(), 2);
  while (true) {
    std::vector<size_t> again;
    const uint64_t now = NowMs();
    for (size_t i = 0; i < batch.size(); ++i) {
      const Status& st = batch[i].status;
      if (st.ok() || batch[i].reads.empty()) continue;
      if (batch[i].failed_partition >= 0) down_until_ms_[batch[i].failed_partition] = now + 1000;
      const bool retry = batch[i].failed_partition >= 0 || st.code() == StatusCode::kAborted;
      if (retry && ++owners[i]->attempts < static_cast<int>(max_attempts)) again.push_back(i);
    }
    if (again.empty()) return;
    std::vector<txn::BatchTxn> retry(again.size());
    for (size_t k = 0; k < again.size(); ++k) PlaceReads(*owners[again[k]], retry[k]);
    shared_.failovers += again.size();
    client_->RunBatch(retry, shared_.config.proxy.aggregate);
    for (size_t k = 0; k < again.size(); ++k) batch[again[k]] = std::move(retry[k]);
  }
}

void Worker::RunJobs(std::vector<Job>& jobs) {
  ++shared_.turns;
  const uint64_t now = NowMs();
  RoundTrip first = PlaceFirstRound(jobs, now);
  std::vector<Job*> late_writers = std::move(first.late_writers);
  RunWithFailover(first.batch, first.owners, /*reads=*/true);
  std::vector<Job*> writers = ReadUntilComplete(std::move(first), now);
  writers.insert(writers.end(), late_writers.begin(), late_writers.end());
  // The writes of read-modify-writes: a round trip the readers need not wait for.
  if (!writers.empty()) ReplyToReaders(jobs);
  WriteReadModifyWrites(std::move(writers), now);
  FinishJobs(jobs);
}

// Round trip 1: the reads of read jobs and read-modify-writes, and the
// writes of blind writes (computed now), of writes guessed absent and of
// read-modify-writes whose reads were one-sided. A write of a session that
// has a read in this round waits for the write round instead (late_writers):
// the node does not order a read and a write that travel in different
// messages, and the session's read came first (a session's reads of a turn
// all come before its writes, worker_take.cc) — also when the write is a
// follower of another session's job. So the reads are placed first, then
// the writes.
Worker::RoundTrip Worker::PlaceFirstRound(std::vector<Job>& jobs, uint64_t now) {
  RoundTrip first;
  Sessions reading;  // sessions with a read in this round
  std::vector<FirstRead> read(jobs.size(), FirstRead::kNone);
  // Which jobs may guess, before any read: a read that refuses a stale slot
  // forgets its address, which would make the key look new to a later job.
  std::vector<bool> may_guess(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) may_guess[i] = MayGuessAbsent(jobs[i]);
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& j = jobs[i];
    j.seed = next_seed_++;
    const bool needs_read = j.kind == Job::Kind::kRead || (j.kind == Job::Kind::kWrite && j.needs_read);
    if (needs_read && !may_guess[i]) read[i] = ReadFirst(j, now, first, reading);
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& j = jobs[i];
    if (j.kind != Job::Kind::kWrite) continue;
    const bool after_read = SessionReads(j, reading);
    if (!j.needs_read) {
      j.view.emplace(NewView(now, j.seed));
      ApplyCommands(j);
    } else if (read[i] == FirstRead::kNone) {  // a candidate for a guess
      if (txn::BatchTxn guessed; !after_read && GuessAbsent(j, now, guessed)) {
        first.batch.push_back(std::move(guessed));
        first.owners.push_back(&j);
        continue;
      }
      // Its session has no other job before it in the turn that could wait.
      read[i] = ReadFirst(j, now, first, reading);
    }
    if (read[i] != FirstRead::kInRound && j.kind == Job::Kind::kWrite) {
      PlaceEarlyWrite(j, after_read, first);
    }
  }
  return first;
}

Worker::FirstRead Worker::ReadFirst(Job& job, uint64_t now, RoundTrip& first, Sessions& reading) {
  Predict(job, now);
  // Only a write gains from reading alone (its write joins this round); a
  // read reads in the round's batch, whose one-sided part is one pass over
  // all of the turn's keys (a job at a time cost pipelined GETs a third).
  if (job.kind == Job::Kind::kWrite && ReadOneSided(job, now)) return FirstRead::kDone;
  PlaceReads(job, first.batch.emplace_back());
  first.owners.push_back(&job);
  reading.insert(job.session);
  for (const Job& f : job.followers) reading.insert(f.session);
  return FirstRead::kInRound;
}

bool Worker::SessionReads(const Job& job, const Sessions& reading) {
  return reading.contains(job.session) ||
         std::any_of(job.followers.begin(), job.followers.end(),
                     [&](const Job& f) { return reading.contains(f.session); });
}

void Worker::PlaceEarlyWrite(Job& job, bool after_read, RoundTrip& first) {
  if (after_read) {
    first.late_writers.push_back(&job);
    return;
  }
  job.written_early = true;
  PlaceWriteSet(job, first);
}

// Applies what `done` (a round trip that ran) read, and runs more read rounds
// for the jobs whose commands found they need more keys (the pages of paged
// collections), until every job has what it needs. Returns the
// read-modify-writes ready to write.
std::vector<Worker::Job*> Worker::ReadUntilComplete(RoundTrip done, uint64_t now) {
  std::vector<Job*> writers;
  while (!done.batch.empty()) {
    RoundTrip again;
    size_t more_keys = 0;  // jobs reading again for keys they found they need
    for (size_t i = 0; i < done.batch.size(); ++i) {
      Job& j = *done.owners[i];
      if (j.guessed_absent) {
        if (GuessedWriteDone(j, done.batch[i].status)) continue;
        PlaceReads(j, again.batch.emplace_back());  // a key existed: read it first
        again.owners.push_back(&j);
      } else if (!done.batch[i].status.ok()) {
        if (!ReadAgainAfterConflict(j, done.batch[i].status, again)) FailJob(j, done.batch[i].status);
      } else if (j.written_early) {
        continue;  // its write was this round's
      } else if (!ApplyReads(j, done.batch[i], now)) {
        PlaceReads(j, again.batch.emplace_back());
        again.owners.push_back(&j);
        ++more_keys;
      } else if (j.kind == Job::Kind::kWrite) {
        writers.push_back(&j);
      }
    }
    if (!again.batch.empty()) {
      shared_.read_rounds += more_keys;
      RunWithFailover(again.batch, again.owners, /*reads=*/true);
    }
    done = std::move(again);
  }
  return writers;
}

// Reads the job's keys one-sidedly alone (txn::Client::ReadOneSided), round
// after round while its commands find they need more (collection pages), and
// runs its commands on them. True when that completed the job: its reply is
// ready (a write's write set still to place); false when some key needs a
// message (the job then reads as usual, with the pages it found it needs).
bool Worker::ReadOneSided(Job& job, uint64_t now) {
  for (bool again = false;; again = true) {
    txn::BatchTxn txn;
    PlaceReads(job, txn);
    if (!client_->ReadOneSided(txn)) return false;
    ++shared_.backend_transactions;
    if (again) ++shared_.read_rounds;
    if (ApplyReads(job, txn, now)) return true;
  }
}

void Worker::PlaceWriteSet(Job& job, RoundTrip& round) {
  txn::BatchTxn w;
  w.after_ts = job.read_ts;  // the write orders after the versions it read
  if (std::string error = PlaceWrites(job, w); !error.empty()) {
    job.failed = true;
    AnswerGroup(job, ErrorReply(error));  // nothing of the write set is written
  } else if (!w.writes.empty()) {
    CheckedAgainst(job, w);
    OfferWrites(job);
    round.batch.push_back(std::move(w));
    round.owners.push_back(&job);
  }
}

void Worker::CheckedAgainst(Job& job, txn::BatchTxn& txn) const {
  job.sent_if_unchanged = false;
  // Empty with one proxy (ApplyReads), whose lock table orders its
  // read-modify-writes already, and for a blind write.
  if (job.read_versions.empty() || unchanged_off_) return;
  const uint32_t partition = txn.writes.front().partition;
  auto elsewhere = [&](uint32_t p) { return p != partition; };
  if (std::any_of(txn.writes.begin(), txn.writes.end(),
                  [&](const txn::PlacedWrite& w) { return elsewhere(w.partition); }) ||
      std::any_of(job.read_versions.begin(), job.read_versions.end(),
                  [&](const Job::ReadVersion& r) { return elsewhere(r.partition); })) {
    return;
  }
  txn.if_unchanged.reserve(job.read_versions.size());
  for (const Job::ReadVersion& r : job.read_versions) txn.if_unchanged.push_back({r.key, r.ts});
  job.sent_if_unchanged = true;
}

namespace {

// Whether a node's IF_UNCHANGED refusal names `key` (its message quotes the
// key's first 64 bytes: kv/executor.cc).
bool NamesKey(const Status& status, std::string_view key) {
  const std::string quoted = StrCat("key \"", key.substr(0, 64), "\" changed");
  return status.message().find(quoted) != std::string_view::npos;
}

}  // namespace

bool Worker::ReadAgainAfterConflict(Job& job, const Status& status, RoundTrip& round) {
  if (!job.sent_if_unchanged) return false;
  if (RefusedAsUnknownFlag(status)) {  // a kv-node older than IF_UNCHANGED: write unchecked
    unchanged_off_ = true;
  } else if (status.code() != StatusCode::kFailedPrecondition) {
    return false;
  } else {
    ++shared_.write_conflicts;
    // A group's PREPARE is refused for any member's key: one of its own
    // counts against the limit, another's (bounded too) does not.
    const bool own = std::any_of(job.read_versions.begin(), job.read_versions.end(),
                                 [&](const Job::ReadVersion& r) { return NamesKey(status, r.key); });
    if (++(own ? job.conflicts : job.bystander_refusals) > (own ? kMaxConflicts : 4 * kMaxConflicts)) {
      job.failed = true;
      AnswerGroup(job, ErrorReply(StrCat("ERR rampart: the keys of this command were written by "
                                         "another proxy or client before its write, ",
                                         kMaxConflicts, " times; try again")));
      return true;
    }
  }
  // Nothing of its write set was written: it reads and runs again.
  job.written_early = false;
  job.sent_if_unchanged = false;
  job.read_rounds = 0;
  job.attempts = 0;
  job.view.reset();
  PlaceReads(job, round.batch.emplace_back());
  round.owners.push_back(&job);
  return true;
}

// Writes the read-modify-writes; those refused because a key they read
// changed since (another proxy's write) read, run and write again.
void Worker::WriteReadModifyWrites(std::vector<Job*> writers, uint64_t now) {
  while (!writers.empty()) {
    RoundTrip writes;
    for (Job* j : writers) PlaceWriteSet(*j, writes);
    if (writes.batch.empty()) return;
    RunWithFailover(writes.batch, writes.owners, /*reads=*/false);
    RoundTrip again;
    for (size_t i = 0; i < writes.batch.size(); ++i) {
      Job& j = *writes.owners[i];
      const Status& st = writes.batch[i].status;
      if (!st.ok() && !ReadAgainAfterConflict(j, st, again)) FailJob(j, st);
    }
    if (again.batch.empty()) return;
    RunWithFailover(again.batch, again.owners, /*reads=*/true);
    writers = ReadUntilComplete(std::move(again), now);
  }
}

// After the turn's writes: parks the blocked, publishes the jobs' keyspace
// events, releases the locks (waking whoever waits for them) and runs the
// server commands.
void Worker::FinishJobs(std::vector<Job>& jobs) {
  bool wrote = false, unlocked = false;
  for (Job& j : jobs) {
    if (j.kind == Job::Kind::kParked) Park(j);  // before the unlock: no write slips by unseen
    if (j.kind == Job::Kind::kRunAgain) RunAgainWithKeys(j);
    // Keyspace events before the unlock: those of the next writer of these
    // keys (on any worker) come after them.
    const bool done = j.kind == Job::Kind::kWrite || j.kind == Job::Kind::kRead;
    if (done && !j.failed && j.view.has_value() && !j.view->events().empty()) PublishEvents(*j.view);
    if (!j.locks.empty()) {
      if (j.kind == Job::Kind::kWrite) {
        shared_.locks.BumpEpochs(j.locks);
        wrote = true;
      }
      shared_.locks.Unlock(j.locks, j.lock_mode);
      unlocked = true;
    }
    if (j.kind == Job::Kind::kServer) ServerCommand(*j.session, j.commands[0], j.reply);
  }
  if (wrote && shared_.parked.load(std::memory_order_relaxed) > 0) {
    WakeParked();  // pokes every worker, the lock waiters too
  } else if (unlocked) {
    WakeLockWaiters();
  }
}

void Worker::RunAgainWithKeys(Job& job) {
  Command& c = job.commands[0];
  for (std::string& k : job.undeclared) {  // KeyError-checked by the script's run
    if (std::find(c.script_keys.begin(), c.script_keys.end(), k) == c.script_keys.end()) {
      c.script_keys.push_back(std::move(k));
    }
  }
  if (++c.script_reruns > kMaxScriptReruns) {
    job.reply = ErrorReply(StrCat("ERR rampart: the script kept calling commands on keys it did not "
                                  "declare in KEYS (", c.script_keys.size(), " keys, ", kMaxScriptReruns,
                                  " runs); declare them"));
    job.kind = Job::Kind::kDone;
    return;
  }
  ++shared_.script_reruns;
  job.session->queue.push_front(std::move(c));
}

bool Worker::ApplyReads(Job& job, txn::BatchTxn& txn, uint64_t now) {
  job.read_ts = txn.read_ts;
  // What its write's IF_UNCHANGED check names (CheckedAgainst): only a
  // read-modify-write's, and only when other proxies write too.
  job.read_versions.clear();
  if (job.kind == Job::Kind::kWrite && shared_.several_proxies()) {
    for (size_t k = 0; k < txn.reads.size(); ++k) {
      job.read_versions.push_back({std::string(txn.reads[k].key), txn.versions[k], txn.reads[k].partition});
    }
  }
  job.view.emplace(NewView(now, job.seed));
  for (size_t k = 0; k < txn.reads.size(); ++k) job.view->Seed(txn.reads[k].key, std::move(txn.values[k]));
  for (const auto& [key, entry] : job.view->entries()) {
    if (!job.view->IsChunk(key)) page_cache_.Offer(key, entry.stored);
  }
  if (!job.watch_check.empty() && WatchedKeyChanged(job, txn)) {
    // A read round before this one may have run the block already (it then
    // needed more pages): its reply is not the EXEC's.
    ForgetRun(job);  // the block did not run
    resp::Writer out(&job.reply);
    out.SetProtocol(job.session->protocol);
    out.NullArray();
    job.kind = Job::Kind::kDone;
    return true;
  }
  if (job.watch) RecordWatched(job, txn);
  ApplyCommands(job);
  if (!job.undeclared.empty()) {
    job.kind = Job::Kind::kRunAgain;
    return true;
  }
  const std::vector<std::string>& missing = job.view->missing();
  if (missing.empty()) return true;
  if (++job.read_rounds >= kMaxReadRounds) {
    AnswerGroup(job, ErrorReply(StrCat("ERR rampart: the keys of this command kept changing for ",
                                       kMaxReadRounds, " read rounds; try again")));
    job.kind = Job::Kind::kDone;
    return true;
  }
  job.extra_keys.insert(job.extra_keys.end(), missing.begin(), missing.end());
  for (const std::string& k : missing) {
    if (const uint64_t bytes = job.view->ExpectedBytes(k); bytes > 0) job.extra_bytes.insert_or_assign(k, bytes);
  }
  return false;
}

namespace {

// The version the read round found for `key` (its first read).
uint64_t VersionOf(const txn::BatchTxn& txn, std::string_view key) {
  for (size_t k = 0; k < txn.reads.size(); ++k) {
    if (txn.reads[k].key == key) return txn.versions[k];
  }
  return 0;
}

bool Live(const DataView& view, std::string_view key) {
  auto found = view.FindStored(key);  // a long string's header: its chunks need no read
  return found.ok() && found->has_value();
}

}  // namespace

bool Worker::WatchedKeyChanged(const Job& job, const txn::BatchTxn& txn) const {
  for (const Session::Watched& w : job.watch_check) {
    if (VersionOf(txn, w.key) != w.version) return true;
    if (w.live && !Live(*job.view, w.key)) return true;  // expired since
  }
  return false;
}

void Worker::RecordWatched(const Job& job, const txn::BatchTxn& txn) {
  std::vector<Session::Watched>& watched = job.session->watched;
  for (std::string_view key : job.keys) {
    bool known = false;
    for (const Session::Watched& w : watched) known = known || w.key == key;
    if (!known) watched.push_back({std::string(key), VersionOf(txn, key), Live(*job.view, key)});
  }
}

void Worker::Predict(Job& job, uint64_t now) {
  bool cached = false;
  for (std::string_view k : job.keys) cached = cached || page_cache_.Find(k) != nullptr;
  for (const Job& f : job.followers) {
    for (std::string_view k : f.keys) cached = cached || page_cache_.Find(k) != nullptr;
  }
  if (!cached) return;
  // Run the commands once on the cached upper levels (absent where nothing is
  // cached), every page they ask for looked up in the cache as they go: the
  // pages they took from it and those it lacks are what the first round
  // reads besides the declared keys.
  DataView view = NewView(now, job.seed);
  auto seed = [&](std::string_view k) {
    const std::string* v = page_cache_.Find(k);
    view.Seed(k, v != nullptr ? std::optional<std::string>(*v) : std::nullopt);
  };
  for (std::string_view k : job.keys) seed(k);
  for (const Job& f : job.followers) {
    for (std::string_view k : f.keys) seed(k);
  }
  view.set_guesses([this](std::string_view k) { return page_cache_.Find(k); });
  ApplyTo(job, view);
  for (Job& f : job.followers) ApplyTo(f, view);
  ForgetRun(job);
  for (Job& f : job.followers) ForgetRun(f);
  job.extra_keys.insert(job.extra_keys.end(), view.guessed().begin(), view.guessed().end());
  job.extra_keys.insert(job.extra_keys.end(), view.missing().begin(), view.missing().end());
}

}  // namespace rampart::proxy
