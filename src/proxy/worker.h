// A proxy worker: one thread with its own listening socket (SO_REUSEPORT),
// its client connections, its txn::Client (backend connections) and its
// event loop. Private to src/proxy.
//
// A turn of the loop: read what the sockets have, parse commands, take a
// batch of them from all sessions (Jobs), run the batch's transactions
// together (txn::Client::RunBatch: one message per backend partition and
// round when aggregating), reply, write. docs/proxy.md has the rules that keep
// each connection's commands in order.
//
// Thread-safety: Run() on the worker's thread; Stop() from any thread.
// SharedState is shared by all workers: immutable except its atomics and the
// lock table.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <sys/epoll.h>

#include "common/config.h"
#include "proxy/data_view.h"
#include "proxy/hash_ring.h"
#include "proxy/lock_table.h"
#include "proxy/page_cache.h"
#include "proxy/notify.h"
#include "proxy/peer_publish.h"
#include "proxy/resp.h"
#include "proxy/script.h"
#include "proxy/session.h"
#include "txn/client.h"

namespace rampart::proxy {

struct KeyFilter;

struct SharedState {
  SharedState(ClusterConfig c, HashRing r) : config(std::move(c)), ring(std::move(r)) {}

  // The cluster file lists several proxies: other proxies' writes exist
  // (read-modify-writes are checked, parked commands look for them, PUBLISH
  // is forwarded).
  bool several_proxies() const { return config.proxies.size() >= 2; }
  const ClusterConfig config;
  const HashRing ring;
  ProxyAddressConfig listen;  // this proxy's id and address (set before the workers run)
  LockTable locks;
  resp::Limits limits;
  uint64_t started_ms = 0;
  uint32_t worker_count = 0;

