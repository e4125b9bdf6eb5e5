// One turn of a worker: take a batch of commands from all sessions, run their
// transactions together, reply. The ordering rules (docs/proxy.md, "A turn"):
//  - a session's commands are taken in order, and a command that must see an
//    earlier one's write waits for the next turn: a read or a
//    read-modify-write never follows a write of the same session in a turn,
//    and nothing follows a read-modify-write or a whole-store command;
//  - every write holds its keys' locks (LockTable) from before its read until
//    its write is done — exclusively for a read-modify-write, shared for a
//    blind write; a command whose lock is taken waits for a later turn. Blind
//    writes of one key in one turn (shared) keep their order through the
//    timestamps RunBatch draws in batch order.
#include <cctype>

#include "kv/memory_budget.h"
#include "proxy/worker.h"

namespace rampart::proxy {

struct Worker::Job {
  Session* session = nullptr;
  enum class Kind { kDone, kRead, kWrite, kServer };
  Kind kind = Kind::kDone;  // kDone: `reply` is the answer already
  std::vector<Command> commands;
  bool multi = false;  // an EXEC: the replies form an array
  std::vector<std::string_view> keys;  // every key the commands declare (views into commands)
  bool needs_read = false;
  std::vector<uint32_t> locks;  // held lock-table slots
  LockTable::Mode lock_mode = LockTable::Mode::kExclusive;
  std::string reply;
  std::optional<DataView> view;
  int attempts = 0;
};

// What a session did in this turn so far.
struct TurnState {
  bool wrote = false;  // a write was taken
  bool rmw = false;    // a read-modify-write was taken
};

namespace {

std::string ErrorReply(std::string_view message) {
  std::string out;
  resp::Writer(&out).Error(message);
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// Redis's wording: ERR unknown command 'foo', with args beginning with: 'a' 'b'
std::string UnknownCommand(const Command& c) {
  std::string msg = StrCat("ERR unknown command '", c.args[0].substr(0, 128), "', with args beginning with: ");
  for (size_t n = 1; n < c.args.size() && msg.size() < 512; ++n) {
    msg += StrCat("'", c.args[n].substr(0, 128), "' ");
  }
  return msg;
}

}  // namespace

std::vector<Worker::Job> Worker::TakeJobs() {
  std::vector<Job> jobs;
  blocked_on_locks_ = false;
  if (order_.empty()) return jobs;
  const size_t max = shared_.config.proxy.batch_max_commands;
  const size_t start = next_first_++ % order_.size();
  for (size_t n = 0; n < order_.size() && jobs.size() < max; ++n) {
    Session& s = *sessions_.at(order_[(start + n) % order_.size()]);
    if (!Runnable(s)) continue;
    TurnState state;
    while (!s.queue.empty() && jobs.size() < max && TakeCommand(s, jobs, state)) {
    }
  }
  return jobs;
}

// Takes the session's next command into `jobs` (or answers it at once).
// Returns false when the session gives no more commands this turn.
bool Worker::TakeCommand(Session& s, std::vector<Job>& jobs, TurnState& state) {
  Command& c = s.queue.front();
  auto answer = [&](std::string reply) {
    Job j;
    j.session = &s;
    j.reply = std::move(reply);
    jobs.push_back(std::move(j));
    s.queue.pop_front();
  };
  auto refuse_in_multi = [&](std::string message) {
    if (s.in_multi) s.multi_failed = true;
    answer(ErrorReply(message));
    return true;
  };
  if (!c.protocol_error.empty()) {
    answer(ErrorReply(c.protocol_error));
    s.queue.clear();
    return false;
  }
  const std::string name = c.spec != nullptr ? std::string(c.spec->name) : Lower(c.args[0]);
  if (!s.authenticated && name != "auth" && name != "hello" && name != "quit") {
    answer(ErrorReply("NOAUTH Authentication required."));
    return true;
  }
  if (c.spec == nullptr) return refuse_in_multi(UnknownCommand(c));
  const std::vector<std::string_view> views = c.Views();
  if (std::string arity = CheckArity(*c.spec, views); !arity.empty()) return refuse_in_multi(arity);
  for (std::string_view key : KeysOf(*c.spec, views)) {
    if (key.empty()) return refuse_in_multi("ERR rampart: empty keys are not supported");
    if (key.size() > shared_.config.kv.max_key_bytes) {
      return refuse_in_multi(StrCat("ERR rampart: a key of ", key.size(),
                                    " bytes is longer than kv.max_key_bytes (",
                                    shared_.config.kv.max_key_bytes, ")"));
    }
  }
  const CommandKind kind = c.spec->kind;

  if (s.in_multi && kind != CommandKind::kTransaction && name != "quit") {
    if (kind == CommandKind::kConnection || kind == CommandKind::kServer) {
      return refuse_in_multi(StrCat("ERR rampart: ", name, " inside MULTI is not supported"));
    }
    s.multi.push_back(std::move(c));
    answer("+QUEUED\r\n");
    return true;
  }

  std::vector<Command> block;
  bool multi = false;
  switch (kind) {
    case CommandKind::kConnection: {
      std::string reply;
      ConnectionCommand(s, c, reply);
      answer(std::move(reply));
      if (s.closing) s.queue.clear();  // QUIT
      return !s.closing;
    }
    case CommandKind::kServer: {
      // Runs after the turn's transactions, so it sees this session's
      // earlier writes; what follows it waits for the next turn.
      Job j;
      j.session = &s;
      j.kind = Job::Kind::kServer;
      j.commands.push_back(std::move(c));
      s.queue.pop_front();
      jobs.push_back(std::move(j));
      return false;
    }
    case CommandKind::kTransaction:
      if (name == "multi") {
        if (s.in_multi) {
          answer(ErrorReply("ERR MULTI calls can not be nested"));
        } else {
          s.in_multi = true;
          answer("+OK\r\n");
        }
        return true;
      }
      if (!s.in_multi) {
        answer(ErrorReply(StrCat("ERR ", name == "exec" ? "EXEC" : "DISCARD", " without MULTI")));
        return true;
      }
      if (name == "discard" || s.multi_failed || s.multi.empty()) {
        const bool aborted = name == "exec" && s.multi_failed;
        const bool empty_exec = name == "exec" && !aborted;
        s.in_multi = s.multi_failed = false;
        s.multi.clear();
        answer(aborted      ? ErrorReply("EXECABORT Transaction discarded because of previous errors.")
               : empty_exec ? std::string("*0\r\n")
                            : std::string("+OK\r\n"));
        return true;
      }
      block = std::move(s.multi);
      s.multi.clear();
      multi = true;
      break;
    case CommandKind::kRead:
    case CommandKind::kWrite:
      block.push_back(std::move(c));
      break;
  }

  // A data job: one command or an EXEC's block.
  Job j;
  j.session = &s;
  j.multi = multi;
  j.commands = std::move(block);
  const Command* first_read = nullptr;
  const Command* first_write = nullptr;
  for (const Command& cmd : j.commands) {
    const auto v = cmd.Views();
    for (std::string_view k : KeysOf(*cmd.spec, v)) j.keys.push_back(k);
    if (cmd.spec->kind == CommandKind::kRead) {
      if (first_read == nullptr) first_read = &cmd;
    } else {
      if (first_write == nullptr) first_write = &cmd;
      j.needs_read = j.needs_read || NeedsRead(*cmd.spec, v);
    }
  }
  auto put_back = [&] {  // not this turn: the block (or command) returns to the session
    if (multi) {
      s.multi = std::move(j.commands);
    } else {
      s.queue.front() = std::move(j.commands[0]);
    }
    return false;
  };
  if (first_read != nullptr && first_write != nullptr) {
    std::string message = StrCat("ERR rampart: a MULTI block must hold only reads or only writes; "
                                 "this one mixes ", first_read->spec->name, " and ",
                                 first_write->spec->name, " (a RAMP transaction reads or writes)");
    s.in_multi = s.multi_failed = false;
    answer(ErrorReply(message));
    return true;
  }
  if (first_read != nullptr) {
    if (state.wrote) return put_back();
    j.kind = Job::Kind::kRead;
  } else {
    if (state.rmw || (j.needs_read && state.wrote)) return put_back();
    j.locks = shared_.locks.SlotsOf(j.keys);
    j.lock_mode = j.needs_read ? LockTable::Mode::kExclusive : LockTable::Mode::kShared;
    if (!shared_.locks.TryLock(j.locks, j.lock_mode)) {
      ++shared_.lock_waits;
      blocked_on_locks_ = true;
      return put_back();
    }
    j.kind = Job::Kind::kWrite;
    state.wrote = true;
    state.rmw = state.rmw || j.needs_read;
  }
  if (multi) s.in_multi = false;
  s.queue.pop_front();  // the command, or EXEC
  jobs.push_back(std::move(j));
  return true;
}

void Worker::Turn() {
  std::vector<Job> jobs = TakeJobs();
  if (jobs.empty()) return;
  RunJobs(jobs);
  for (Job& j : jobs) j.session->out += j.reply;
}

std::string Worker::BackendError(const Status& status) {
  ++shared_.backend_errors;
  if (status.code() == StatusCode::kResourceExhausted &&
      status.message().find(kv::kOutOfMemory) != std::string_view::npos) {
    return "OOM command not allowed when used memory > 'maxmemory'.";
  }
  return StrCat("ERR rampart: ", status.ToString());
}

void Worker::FailJob(Job& job, const Status& status) { job.reply = ErrorReply(BackendError(status)); }

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
}

std::string Worker::PlaceWrites(Job& job, txn::BatchTxn& txn) {
  const KvConfig& kv = shared_.config.kv;
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
    }
  }
  return "";
}

