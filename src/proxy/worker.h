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
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "proxy/data_view.h"
#include "proxy/hash_ring.h"
#include "proxy/lock_table.h"
#include "proxy/resp.h"
#include "proxy/session.h"
#include "txn/client.h"

namespace rampart::proxy {

struct SharedState {
  SharedState(ClusterConfig c, HashRing r) : config(std::move(c)), ring(std::move(r)) {}
  const ClusterConfig config;
  const HashRing ring;
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

 private:
  struct Job;

  // Event loop pieces (worker.cc).
  void Accept();
  void ReadFrom(Session& s);
  void Parse(Session& s);
  void WriteTo(Session& s);
  void Close(int fd);
  bool Runnable(const Session& s) const;

  // A turn (worker_turn.cc).
  void Turn();
  std::vector<Job> TakeJobs();
  bool TakeCommand(Session& s, std::vector<Job>& jobs, struct TurnState& state);
  void RunJobs(std::vector<Job>& jobs);
  void ApplyCommands(Job& job);
  std::string PlaceWrites(Job& job, txn::BatchTxn& txn);
  void PlaceReads(const Job& job, txn::BatchTxn& txn);
  void RunWithFailover(std::vector<txn::BatchTxn>& batch, std::vector<Job*>& owners, bool reads);
  uint32_t ReadPartition(std::string_view key, uint64_t now_ms) const;
  void FailJob(Job& job, const Status& status);
  // The error line (without '-') for a backend failure: Redis's OOM error when
  // a kv-node refused a write for kv.maxmemory, "ERR rampart: ..." otherwise.
  // Counts it in backend_errors.
  std::string BackendError(const Status& status);

  // Commands answered without data (worker_commands.cc).
  void ConnectionCommand(Session& s, const Command& c, std::string& reply);
  void ServerCommand(Session& s, const Command& c, std::string& reply);
  void Hello(Session& s, const Command& c, resp::Writer& out);
  void ClientCommand(Session& s, const Command& c, resp::Writer& out);
  void CommandCommand(const Command& c, resp::Writer& out);
  void ConfigCommand(const Command& c, resp::Writer& out);
  std::string Info(std::string_view section, std::optional<uint64_t> keys,
                   const std::optional<txn::StoreStats>& store);
  void FailReply(resp::Writer& out, const Status& status);

  SharedState& shared_;
  const uint32_t index_;
  txn::ClientOptions client_options_;
  std::unique_ptr<txn::Client> client_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::unordered_map<int, std::unique_ptr<Session>> sessions_;
  std::vector<int> order_;        // session fds in accept order, for fair turns
  size_t next_first_ = 0;         // rotates the session a turn starts with
  std::vector<uint64_t> down_until_ms_;  // per partition: read from another replica until
  bool blocked_on_locks_ = false;
  std::vector<char> read_buffer_ = std::vector<char>(64 << 10);
};

// Milliseconds since the Unix epoch (wall clock: expiry times).
uint64_t NowMs();

}  // namespace rampart::proxy