  std::atomic<uint64_t> next_session_id{1};
  std::atomic<uint32_t> connected{0};
  // INFO stats.
  std::atomic<uint64_t> connections_received{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> commands{0};
  std::atomic<uint64_t> turns{0};             // turns that ran a batch
  std::atomic<uint64_t> backend_transactions{0};
  std::atomic<uint64_t> lock_waits{0};        // commands left for a later turn by a held lock
  std::atomic<uint64_t> failovers{0};         // reads sent to another replica
  std::atomic<uint64_t> backend_errors{0};    // commands answered with a backend error
  std::atomic<uint64_t> read_rounds{0};  // read rounds after a job's first (pages it found it needs)
  std::atomic<uint64_t> joined{0};  // read-modify-writes run with another of their key's (Job::followers)
  std::atomic<uint64_t> joined_reads{0};  // reads run on another read's view (Job::followers)
  // Read-modify-writes of unknown keys written without a read first
  // (worker_absent.cc), and those a kv-node refused because a key existed.
  std::atomic<uint64_t> absent_writes{0};
  std::atomic<uint64_t> absent_refused{0};
  // Read-modify-write writes a kv-node refused because a key they read had
  // changed since (IF_UNCHANGED: another proxy's or client's write).
  std::atomic<uint64_t> write_conflicts{0};
  // Scripts taken again with keys they did not declare (Worker::RunAgainWithKeys).
  std::atomic<uint64_t> script_reruns{0};

  // Blocking commands: sessions parked on all workers, and each worker's
  // eventfd, poked after a write when any session is parked (set before
  // the workers run; read-only after).
  std::atomic<uint32_t> parked{0};
  std::vector<int> wake_fds;
  // Per worker: it left a command for a later turn because another worker
  // held its lock. The worker that unlocks pokes it (wake_fds) instead of
  // letting it look again in a millisecond (sized before the workers run).
  std::unique_ptr<std::atomic<bool>[]> waiting_for_locks;
  // Per worker: its txn::Client's read-path counters, published after each
  // turn for INFO (the client itself belongs to the worker's thread).
  struct ReadPath {
    std::atomic<uint64_t> slot_reads{0};     // GET* reads accepted
    std::atomic<uint64_t> slot_fallbacks{0};  // GET* refused or without an address: GET
    std::atomic<uint64_t> repair_rounds{0};   // RAMP reads that needed a second round
  };
  std::unique_ptr<ReadPath[]> read_paths;
  // Blocked clients are served first come, first served (as Redis does):
  // per lock slot, its waiters in the order they first parked, each with
  // the slot's write epoch it last ran at. A woken waiter runs only when
  // every older waiter of the slots written since has run at the slot's
  // current epoch (worker_block.cc, Worker::FirstInLine).
  struct Waiter {
    uint64_t seq = 0;
    uint32_t ran_epoch = 0;
  };
  std::mutex waiters_mutex;
  std::unordered_map<uint32_t, std::vector<Waiter>> waiters;  // guarded by waiters_mutex
  std::atomic<uint64_t> next_waiter_seq{1};
  // CLIENT UNBLOCK: the sessions whose blocking command waits (parked, or
  // woken and not yet run again), by session id, with their worker and how
  // an UNBLOCK asked for them to be answered. The owner erases an entry when
  // it runs the command again (and enters it anew when it parks again),
  // answers it or closes the session; an UNBLOCK marks an entry it finds and
  // pokes the owner (unblock_pending, wake_fds), which answers the command
  // before its next turn. Guarded by waiters_mutex.
  struct Blocked {
    uint32_t worker = 0;
    Unblock unblock = Unblock::kNone;
    // Its place in line and its keys' lock slots with their write epochs when
    // it parked: a write since, with no older waiter ahead, is serving it.
    uint64_t seq = 0;
    std::vector<uint32_t> slots, epochs;
  };
  std::unordered_map<uint64_t, Blocked> blocked;
  // Per worker: an UNBLOCK marked one of its sessions (sized before the workers run).
  std::unique_ptr<std::atomic<bool>[]> unblock_pending;

  // CLIENT LIST and CLIENT KILL over every worker (worker_clients.cc): each
  // session's CLIENT INFO fields, by session id. The owner enters a session
  // when it connects, updates it on CLIENT SETNAME/SETINFO and HELLO, and
  // erases it when it closes. A KILL puts ids in `kill` and pokes their
  // owners (kill_pending, wake_fds), which close them before their next turn.
  // Guarded by clients_mutex.
  struct ClientRecord {
    uint32_t worker = 0;
    int fd = -1;
    std::string peer, name, lib_name, lib_version;
    uint64_t connected_ms = 0;
    int protocol = 2;
    size_t channels = 0, patterns = 0, shard_channels = 0;  // its subscriptions: a "pubsub" client when any
  };
  std::mutex clients_mutex;
  std::map<uint64_t, ClientRecord> clients;
  std::unordered_set<uint64_t> kill;
  // With several proxies in the cluster file: the link that forwards this
  // proxy's PUBLISHes to the others (nullptr: none). Set before the workers run.
  std::unique_ptr<PeerPublisher> peers;
  // Per worker: a KILL marked one of its sessions (sized before the workers run).
  std::unique_ptr<std::atomic<bool>[]> kill_pending;

  // Pub/sub (worker_pubsub.cc): the subscribers of each channel and pattern
  // (session id -> its worker), and per worker the messages for its
  // sessions. A PUBLISH on any worker queues a Delivery in each subscriber's
  // worker's inbox and pokes it (wake_fds); the worker writes them to its
  // sessions before its next turn. Guarded by pubsub_mutex.
  struct Delivery {
    uint64_t session = 0;
    int fd = -1;
    enum How : uint8_t { kChannel, kPattern, kShard } how = kChannel;  // message, pmessage, smessage
    std::string pattern;
    // One copy of the channel and message for all of a PUBLISH's deliveries.
    std::shared_ptr<const std::pair<std::string, std::string>> published;
  };
  std::mutex pubsub_mutex;
  struct Subscriber {
    uint32_t worker = 0;
    int fd = -1;  // its session's, on that worker (ids tell a reused fd)
  };
  using Subscribers = std::map<uint64_t, Subscriber>;  // by session id
  std::unordered_map<std::string, Subscribers> channels;
  std::map<std::string, Subscribers, std::less<>> patterns;
  std::unordered_map<std::string, Subscribers> shard_channels;  // SSUBSCRIBE's
  std::vector<std::vector<Delivery>> inboxes;  // sized before the workers run
  // Per worker: its inbox has deliveries (sized before the workers run).
  std::unique_ptr<std::atomic<bool>[]> delivery_pending;

  // CONFIG SET values of the parameters it takes without effect
  // (worker_config.cc), shared by the workers.
  mutable std::mutex config_mutex;
  std::map<std::string, std::string, std::less<>> config_set;

  // Lua scripts (script.h): the bodies EVAL and SCRIPT LOAD cached, shared by
  // the workers, and the time limit of one run of a script in ms (0: none;
  // CONFIG SET busy-reply-threshold or lua-time-limit, Redis's two names of it).
  ScriptCache scripts;
  std::atomic<uint64_t> script_time_limit_ms{5000};

  // Keyspace notifications (notify.h): the classes published, from
  // proxy.notify_keyspace_events, then CONFIG SET notify-keyspace-events.
  std::atomic<uint32_t> notify_flags{notify::ParseFlags(config.proxy.notify_keyspace_events).value_or(0)};

  // INFO commandstats and errorstats (worker_info.cc), cleared by CONFIG
  // RESETSTAT: per worker (written by it alone, summed by INFO) and command
  // of the table or subcommand, at [worker * CommandStatsSlots() + index]
  // (CommandStatsIndex), sized before the workers run; and the error
  // replies by their code (ERR, WRONGTYPE ...).
  struct alignas(64) CommandStats {
    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> nsec{0};
    std::atomic<uint64_t> rejected{0};  // refused before they ran (arity, NOAUTH, key errors)
    std::atomic<uint64_t> failed{0};    // ran and answered an error
  };
  std::unique_ptr<CommandStats[]> command_stats;
  std::atomic<uint64_t> error_replies{0};
  std::mutex error_stats_mutex;
  std::map<std::string, uint64_t, std::less<>> error_stats;  // guarded by error_stats_mutex

  // SLOWLOG (worker_slowlog.cc): CONFIG SET slowlog-log-slower-than (µs;
  // negative: none logged) and slowlog-max-len, and the entries, newest
  // first.
  struct SlowlogEntry {
    uint64_t id = 0;
    int64_t unix_seconds = 0;
    uint64_t usec = 0;
    std::vector<std::string> args;  // trimmed and redacted as Redis does
    std::string peer;
    std::string name;
  };
  std::atomic<int64_t> slowlog_slower_than_us{10000};
  std::atomic<uint64_t> slowlog_max_len{128};
  std::mutex slowlog_mutex;
  std::deque<SlowlogEntry> slowlog;  // guarded by slowlog_mutex
  uint64_t slowlog_next_id = 0;      // guarded by slowlog_mutex
};

class Worker {
 public:
  Worker(SharedState& shared, uint32_t index, txn::ClientOptions client);
  ~Worker();

