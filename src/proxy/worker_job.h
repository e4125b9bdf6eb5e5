// Private to the worker (worker_take.cc, worker_turn.cc): a Job — one data
// command, or an EXEC's block, or an answer ready to send — and what a
// session did in the turn so far.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/data_view.h"
#include "proxy/lock_table.h"
#include "proxy/session.h"
#include "proxy/worker.h"

namespace rampart::proxy {

struct Worker::Job {
  Session* session = nullptr;
  enum class Kind { kDone, kRead, kWrite, kServer, kParked, kRunAgain };
  // kDone: `reply` is the answer already; kParked: a blocking command found
  // nothing to pop and waits (Session::parked) — no reply; kRunAgain: a
  // script called a command on a key it did not declare: the command goes
  // back to its session, to run again with that key too — no reply.
  Kind kind = Kind::kDone;
  std::vector<Command> commands;
  bool multi = false;  // an EXEC: the replies form an array
  bool watch = false;  // a WATCH: records the versions of its keys
  // An EXEC after WATCH: the watched keys as watched. Their versions are read
  // with the block's keys; EXEC answers a null array if one changed.
  std::vector<Session::Watched> watch_check;
  std::vector<std::string_view> keys;  // every key to read/lock (views into commands, watch_check)
  bool needs_read = false;
  std::vector<uint32_t> locks;  // held lock-table slots
  LockTable::Mode lock_mode = LockTable::Mode::kExclusive;
  std::string reply;
  bool replied = false;  // `reply` went out before the turn's write round
  bool silent = false;   // CLIENT REPLY: `reply` is dropped (Command::silent)
  std::optional<DataView> view;
  uint64_t seed = 0;  // of the view's Random(): the same in every read round
  // When the command was taken (Worker::next_taken_): a session's replies go
  // out in this order, a follower's at its own place, not its leader's.
  uint64_t taken = 0;
  // Keys the commands asked for beyond the declared ones (collection pages,
  // long strings' chunks), read from the second round on, and the sizes the
  // views expected of them (DataView::ExpectedBytes; only those known).
  std::vector<std::string> extra_keys;
  std::map<std::string, uint64_t, std::less<>> extra_bytes;
  int read_rounds = 0;
  uint64_t read_ts = 0;  // of the last read round
  int attempts = 0;
  // Its commands ran on "absent" and its write set went out with IF_ABSENT
  // in the first round, without a read (worker_absent.cc).
  bool guessed_absent = false;
  // A write whose write set went out in the first round: a blind write, or
  // a read-modify-write whose reads were all one-sided (Worker::ReadOneSided).
  bool written_early = false;
  // The versions its last read round found, and where (txn::BatchTxn's
  // versions): a read-modify-write's write set goes out on the condition
  // that they are still the newest (IF_UNCHANGED, Worker::CheckedAgainst).
  struct ReadVersion {
    std::string key;
    uint64_t ts = 0;
    uint32_t partition = 0;
  };
  std::vector<ReadVersion> read_versions;
  bool sent_if_unchanged = false;  // its last write set carried them
  int conflicts = 0;  // its writes refused so far: a key of its read changed since
  int bystander_refusals = 0;  // refused with its group for another's key
  // Read-modify-writes of other sessions that wanted this job's locks in
  // the same turn: they run after this job's commands, on its view, and
  // their writes leave with its write set (each keeps its own reply).
  // Their `locks` are empty (this job holds them) and they have no
  // followers of their own.
  std::vector<Job> followers;
  // Keys its script's last run called a command on without declaring them
  // (ScriptRunner::undeclared): the job becomes kRunAgain.
  std::vector<std::string> undeclared;
  // Its write set was not written (a backend error, or one found before it
  // was sent): its view's keyspace events are not published.
  bool failed = false;
  // INFO commandstats: an answer taken without a command run (Answer()):
  // how it counts, for the command at the session's front then.
  int answered_stats = -1;  // CommandStatsIndex
  Counted counted = Counted::kNone;
  std::vector<std::string> answered_args;  // moved from the command (SLOWLOG)
  // A blocking command run again after it parked: its call was counted
  // when it first parked.
  bool woken = false;
  // Of a block's commands, as its last run answered them: how many ran, and
  // (command, offset in `reply`) of each whose reply is an error.
  size_t commands_run = 0;
  std::vector<std::pair<size_t, size_t>> failed_at;
  std::vector<ScriptRunner::Call> script_calls;  // its scripts' commands (ScriptRunner::calls)

  // Whether another read-modify-write may follow this one (see followers):
  // one command, no WATCH, nothing that may block.
  bool Joinable() const;
  // Whether a read-modify-write of the same session may follow this one in
  // the turn, or this one follow the session's earlier ones (TurnState):
  // Joinable, and it reads no key beyond its locked ones (SORT's BY and GET
  // patterns name keys that an earlier job of the turn may still write).
  bool Chainable() const;
};

// What a session did in this turn so far.
struct TurnState {
  bool wrote = false;  // a write was taken
  bool rmw = false;    // a read-modify-write was taken
  // Every write taken was a read-modify-write that others may follow
  // (Job::Chainable): a pipelined one after them may still be taken.
  bool only_chainable_rmws = true;
  // A WATCH was taken: it records its versions when the turn runs, so an
  // EXEC, DISCARD or UNWATCH after it (which use or clear them at once)
  // waits for the next turn.
  bool watched = false;
};

// Read rounds a job may take: a collection's tree depth plus a merge's
// sibling, with room for a concurrent change of a read-only job's keys.
inline constexpr int kMaxReadRounds = 10;
// Times a read-modify-write reads and runs again after a kv-node refused its
// write because a key it read was written meanwhile (through another proxy
// or client: this proxy's own writes wait for its locks).
inline constexpr int kMaxConflicts = 64;
// Followers one job may take in a turn: bounds a turn's write set (each
// follower's reply waits for the whole group).
inline constexpr size_t kMaxFollowers = 64;
// Times a script is taken again for keys it did not declare before it is
// answered with an error instead (each time adds the keys its run found).
inline constexpr int kMaxScriptReruns = 8;

// A kv-node older than a PREPARE flag the worker sent refused it
// (IF_ABSENT, IF_UNCHANGED): the worker stops sending it.
bool RefusedAsUnknownFlag(const Status& status);
// "-message\r\n".
std::string ErrorReply(std::string_view message);
// Wakes the worker whose eventfd `fd` is (its epoll loop returns); any thread.
void Poke(int fd);
// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE: what a RESP2 connection
// with subscriptions may send, with PING and QUIT.
bool IsSubscription(std::string_view name);
// CLIENT REPLY (refused inside MULTI).
bool IsClientReply(const Command& c);
// Those, PUBLISH and PUBSUB (worker_pubsub.cc).
bool IsPubSub(std::string_view name);
// Connection commands that act on other sessions (CLIENT UNBLOCK, CLIENT
// KILL, PUBLISH): they act once, so never inside MULTI, and after the
// writes their session sent before them are stored.
bool ActsOnOtherSessions(const Command& c);

}  // namespace rampart::proxy