void Worker::ApplyCommands(Job& job) {
  job.reply.clear();
  resp::Writer out(&job.reply);
  out.SetProtocol(job.session->protocol);
  if (job.multi) out.Array(job.commands.size());
  for (const Command& c : job.commands) {
    const std::vector<std::string_view> args = c.Views();
    c.spec->apply(args, *job.view, out);
  }
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
  // Round trip 1: reads (of read jobs and read-modify-writes) and the
  // writes of blind writes (computed now).
  std::vector<txn::BatchTxn> batch;
  std::vector<Job*> owners;
  for (Job& j : jobs) {
    if (j.kind == Job::Kind::kRead || (j.kind == Job::Kind::kWrite && j.needs_read)) {
      PlaceReads(j, batch.emplace_back());
      owners.push_back(&j);
    } else if (j.kind == Job::Kind::kWrite) {
      j.view.emplace(now);
      ApplyCommands(j);
      txn::BatchTxn txn;
      if (std::string error = PlaceWrites(j, txn); !error.empty()) {
        j.reply = ErrorReply(error);
      } else if (!txn.writes.empty()) {
        batch.push_back(std::move(txn));
        owners.push_back(&j);
      }
    }
  }
  RunWithFailover(batch, owners, /*reads=*/true);

  // Round trip 2: the writes of read-modify-writes.
  std::vector<txn::BatchTxn> writes;
  std::vector<Job*> writers;
  for (size_t i = 0; i < batch.size(); ++i) {
    Job& j = *owners[i];
    txn::BatchTxn& txn = batch[i];
    if (!txn.status.ok()) {
      FailJob(j, txn.status);
      continue;
    }
    if (txn.reads.empty()) continue;  // a blind write, done
    j.view.emplace(now);
    for (size_t k = 0; k < txn.reads.size(); ++k) j.view->Seed(txn.reads[k].key, std::move(txn.values[k]));
    ApplyCommands(j);
    if (j.kind != Job::Kind::kWrite) continue;
    txn::BatchTxn w;
    w.after_ts = txn.read_ts;  // the write orders after the versions it read
    if (std::string error = PlaceWrites(j, w); !error.empty()) {
      j.reply = ErrorReply(error);
    } else if (!w.writes.empty()) {
      writes.push_back(std::move(w));
      writers.push_back(&j);
    }
  }
  if (!writes.empty()) {
    RunWithFailover(writes, writers, /*reads=*/false);
    for (size_t i = 0; i < writes.size(); ++i) {
      if (!writes[i].status.ok()) FailJob(*writers[i], writes[i].status);
    }
  }
  for (Job& j : jobs) {
    if (!j.locks.empty()) shared_.locks.Unlock(j.locks, j.lock_mode);
    if (j.kind == Job::Kind::kServer) ServerCommand(*j.session, j.commands[0], j.reply);
  }
}

}  // namespace rampart::proxy