  // Binds the worker's listening socket (on the caller's thread, so a bad
  // address fails Proxy::Start).
  Status Listen();
  // The loop, until Stop(). `ready` gets the status of creating the
  // txn::Client on this thread.
  void Run(std::promise<Status> ready);
  void Stop();
  // The eventfd other workers poke after a write (SharedState::wake_fds).
  int wake_fd() const { return wake_fd_; }

 private:
  struct Job;

  // Event loop pieces (worker.cc).
  void Loop();
  // How long the loop may block in epoll_wait (-1: until an event).
  int LoopTimeout();
  // Takes the sockets' events; true when Stop() was called.
  bool HandleEvents(std::span<const epoll_event> events);
  void Accept();
  void ReadFrom(Session& s);
  void Parse(Session& s);
  void WriteTo(Session& s);
  void Close(int fd);
  bool Runnable(const Session& s) const;
  // The longest user key: a collection's pages live at the key plus
  // kPageKeyOverhead bytes, within kv.max_key_bytes.
  size_t MaxUserKeyBytes() const;
  // Why `key` may not be a user's key (empty, too long, a page's prefix), as
  // the error reply's text; "" when it may.
  std::string KeyError(std::string_view key) const;
  // A job's view: the keys its commands name beyond their declared ones
  // (SORT's patterns) are as long as MaxUserKeyBytes at most.
  DataView NewView(uint64_t now, uint64_t seed) const;

