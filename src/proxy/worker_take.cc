// Taking a turn's jobs from the sessions. The ordering rules (docs/proxy.md,
// "A turn"):
//  - a session's commands are taken in order, and a command that must see an
//    earlier one's write waits for the next turn: a read or a
//    read-modify-write never follows a blind write of the same session in a
//    turn, only single read-modify-writes follow a read-modify-write (one on
//    keys an earlier one holds joins it and runs after it on its view, one on
//    other keys runs beside it), and nothing follows a whole-store command;
//  - every write holds its keys' locks (LockTable) from before its read until
//    its write is done — exclusively for a read-modify-write, shared for a
//    blind write; a command whose lock is taken waits for a later turn. Blind
//    writes of one key in one turn (shared) are ordered by the timestamps
//    RunBatch draws: a session's in its order, two sessions' (concurrent)
//    either way (worker_turn.cc may hold one back for the write round).
//  - a MULTI block that writes is one job: with reads (or WATCH) it reads
//    first and holds its keys exclusively, like a read-modify-write.
#include <algorithm>
#include <cctype>

#include "proxy/internal_keys.h"
#include "proxy/worker_job.h"

namespace rampart::proxy {
namespace {

// Redis's wording: ERR unknown command 'foo', with args beginning with: 'a' 'b'
std::string UnknownCommand(const Command& c) {
  std::string msg = StrCat("ERR unknown command '", c.args[0].substr(0, 128), "', with args beginning with: ");
  for (size_t n = 1; n < c.args.size() && msg.size() < 512; ++n) {
    msg += StrCat("'", c.args[n].substr(0, 128), "' ");
  }
  return msg;
}

}  // namespace

std::string ErrorReply(std::string_view message) {
  std::string out;
  resp::Writer(&out).Error(message);
  return out;
}

bool Worker::Job::Joinable() const {
  if (multi || watch || !watch_check.empty() || commands.size() != 1) return false;
  return !IsBlocking(*commands[0].spec) && !ScriptRunner::IsEval(commands[0].spec->name);
}

bool Worker::Job::Chainable() const { return Joinable() && commands[0].spec->name != "sort"; }

void Worker::TakeJobs(std::vector<Job>& jobs) {
  if (blocked_on_locks_) shared_.waiting_for_locks[index_].store(false, std::memory_order_relaxed);
  blocked_on_locks_ = false;
  turn_owners_.clear();
  read_leaders_.clear();
  woken_slots_.clear();
  if (order_.empty() && sweeper_ == nullptr) return;
  const size_t max = shared_.config.proxy.batch_max_commands;
  auto take = [&](Session& s) {
    if (!Runnable(s)) return;
    TurnState state;
    while (!s.queue.empty() && !s.parked && jobs.size() < max && TakeCommand(s, jobs, state)) {
    }
  };
  // Blocked commands a write woke go first, in the order they blocked, and
  // no other command of the turn reads their keys before they ran
  // (woken_slots_): Redis serves a blocked client within the command that
  // unblocked it, before any other client's next command. The other
  // sessions follow in the order their front commands arrived, as Redis
  // runs them: two clients' BRPOPLPUSHes of one list, then a third's push,
  // must block in that order so that the push serves the first.
  std::vector<Session*> woken, ready;
  for (int fd : order_) {
    Session& s = *sessions_.at(fd);
    if (Woken(s)) {
      woken.push_back(&s);
    } else if (Runnable(s)) {
      ready.push_back(&s);
    }
  }
  std::sort(woken.begin(), woken.end(),
            [](const Session* a, const Session* b) { return a->park_seq < b->park_seq; });
  std::sort(ready.begin(), ready.end(), [](const Session* a, const Session* b) {
    return a->queue.front().arrival < b->queue.front().arrival;
  });
  for (Session* s : woken) {
    ClaimForRun(*s);
    const size_t queued = s->queue.size();
    take(*s);
    if (s->queue.size() == queued) StillBlocked(*s);  // a lock kept it for a later turn
  }
  for (Session* s : ready) {
    if (jobs.size() >= max) break;
    take(*s);
  }
  if (sweeper_ != nullptr) take(*sweeper_);
}

size_t Worker::MaxUserKeyBytes() const {
  return shared_.config.kv.max_key_bytes - kPageKeyOverhead;
}

bool Worker::Woken(const Session& s) const {
  return s.park_started && Runnable(s) && s.queue.front().spec != nullptr &&
         IsBlocking(*s.queue.front().spec);
}

bool Worker::ReadsWokenKeys(const Job& j) const {
  if (woken_slots_.empty()) return false;
  for (uint32_t slot : shared_.locks.SlotsOf(j.keys)) {
    if (woken_slots_.count(slot) != 0) return true;
  }
  return false;
}

std::string Worker::CheckCommand(const Session& s, const Command& c) const {
  const std::string name = c.spec != nullptr ? std::string(c.spec->name) : Lower(c.args[0]);
  if (!s.authenticated && name != "auth" && name != "hello" && name != "quit") {
    return "NOAUTH Authentication required.";
  }
  if (c.spec == nullptr) return UnknownCommand(c);
  const std::vector<std::string_view> views = c.Views();
  if (std::string arity = CheckArity(*c.spec, views); !arity.empty()) return arity;
  // Redis 7.0 refuses a subcommand it does not know before it runs (inside
  // MULTI too: EXEC then aborts), and counts it on no commandstats line.
  if (NamesUnknownSubcommand(*c.spec, views)) {
    return SubcommandError(*c.spec, c.args[1]);
  }
  if (s.internal) return "";
  for (std::string_view key : KeysOf(*c.spec, views)) {
    if (std::string error = KeyError(key); !error.empty()) return error;
  }
  return "";
}

std::string Worker::KeyError(std::string_view key) const {
  if (key.empty()) return "ERR rampart: empty keys are not supported";
  // A collection's pages live at the key plus kPageKeyOverhead bytes.
  if (key.size() > MaxUserKeyBytes()) {
    return StrCat("ERR rampart: a key of ", key.size(), " bytes is longer than kv.max_key_bytes (",
                  shared_.config.kv.max_key_bytes, ") less the ", kPageKeyOverhead,
                  " bytes the proxy adds to name a collection's pages");
  }
  if (key.starts_with(kInternalPrefix)) {
    return "ERR rampart: keys starting with the bytes 00 01 are reserved for collection pages";
  }
  return "";
}

void Worker::DecideSilence(Session& s, Command& c) {
  if (c.silence_decided) return;
  c.silence_decided = true;
  const bool reply_on = c.spec != nullptr && c.spec->name == "client" && c.args.size() == 3 &&
                        Lower(c.args[1]) == "reply" && Lower(c.args[2]) == "on";
  if (reply_on || s.reply_mode == Session::ReplyMode::kOn) return;  // ON answers whatever the mode
  // Subscription confirmations go out all the same (Redis 7.0 pushes them,
  // and the messages, past CLIENT REPLY).
  // (Not their errors: a refused one is silenced like any reply.)
  c.silent = c.spec == nullptr || !IsSubscription(c.spec->name) || !CheckArity(*c.spec, c.Views()).empty() ||
             !s.authenticated;
  if (s.reply_mode == Session::ReplyMode::kSkipNext) s.reply_mode = Session::ReplyMode::kOn;
}

void Worker::Answer(Session& s, std::vector<Job>& jobs, std::string reply, Counted counted) {
  Job j;
  j.session = &s;
  j.silent = s.queue.front().silent;
  j.answered_stats = s.queue.front().stats;
  j.counted = counted;
  if (counted == Counted::kCall) j.answered_args = std::move(s.queue.front().args);  // it is answered
  j.reply = std::move(reply);
  j.taken = next_taken_++;
  jobs.push_back(std::move(j));
  s.queue.pop_front();
}

bool Worker::Refuse(Session& s, std::vector<Job>& jobs, std::string_view message) {
  if (s.in_multi) s.multi_failed = true;  // EXEC will abort
  Answer(s, jobs, ErrorReply(message), Counted::kRejected);
  return true;
}

// Whether `c` may be queued in a MULTI block: data commands, and the
// connection commands that touch no data and give the same answer when the
// block runs again (ApplyTo runs a block once per read round): PING, ECHO,
// TIME, SELECT, UNWATCH, CONFIG, COMMAND, FUNCTION, CLIENT but UNBLOCK and
// KILL. Not: the whole-store server commands (their own round trips), AUTH
// and HELLO (they change who the session is mid-block), CLIENT UNBLOCK and
// KILL (they act on other sessions once), pub/sub (it acts once).
bool IsSubscription(std::string_view name) {
  return name == "subscribe" || name == "unsubscribe" || name == "psubscribe" || name == "punsubscribe" ||
         name == "ssubscribe" || name == "sunsubscribe";
}

bool IsPubSub(std::string_view name) {
  return IsSubscription(name) || name == "publish" || name == "spublish" || name == "pubsub" ||
         name == "rampart.publish" || name == "rampart.spublish";
}

bool ActsOnOtherSessions(const Command& c) {
  const std::string_view name = c.spec->name;
  if (name == "publish" || name == "spublish" || name.starts_with("rampart.")) return true;
  if (name != "client" || c.args.size() < 2) return false;
  const std::string sub = Lower(c.args[1]);
  return sub == "unblock" || sub == "kill";
}

// CLIENT REPLY changes which replies go out, which a block's reply array
// cannot follow (refused in MULTI, as Valkey does).
bool IsClientReply(const Command& c) {
  return c.spec->name == "client" && c.args.size() >= 2 && Lower(c.args[1]) == "reply";
}

bool Worker::QueueableInMulti(const Command& c) {
  const std::string_view name = c.spec->name;
  switch (c.spec->kind) {
    case CommandKind::kRead:
    case CommandKind::kWrite:
      return true;
    case CommandKind::kServer:
    case CommandKind::kTransaction:
      return false;
    case CommandKind::kConnection:
      // AUTH and HELLO change who the session is; pub/sub and the commands on
      // other sessions act once (a block may run once per read round).
      return name != "auth" && name != "hello" && !IsPubSub(name) && !ActsOnOtherSessions(c) &&
             !IsClientReply(c);
  }
  return false;
}

// Takes the session's next command into `jobs` (or answers it at once).
// Returns false when the session gives no more commands this turn.
bool Worker::TakeCommand(Session& s, std::vector<Job>& jobs, TurnState& state) {
  Command& c = s.queue.front();
  DecideSilence(s, c);
  if (!c.protocol_error.empty()) {
    Answer(s, jobs, ErrorReply(c.protocol_error), Counted::kNone);
    s.queue.clear();
    return false;
  }
  if (std::string error = CheckCommand(s, c); !error.empty()) return Refuse(s, jobs, error);
  const CommandKind kind = c.spec->kind;
  const std::string_view name = c.spec->name;
  if (s.protocol == 2 && s.subscriptions() > 0 && !IsSubscription(name) && name != "ping" && name != "quit") {
    return Refuse(s, jobs, StrCat("ERR Can't execute '", name, "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING "
                                  "/ QUIT / RESET are allowed in this context"));
  }
  if (s.in_multi && name == "watch") {  // refused, but EXEC still runs the block
    Answer(s, jobs, ErrorReply("ERR WATCH inside MULTI is not allowed"));
    return true;
  }
  if (s.in_multi && kind != CommandKind::kTransaction && name != "quit") {
    if (!QueueableInMulti(c)) {
      return Refuse(s, jobs, StrCat("ERR rampart: ", IsClientReply(c) ? "CLIENT REPLY" : name,
                                    " inside MULTI is not supported"));
    }
    s.multi.push_back(std::move(c));
    Answer(s, jobs, "+QUEUED\r\n", Counted::kNone);
    return true;
  }
  switch (kind) {
    case CommandKind::kConnection: {
      // A command on other sessions waits for this session's writes of the
      // turn: an LPUSH pipelined before CLIENT UNBLOCK serves the blocked
      // client first, as in Redis; a subscriber told by a PUBLISH reads the
      // value written before it.
      if (state.wrote && ActsOnOtherSessions(c)) return false;
      if (state.watched && name == "unwatch") return false;  // after the WATCH has run
      std::string reply;
      ConnectionCommand(s, c, reply);
      Answer(s, jobs, std::move(reply));
      if (s.closing) s.queue.clear();  // QUIT
      return !s.closing;
    }
    case CommandKind::kServer: {
      // Runs after the turn's transactions, so it sees this session's
      // earlier writes; what follows it waits for the next turn.
      Job j;
      j.session = &s;
      j.silent = c.silent;
      j.kind = Job::Kind::kServer;
      j.commands.push_back(std::move(c));
      j.taken = next_taken_++;
      s.queue.pop_front();
      jobs.push_back(std::move(j));
      return false;
    }
    case CommandKind::kTransaction:
      return TakeTransaction(s, jobs, state);
    case CommandKind::kRead:
    case CommandKind::kWrite: {
      std::vector<Command> block;
      block.push_back(std::move(c));
      return TakeDataJob(s, std::move(block), /*multi=*/false, jobs, state);
    }
  }
  return true;
}

// MULTI, EXEC, DISCARD.
bool Worker::TakeTransaction(Session& s, std::vector<Job>& jobs, TurnState& state) {
  const std::string_view name = s.queue.front().spec->name;
  if (name == "multi") {
    if (s.in_multi) {
      Answer(s, jobs, ErrorReply("ERR MULTI calls can not be nested"));
    } else {
      s.in_multi = true;
      Answer(s, jobs, "+OK\r\n");
    }
    return true;
  }
  if (!s.in_multi) {
    Answer(s, jobs, ErrorReply(StrCat("ERR ", name == "exec" ? "EXEC" : "DISCARD", " without MULTI")));
    return true;
  }
  if (state.watched) return false;  // the WATCH before it has not run yet
  const bool aborted = name == "exec" && s.multi_failed;
  if (name == "discard" || aborted || (s.multi.empty() && s.watched.empty())) {
    s.in_multi = s.multi_failed = false;
    s.multi.clear();
    s.watched.clear();
    Answer(s, jobs, aborted              ? ErrorReply("EXECABORT Transaction discarded because of previous errors.")
                    : name == "exec"     ? std::string("*0\r\n")
                                         : std::string("+OK\r\n"));
    return true;
  }
  std::vector<Command> block = std::move(s.multi);
  s.multi.clear();
  return TakeDataJob(s, std::move(block), /*multi=*/true, jobs, state);
}

// A data job's keys (j.keys), whether it reads them first (j.needs_read),
// and what its commands do.
Worker::JobShape Worker::ShapeJob(const Session& s, Job& j) {
  JobShape shape;
  for (const Command& cmd : j.commands) {
    const auto v = cmd.Views();
    for (std::string_view k : KeysOf(*cmd.spec, v)) j.keys.push_back(k);
    for (const std::string& k : cmd.script_keys) j.keys.push_back(k);
    if (cmd.spec->kind == CommandKind::kRead) {
      shape.reads = true;
    } else if (cmd.spec->kind == CommandKind::kWrite) {
      shape.writes = true;
      j.needs_read = j.needs_read || NeedsRead(*cmd.spec, v);
    }
  }
  j.watch = !j.multi && j.commands[0].spec->name == "watch";
  if (j.multi && !s.watched.empty()) {
    j.watch_check = s.watched;
    for (const Session::Watched& w : j.watch_check) j.keys.push_back(w.key);
    shape.reads = true;
  }
  j.needs_read = j.needs_read || (shape.reads && shape.writes);
  // "new" and "expired" events need to know what a write replaces (DataView::set_notify_flags).
  const uint32_t notify_flags = shared_.notify_flags.load(std::memory_order_relaxed);
  shape.notifying = shape.writes && notify::Publishing(notify_flags);
  if (shape.notifying && (notify_flags & (notify::kNew | notify::kExpired)) != 0) j.needs_read = true;
  return shape;
}

// A write job's locks: kOwn when it holds them (the job is taken on its own),
// kJoined when it joined the job of this turn that holds them (moved into
// its followers), kWait when it must wait for a later turn, kBehind when it
// is a woken blocking command that must wait for an older waiter.
Worker::WriteTaken Worker::TakeLocks(Session& s, Job& j, bool notifying, std::vector<Job>& jobs, TurnState& state) {
  // A session's pipelined INCRs of one turn: each after the one before it.
  const bool chained = state.rmw && state.only_chainable_rmws && j.needs_read && j.Chainable();
  if (!chained && (state.rmw || (j.needs_read && state.wrote))) return WriteTaken::kWait;
  // Whether it is taken as a follower or as a job of its own.
  if (j.needs_read && !j.Chainable()) state.only_chainable_rmws = false;
  j.locks = shared_.locks.SlotsOf(j.keys);
  // Blind writes of one key share its lock — but not while their events are
  // published: those must go out in the order the writes are stored.
  j.lock_mode = j.needs_read || notifying ? LockTable::Mode::kExclusive : LockTable::Mode::kShared;
  j.kind = Job::Kind::kWrite;
  if (NewcomerWaits(s, j)) return WriteTaken::kWait;  // looked at before the locks: the wait holds none
  if (!shared_.locks.TryLock(j.locks, j.lock_mode)) {
    Job* leader = LeaderFor(j, jobs);
    if (leader == nullptr) {
      ++shared_.lock_waits;
      // Held by another worker (or a blind write): look again in a
      // millisecond. Held by a read-modify-write of this turn (the
      // session's own earlier INCR, say): free for the next turn.
      if (!HeldByThisTurn(j.locks)) {
        blocked_on_locks_ = true;
        shared_.waiting_for_locks[index_].store(true);
      }
      return WriteTaken::kWait;
    }
    j.locks.clear();
    state.wrote = state.rmw = true;
    s.queue.pop_front();
    j.taken = next_taken_++;
    leader->followers.push_back(std::move(j));
    return WriteTaken::kJoined;
  }
  // Redis serves the oldest blocked client within each write. Here a woken
  // blocking command may run after the next write (another worker's): then
  // an older waiter that has not run since goes first. And a blocking command
  // sent after a write (its reply) waits, as for a held lock, until the
  // waiters that write woke have run. Both asked under the locks, where no
  // epoch of theirs moves (a write may have come since NewcomerWaits looked).
  if ((j.woken && !StillFirstInLine(s)) || NewcomerWaits(s, j)) {
    shared_.locks.Unlock(j.locks, j.lock_mode);
    WakeLockWaiters();  // a worker that found them held this moment
    j.locks.clear();
    return j.woken ? WriteTaken::kBehind : WriteTaken::kWait;
  }
  if (j.needs_read) {
    for (uint32_t slot : j.locks) turn_owners_[slot] = jobs.size();
  }
  if (j.woken) woken_slots_.insert(j.locks.begin(), j.locks.end());
  s.behind_waiters_since_ms = 0;  // it runs: its next blocking command waits afresh
  state.wrote = true;
  state.rmw = state.rmw || j.needs_read;
  return WriteTaken::kOwn;
}

bool Worker::NewcomerWaits(Session& s, const Job& j) {
  if (j.woken || j.multi || !IsBlocking(*j.commands[0].spec)) return false;
  // A waiter that does not run holds it back a bounded time (this command's
  // own timeout is not running yet), then no more.
  const uint64_t now = NowMs();
  const bool waiting = s.behind_waiters_since_ms != 0;
  if (waiting && now - s.behind_waiters_since_ms >= kMaxWaitBehindWaitersMs) return false;
  // (Every waiter's line entry, not shared_.parked: that does not count the
  // waiters woken and not yet run.)
  bool current = false;
  {
    std::lock_guard lock(shared_.waiters_mutex);
    current = FirstInLineLocked(/*seq=*/0, j.locks);  // (0: none's) every waiter has run since the last write
  }
  if (current) return false;
  if (!waiting) {
    s.behind_waiters_since_ms = now;
    ++shared_.lock_waits;  // once a command
  }
  blocked_on_locks_ = true;  // the waiters' runs unlock these slots, which pokes this worker
  shared_.waiting_for_locks[index_].store(true);
  return true;
}

// A data job: one command or an EXEC's block (then `s.queue.front()` is the
// EXEC). Returns false, leaving the session as it was, when the job must
// wait for a later turn.
bool Worker::TakeDataJob(Session& s, std::vector<Command> block, bool multi, std::vector<Job>& jobs,
                         TurnState& state) {
  Job j;
  j.session = &s;
  j.silent = s.queue.front().silent;  // the command's (moved from, the flag stays) or the EXEC's
  j.multi = multi;
  j.commands = std::move(block);
  j.woken = !multi && s.park_started && IsBlocking(*j.commands[0].spec);
  const JobShape shape = ShapeJob(s, j);
  if (!shape.reads && !shape.writes) {  // a block of PINGs and ECHOs: nothing to read or write
    DataView none(NowMs(), 0);
    ApplyTo(j, none);
    s.in_multi = false;
    s.queue.pop_front();  // the EXEC
    j.kind = Job::Kind::kDone;
    j.taken = next_taken_++;
    jobs.push_back(std::move(j));
    return true;
  }
  auto put_back = [&] {  // not this turn: the block (or command) returns to the session
    if (multi) {
      s.multi = std::move(j.commands);
    } else {
      s.queue.front() = std::move(j.commands[0]);
    }
    return false;
  };
  if (!shape.writes) {
    if (state.wrote || ReadsWokenKeys(j)) return put_back();
    j.kind = Job::Kind::kRead;
    if (Job* leader = ReadLeaderFor(j, jobs)) {
      s.queue.pop_front();
      j.taken = next_taken_++;
      leader->followers.push_back(std::move(j));
      return true;
    }
  } else if (const WriteTaken taken = TakeLocks(s, j, shape.notifying, jobs, state); taken != WriteTaken::kOwn) {
    if (taken == WriteTaken::kJoined) return true;
    if (taken == WriteTaken::kBehind) ParkBehind(s);
    return put_back();
  }
  if (multi) {
    s.in_multi = false;
    s.watched.clear();
  }
  state.watched = state.watched || j.watch;
  s.queue.pop_front();  // the command, or EXEC
  j.taken = next_taken_++;
  // A script may go back to the session to run again (Job::kRunAgain): what
  // the session sent after it waits for the next turn, to be answered after it.
  const bool script = !multi && ScriptRunner::IsEval(j.commands[0].spec->name);
  jobs.push_back(std::move(j));
  return !script;
}

Worker::Job* Worker::ReadLeaderFor(const Job& j, std::vector<Job>& jobs) {
  if (!j.Joinable()) return nullptr;
  std::string signature;
  for (std::string_view k : j.keys) {
    const uint64_t n = k.size();
    signature.append(reinterpret_cast<const char*>(&n), sizeof n);
    signature.append(k);
  }
  auto [it, fresh] = read_leaders_.try_emplace(std::move(signature), jobs.size());
  if (fresh) return nullptr;  // j leads
  Job& leader = jobs[it->second];
  if (leader.followers.size() >= kMaxFollowers) {
    it->second = jobs.size();  // j leads the next group
    return nullptr;
  }
  ++shared_.joined_reads;
  return &leader;
}

bool Worker::HeldByThisTurn(const std::vector<uint32_t>& slots) const {
  return std::any_of(slots.begin(), slots.end(), [&](uint32_t slot) { return turn_owners_.contains(slot); });
}

// The read-modify-write of this turn that holds every lock `j` wants, if
// both can run as one (Job::followers), else nullptr.
Worker::Job* Worker::LeaderFor(const Job& j, std::vector<Job>& jobs) {
  if (!j.needs_read || !j.Joinable() || j.locks.empty()) return nullptr;
  auto first = turn_owners_.find(j.locks[0]);
  if (first == turn_owners_.end()) return nullptr;
  for (uint32_t slot : j.locks) {
    auto it = turn_owners_.find(slot);
    if (it == turn_owners_.end() || it->second != first->second) return nullptr;
  }
  Job& leader = jobs[first->second];
  if (!leader.Joinable() || leader.followers.size() >= kMaxFollowers) return nullptr;
  ++shared_.joined;
  return &leader;
}

}  // namespace rampart::proxy