  // Taking a turn's jobs (worker_take.cc).
  // Takes this turn's jobs into `jobs` (REQUIRES: empty).
  void TakeJobs(std::vector<Job>& jobs);
  static bool QueueableInMulti(const Command& c);
  bool TakeCommand(Session& s, std::vector<Job>& jobs, struct TurnState& state);
  bool TakeTransaction(Session& s, std::vector<Job>& jobs, struct TurnState& state);
  bool TakeDataJob(Session& s, std::vector<Command> block, bool multi, std::vector<Job>& jobs,
                   struct TurnState& state);
  struct JobShape {
    bool reads = false;
    bool writes = false;
    bool notifying = false;  // a write whose keyspace events are published
  };
  JobShape ShapeJob(const Session& s, Job& j);
  // kBehind: a woken blocking command with an older waiter on its keys that
  // is still to see a write (TakeLocks); it parks again (ParkBehind).
  enum class WriteTaken { kOwn, kJoined, kWait, kBehind };
  WriteTaken TakeLocks(Session& s, Job& j, bool notifying, std::vector<Job>& jobs, struct TurnState& state);
  // Whether `j`, a blocking command that has not blocked before, waits (as
  // for a held lock: the waiters' runs unlock the slots and poke this
  // worker) because a waiter on its slots is still to see a write; at most
  // kMaxWaitBehindWaitersMs a command (Session::behind_waiters_since_ms).
  bool NewcomerWaits(Session& s, const Job& j);
  // The error reply for a command that cannot run (NOAUTH, unknown, arity,
  // keys), or "".
  std::string CheckCommand(const Session& s, const Command& c) const;
  Job* LeaderFor(const Job& j, std::vector<Job>& jobs);
  // Whether a read-modify-write taken in this turn holds one of `slots`.
  bool HeldByThisTurn(const std::vector<uint32_t>& slots) const;
  // A session whose blocked command a write woke (it runs again this turn).
  bool Woken(const Session& s) const;
  // Whether read job `j` names a key a woken blocked command of this turn
  // holds (it then waits for the next turn, to see that command's effect).
  bool ReadsWokenKeys(const Job& j) const;
  // The read of this turn with exactly `j`'s keys that `j` (a read) may
  // follow, else nullptr; registers `j` as the leader for its keys when it
  // may lead (then `j` must be pushed onto `jobs` next).
  Job* ReadLeaderFor(const Job& j, std::vector<Job>& jobs);
  // Answers the session's front command with `reply` (and pops it).
  // How INFO commandstats counts an answer (CountAnswered): a call, a
  // refusal before the command ran, or neither (+QUEUED: counted at EXEC).
  enum class Counted { kCall, kRejected, kNone };
  void Answer(Session& s, std::vector<Job>& jobs, std::string reply, Counted counted = Counted::kCall);
  // Answers with an error; inside MULTI the EXEC will abort. Returns true.
  bool Refuse(Session& s, std::vector<Job>& jobs, std::string_view message);

  // A turn (worker_turn.cc).
  void Turn();
  void RunJobs(std::vector<Job>& jobs);
  // The transactions of one round trip, and the job each belongs to.
  struct RoundTrip {
    std::vector<txn::BatchTxn> batch;
    std::vector<Job*> owners;
    // The first round's writes left for the write round (PlaceFirstRound).
    std::vector<Job*> late_writers;
  };
  RoundTrip PlaceFirstRound(std::vector<Job>& jobs, uint64_t now);
  std::vector<Job*> ReadUntilComplete(RoundTrip done, uint64_t now);
  bool ReadOneSided(Job& job, uint64_t now);
  // How a job's reads went in PlaceFirstRound: not yet, done one-sidedly
  // (its commands ran), or placed in the round (its sessions into `reading`).
  enum class FirstRead { kNone, kDone, kInRound };
  using Sessions = std::unordered_set<const Session*>;
  FirstRead ReadFirst(Job& job, uint64_t now, RoundTrip& first, Sessions& reading);
  // Whether the job's session, or a follower's, has a read in `reading`.
  static bool SessionReads(const Job& job, const Sessions& reading);
  // A write ready in the first round: placed there, or after a read of its
  // session (after_read) left for the write round.
  void PlaceEarlyWrite(Job& job, bool after_read, RoundTrip& first);
  // A write job's write set (a read-modify-write's after what it read) into
  // `round`, or its error answered.
  void PlaceWriteSet(Job& job, RoundTrip& round);
  // Sets txn's IF_UNCHANGED condition from the job's read versions when
  // they and the write set are all on one partition (the kv-node checks one
  // partition's keys); else the write goes out without (docs/proxy.md,
  // "Several proxies").
  void CheckedAgainst(Job& job, txn::BatchTxn& txn) const;
  // A write of `job` failed with `status`: when a kv-node refused it because
  // a key it read changed since (IF_UNCHANGED), places the job's reads in
  // `round` to run it again and returns true (at most kMaxConflicts times;
  // then it is answered an error).
  bool ReadAgainAfterConflict(Job& job, const Status& status, RoundTrip& round);
  void WriteReadModifyWrites(std::vector<Job*> writers, uint64_t now);
  void FinishJobs(std::vector<Job>& jobs);
  void ReplyToReaders(std::vector<Job>& jobs);
  bool WatchedKeyChanged(const Job& job, const txn::BatchTxn& txn) const;
  void RecordWatched(const Job& job, const txn::BatchTxn& txn);

  // The keyspace (worker_keyspace.cc): KEYS, SCAN, RANDOMKEY, and the
  // sweeper (worker 0) that deletes expired keys and the pages of
  // collections that are gone, through its own session of internal
  // commands.
  bool Listed(const KeyFilter& f, uint32_t partition, std::string_view key, std::string_view head) const;
  void Keys(const Command& c, resp::Writer& out);
  void Scan(const Command& c, resp::Writer& out);
  void RandomKey(resp::Writer& out);
  // At most one kv SCAN of kSweepKeys keys per kSweepIdleMs (kSweepBusyMs
  // while it finds work), when the sweeper's queue is empty.
  void Sweep(uint64_t now);
  static constexpr uint32_t kSweepKeys = 1024;
  static constexpr uint64_t kSweepIdleMs = 100;
  static constexpr uint64_t kSweepBusyMs = 10;

  // Blocking commands (worker_block.cc).
  // Parks the job's session with its command back at the front of its queue.
  void Park(Job& job);
  // A kRunAgain job: its command goes back to the front of its session's
  // queue with the keys its script did not declare (Command::script_keys),
  // or, past kMaxScriptReruns, is answered with an error (the job becomes kDone).
  void RunAgainWithKeys(Job& job);
  // Answers parked sessions whose time is up, and makes runnable those whose
  // keys were written. Returns the milliseconds until the next deadline
  // (-1: none).
  int CheckParked();
  // Pokes every worker's wake_fd (after writes, when sessions are parked).
  void WakeParked();
  // Pokes the workers waiting for a lock (SharedState::waiting_for_locks),
  // after this worker unlocked.
  void WakeLockWaiters();
  // Copies the client's read-path counters to SharedState::read_paths.
  void PublishReadPath();
  void Unpark(Session& s);
  // CLIENT UNBLOCK id [TIMEOUT|ERROR] (any worker).
  void UnblockClient(const Command& c, resp::Writer& out);
  // Answers this worker's sessions an UNBLOCK marked (before a turn).
  void ApplyUnblocks();
  // A woken blocked command is about to run again: UNBLOCK finds it not
  // blocked from now on, and a mark already made goes with the run
  // (Session::unblock).
  void ClaimForRun(Session& s);
  // ClaimForRun's session was not run after all (its lock is held): UNBLOCK
  // may find it again.
  void StillBlocked(Session& s);
  // Answers the session's blocked command at its timeout or for an UNBLOCK
  // (kTimeout: the timeout reply; kError: -UNBLOCKED) and ends its wait.
  // `unblocked`: by CLIENT UNBLOCK (else the timeout).
  void EndBlocked(Session& s, Unblock how, bool unblocked);
  // The waiter queues (SharedState::waiters): join or update them at a park,
  // leave them when the blocking command is done, and whether a woken
  // session's turn has come.
  void QueueWaiter(Session& s);
  void DequeueWaiter(Session& s);
  // CLIENT REPLY: marks `c` (the session's front command) silent once, the
  // first time a turn looks at it, and uses up a SKIP (worker_take.cc).
  void DecideSilence(Session& s, Command& c);
  // A write reached the parked session: one of its slots was written since
  // it parked, and no older waiter of those slots is still to see that write.
  bool WriteReached(const Session& s);
  // The second test of WriteReached alone, for a woken session about to run:
  // a write (on another worker) may have come since it woke, which an older
  // waiter is to see first. REQUIRES: the job's locks held (no epoch of its
  // slots moves meanwhile).
  bool StillFirstInLine(const Session& s);
  // A woken session that is not first in line after all parks again without
  // running, its epochs and place in line those of its last run: the older
  // waiter's run (or leaving) wakes it again.
  void ParkBehind(Session& s);
  // With several proxies: the parked session runs again to see another
  // proxy's writes — kRemoteWritePollMs after it parked when it is the
  // oldest waiter on one of its slots, else kRemoteWritePollBehindMs after
  // (worker_block.cc).
  bool PollsRemoteWrites(Session& s, uint64_t now);
  static constexpr uint64_t kRemoteWritePollMs = 100;
  // NewcomerWaits: how long a blocking command not blocked before waits at
  // most for the waiters a write woke (they run within milliseconds; one
  // whose client reads no replies may not run at all).
  static constexpr uint64_t kMaxWaitBehindWaitersMs = 1000;
  static constexpr uint64_t kRemoteWritePollBehindMs = 1000;
  // WriteReached's tests, for any session. REQUIRES: shared_.waiters_mutex held.
  bool FirstInLineLocked(uint64_t seq, const std::vector<uint32_t>& slots) const;
  bool BeingServedLocked(const SharedState::Blocked& b) const;
  // Enters (or enters again) the session in shared_.blocked with `unblock`.
  // REQUIRES: shared_.waiters_mutex held.
  void RegisterBlockedLocked(const Session& s, Unblock unblock);
  void ApplyCommands(Job& job);
  void ApplyTo(Job& job, DataView& view);
  void ApplyOne(Job& job, const Command& c, DataView& view, resp::Writer& out);
  // Guesses, from page_cache_, the pages the job's commands will need, so
  // its first read round reads them too (job.extra_keys).
  void Predict(Job& job, uint64_t now);
  // Runs the job's commands on what a read round returned. False when they
  // need keys not read yet: the job reads again with them.
  bool ApplyReads(Job& job, txn::BatchTxn& txn, uint64_t now);
  // The job's write set into txn (each key on its replicas); an error line
  // when a value is over kv.max_value_bytes (nothing placed then matters).
  std::string PlaceWrites(Job& job, txn::BatchTxn& txn);
  // The job's writes to page_cache_ (the upper levels of collections).
  void OfferWrites(const Job& job);
  void PlaceReads(const Job& job, txn::BatchTxn& txn);
  // worker_absent.cc: a read-modify-write of keys the worker has never seen
  // runs on "absent" and writes with IF_ABSENT in the first round, without
  // a read. GuessAbsent (REQUIRES: MayGuessAbsent(job)): true when it placed
  // the job's writes in `txn`.
  // GuessedWriteDone: after that round, false when the guess was refused
  // (the job then reads like any other).
  bool MayGuessAbsent(const Job& job) const;
  bool GuessAbsent(Job& job, uint64_t now, txn::BatchTxn& txn);
  bool GuessedWriteDone(Job& job, const Status& status);
  // How the guesses fared lately: +1 for one that held, -2 for a refused one
  // (it cost a round more than reading first), within [0, kMaxScore]; at 0
  // only every kProbeEvery-th candidate guesses, to notice when keys are new
  // again. So the worker guesses while about two in three hold.
  struct AbsentGuesses {
    static constexpr int kMaxScore = 32;
    static constexpr uint32_t kProbeEvery = 32;
    int score = kMaxScore / 2;
    uint32_t skipped = 0;
    bool off = false;  // a kv-node refused the flag (older than it)
    bool Allowed();
    void Held();
    void Failed();
  };
  void RunWithFailover(std::vector<txn::BatchTxn>& batch, std::vector<Job*>& owners, bool reads);
  uint32_t ReadPartition(std::string_view key, uint64_t now_ms) const;
  // Gives `reply` to the job and every command joined into it: they share
  // one write set, so what becomes of it becomes of all of them.
  void AnswerGroup(Job& job, std::string reply);
  // Drops what a run of the job's commands answered (its reply, and what
  // INFO commandstats would count of it): a prediction's, a run replaced.
  static void ForgetRun(Job& job);
  // AnswerGroup with the backend error for `status`.
  void FailJob(Job& job, const Status& status);
  // The error line (without '-') for a backend failure: Redis's OOM error when
  // a kv-node refused a write for kv.maxmemory, "ERR rampart: ..." otherwise.
  // Counts it in backend_errors.
  std::string BackendError(const Status& status);

  // Commands answered without data (worker_commands.cc).
  void ConnectionCommand(Session& s, const Command& c, std::string& reply);
  void ServerCommand(Session& s, const Command& c, std::string& reply);
  void Hello(Session& s, const Command& c, resp::Writer& out);
  // CLIENT and its registry of every worker's sessions (worker_clients.cc).
  void ClientCommand(Session& s, const Command& c, resp::Writer& out);
  void ListClients(const Command& c, resp::Writer& out);
  void KillClients(Session& s, const Command& c, resp::Writer& out);
  // Enters or updates (PublishClient) and erases (ForgetClient) the session
  // in SharedState::clients.
  void PublishClient(const Session& s);
  void ForgetClient(const Session& s);
  // Closes this worker's sessions a KILL marked (before a turn).
  void ApplyKills();
  // Marks worker `worker`'s entry of a per-worker `pending` flag array of
  // SharedState and wakes it; any thread.
  void Wake(std::atomic<bool>* pending, uint32_t worker);
  // SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB
  // (worker_pubsub.cc).
  void PubSubCommand(Session& s, const Command& c, resp::Writer& out);
  enum class Channels { kPlain, kShard };
  void Publish(const Command& c, Channels kind, resp::Writer& out);
  // Keyspace notifications (notify.h): a done job's events, on this proxy
  // and forwarded to the others, in order.
  void PublishEvents(const DataView& view);
  // Queues `message` on `channel` for this proxy's subscribers (and
  // forwards it to the other proxies when `forward`), adding the workers to
  // wake to `woken`; the number of this proxy's receivers.
  // REQUIRES: shared_.pubsub_mutex held.
  int64_t PublishLocked(const std::string& channel, std::string_view message, bool shard, bool forward,
                        std::vector<uint32_t>& woken);
  void PubSubIntrospection(const Command& c, resp::Writer& out);
  void Subscribe(Session& s, const Command& c, resp::Writer& out);
  // Writes the messages published to this worker's sessions (before a turn).
  void DeliverMessages();
  // Takes the session out of every channel and pattern (it closes).
  void DropSubscriptions(Session& s);
  void CommandCommand(const Command& c, resp::Writer& out);
  void CommandGetKeys(const Command& c, resp::Writer& out);
  // worker_config.cc.
  void ConfigCommand(const Command& c, resp::Writer& out);
  void FunctionCommand(const Command& c, resp::Writer& out);
  // SCRIPT LOAD / EXISTS / FLUSH / KILL / HELP (worker_config.cc).
  void ScriptCommand(const Command& c, resp::Writer& out);
  void ConfigSet(const Command& c, resp::Writer& out);
  std::vector<std::pair<std::string, std::string>> ConfigValues() const;
  // INFO (worker_info.cc): the text of `sections` (lower case; empty:
  // Redis's default ones).
  std::string Info(const std::vector<std::string>& sections, std::optional<uint64_t> keys,
                   const std::optional<txn::StoreStats>& store);
  std::string StatsSection();
  std::string CommandStatsSection() const;
  std::string ErrorStatsSection();
  // Counts an answer about to go out: its command's calls, time (`nsec`, its
  // share of the turn), refusal or failure, and its error replies; of a
  // blocking command that parks, the call.
  void CountAnswered(const Job& j, uint64_t nsec);
  void CountError(std::string_view reply);
  void CountUnblocked(const Command& c, std::string_view reply);
  // SLOWLOG (worker_slowlog.cc): logs the command `args` of session `s` when
  // its time (`nsec`) reaches slowlog-log-slower-than.
  void SlowlogIfSlow(const Session& s, const std::vector<std::string>& args, uint64_t nsec);
  void SlowlogCommand(const Command& c, resp::Writer& out);
  // REQUIRES: shared_.slowlog_mutex held.
  void TrimSlowlogLocked(uint64_t max_len);
  // This worker's counters of `spec`; nullptr for a command not in the table.
  // This worker's counters at a CommandStatsIndex, or nullptr for -1.
  SharedState::CommandStats* StatsOf(int index);
  void CountTurn(const std::vector<Job>& jobs, std::chrono::steady_clock::time_point started);
  // Runs a turn's jobs and writes their replies, in the order they were taken.
  void AnswerJobs(std::vector<Job>& jobs, std::chrono::steady_clock::time_point started);
  void ResetStats();
  void FailReply(resp::Writer& out, const Status& status);

  SharedState& shared_;
  const uint32_t index_;
  txn::ClientOptions client_options_;
  std::unique_ptr<txn::Client> client_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  int wake_fd_ = -1;
  uint32_t parked_here_ = 0;  // sessions of this worker that are parked
  std::unordered_map<int, std::unique_ptr<Session>> sessions_;
  std::vector<int> order_;        // session fds in accept order
  uint64_t next_arrival_ = 0;     // Command::arrival of the next command parsed
  std::vector<uint64_t> down_until_ms_;  // per partition: read from another replica until
  bool blocked_on_locks_ = false;
  // Of the jobs' DataView::Random(), which draws the ids of new collections
  // and long strings: a random start, so that two workers, proxies or runs
  // do not give new values at one key the same id (the sweeper tells a
  // value's pages from an earlier one's by the id).
  uint64_t next_seed_ = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  AbsentGuesses absent_;
  // This worker's Lua interpreter: EVAL and friends run in it (ApplyTo).
  ScriptRunner scripts_{shared_.scripts, shared_.script_time_limit_ms,
                       [this](std::string_view key) { return KeyError(key); }};
  // A kv-node refused IF_UNCHANGED as an unknown flag (older than it): this
  // worker writes read-modify-writes unchecked from then on.
  bool unchanged_off_ = false;
  // This turn's read-modify-writes by the lock slots they hold: lock slot ->
  // index of the job in the turn (Worker::LeaderFor).
  std::unordered_map<uint32_t, size_t> turn_owners_;
  // This turn's reads that others may follow, by their keys (each key's
  // length and bytes, in order) -> index of the job (Worker::ReadLeaderFor).
  std::unordered_map<std::string, size_t> read_leaders_;
  // A turn's jobs, kept between turns for the vector's capacity: a turn of
  // 800 pipelined commands does not grow (and move) it again each time.
  std::vector<Job> turn_jobs_;
  // The lock slots of this turn's woken blocked commands (Worker::TakeJobs).
  std::unordered_set<uint32_t> woken_slots_;
  uint64_t next_taken_ = 0;  // Job::taken of the next job or follower
  PageCache page_cache_{16 << 20};
  std::mt19937_64 random_{std::random_device{}()};
  std::unique_ptr<Session> sweeper_;  // worker 0's; nullptr on the others
  uint64_t next_sweep_ms_ = 0;
  uint32_t sweep_partition_ = 0;
  uint64_t sweep_from_ = 0;
  std::vector<char> read_buffer_ = std::vector<char>(64 << 10);
};

// Milliseconds since the Unix epoch (wall clock: expiry times).
uint64_t NowMs();

}  // namespace rampart::proxy
