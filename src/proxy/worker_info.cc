// INFO's text, section by section as Redis 7.0 selects and orders them, and
// the counts behind commandstats and errorstats (SharedState::command_stats,
// error_stats): every answer a turn sends is counted once (Worker::CountTurn),
// with an equal share of the turn's time as its `usec` — a turn runs its
// commands together, so no command has a time of its own.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/size.h"
#include "proxy/worker_job.h"

namespace rampart::proxy {
namespace {

// Redis's sections, in the order INFO writes them, and whether "default"
// (or no argument) includes each. Those rampart has no text for (modules,
// persistence, latencystats, cluster) are left out.
struct Section {
  std::string_view name;
  bool in_default;
};
constexpr Section kSections[] = {
    {"server", true},       {"clients", true},    {"memory", true},      {"stats", true},  {"replication", true},
    {"cpu", true},          {"commandstats", false}, {"errorstats", true}, {"keyspace", true},
};

// "12.345678", as Redis prints a struct timeval.
std::string Seconds(const timeval& tv) {
  char text[48];
  std::snprintf(text, sizeof text, "%ld.%06ld", static_cast<long>(tv.tv_sec), static_cast<long>(tv.tv_usec));
  return text;
}

std::string CpuSection() {
  rusage self{}, children{}, thread{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  getrusage(RUSAGE_THREAD, &thread);  // the worker that answers
  return StrCat("# CPU\r\nused_cpu_sys:", Seconds(self.ru_stime), "\r\nused_cpu_user:", Seconds(self.ru_utime),
                "\r\nused_cpu_sys_children:", Seconds(children.ru_stime), "\r\nused_cpu_user_children:",
                Seconds(children.ru_utime), "\r\nused_cpu_sys_main_thread:", Seconds(thread.ru_stime),
                "\r\nused_cpu_user_main_thread:", Seconds(thread.ru_utime), "\r\n");
}

// The code of an error reply, as Redis's afterErrorReply reads it: the word
// after '-' when a space follows it within the first 32 bytes, else "ERR"
// ("-WRONGTYPE Operation ..." → "WRONGTYPE").
std::string_view ErrorCode(std::string_view reply) {
  reply = reply.substr(0, reply.find('\r'));  // this error's line (a block's replies follow it)
  const size_t space = reply.substr(0, 32).find(' ');
  if (space == std::string_view::npos) return "ERR";
  return reply.substr(1, space - 1);
}

// A name as INFO may print it: '#', ':', CR and LF become '_' (Redis's
// getSafeInfoString).
std::string SafeInfoName(std::string_view name) {
  std::string safe(name);
  std::replace_if(safe.begin(), safe.end(), [](char c) { return c == '#' || c == ':' || c == '\r' || c == '\n'; }, '_');
  return safe;
}

}  // namespace

std::string Worker::Info(const std::vector<std::string>& sections, std::optional<uint64_t> keys,
                         const std::optional<txn::StoreStats>& store) {
  auto asked = [&](const Section& s) {
    if (sections.empty()) return s.in_default;
    return std::any_of(sections.begin(), sections.end(), [&](const std::string& a) {
      return a == s.name || a == "all" || a == "everything" || (a == "default" && s.in_default);
    });
  };
  const ProxyConfig& pc = shared_.config.proxy;
  std::vector<std::string> texts;
  for (const Section& s : kSections) {
    if (!asked(s)) continue;
    const std::string_view name = s.name;
    if (name == "server") {
      texts.push_back(StrCat("# Server\r\nredis_version:", kRedisVersion, "\r\nredis_mode:standalone\r\n",
                             "rampart_cluster:", shared_.config.name, "\r\nos:Linux\r\narch_bits:64\r\n",
                             "process_id:", getpid(), "\r\ntcp_port:", pc.port, "\r\nuptime_in_seconds:",
                             (NowMs() - shared_.started_ms) / 1000, "\r\nexecutable:rampart proxy\r\n"));
    } else if (name == "clients") {
      texts.push_back(StrCat("# Clients\r\nconnected_clients:", shared_.connected.load(),
                             "\r\nmaxclients:", pc.max_clients, "\r\nblocked_clients:", shared_.parked.load(), "\r\n"));
    } else if (name == "memory") {
      // Versions on the kv-nodes (all replicas), as the arenas count them:
      // pages in use; the limit is kv.maxmemory per node.
      const uint64_t limit = shared_.config.kv.maxmemory * shared_.config.nodes.size();
      std::string text = "# Memory\r\n";
      if (store.has_value()) {
        text += StrCat("used_memory:", store->used_bytes, "\r\nused_memory_human:", FormatSize(store->used_bytes),
                       "\r\nrampart_reserved_memory:", store->reserved_bytes, "\r\nrampart_versions:",
                       store->versions, "\r\n");
      }
      texts.push_back(text + StrCat("maxmemory:", limit, "\r\nmaxmemory_human:", FormatSize(limit),
                                    "\r\nmaxmemory_policy:noeviction\r\nnumber_of_cached_scripts:",
                                    shared_.scripts.size(), "\r\n"));
    } else if (name == "stats") {
      texts.push_back(StatsSection());
    } else if (name == "replication") {
      texts.push_back("# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n");
    } else if (name == "cpu") {
      texts.push_back(CpuSection());
    } else if (name == "commandstats") {
      texts.push_back(CommandStatsSection());
    } else if (name == "errorstats") {
      texts.push_back(ErrorStatsSection());
    } else if (name == "keyspace") {
      std::string text = "# Keyspace\r\n";
      if (keys.has_value() && *keys > 0) text += StrCat("db0:keys=", *keys, ",expires=0,avg_ttl=0\r\n");
      // The pages of paged collections (docs/collections.md), every replica
      // counted: not keys to Redis clients, but memory.
      if (store.has_value()) text += StrCat("rampart_collection_pages:", store->internal_keys, "\r\n");
      texts.push_back(std::move(text));
    }
  }
  std::string info;
  for (const std::string& t : texts) info += info.empty() ? t : "\r\n" + t;
  return info;
}

std::string Worker::StatsSection() {
  const ProxyConfig& pc = shared_.config.proxy;
  const uint64_t turns = shared_.turns.load();
  const uint64_t txns = shared_.backend_transactions.load();
  uint64_t slot_reads = 0, slot_fallbacks = 0, repair_rounds = 0;
  for (uint32_t w = 0; w < shared_.worker_count; ++w) {
    slot_reads += shared_.read_paths[w].slot_reads.load(std::memory_order_relaxed);
    slot_fallbacks += shared_.read_paths[w].slot_fallbacks.load(std::memory_order_relaxed);
    repair_rounds += shared_.read_paths[w].repair_rounds.load(std::memory_order_relaxed);
  }
  std::string text = StrCat(
      "# Stats\r\ntotal_connections_received:", shared_.connections_received.load(),
      "\r\ntotal_commands_processed:", shared_.commands.load(),
      "\r\nrejected_connections:", shared_.rejected_connections.load(),
      "\r\ntotal_error_replies:", shared_.error_replies.load(), "\r\nrampart_workers:", shared_.worker_count,
      "\r\nrampart_aggregation:", pc.aggregate ? "on" : "off", "\r\nrampart_isolation:", pc.isolation,
      "\r\nrampart_replicas:", shared_.ring.replicas(), "\r\nrampart_turns:", turns,
      "\r\nrampart_backend_transactions:", txns, "\r\nrampart_transactions_per_turn:",
      turns == 0 ? 0.0 : static_cast<double>(txns) / static_cast<double>(turns),
      "\r\nrampart_lock_waits:", shared_.lock_waits.load(), "\r\nrampart_joined_commands:", shared_.joined.load(),
      "\r\nrampart_joined_reads:", shared_.joined_reads.load(),
      "\r\nrampart_absent_writes:", shared_.absent_writes.load(),
      "\r\nrampart_absent_refused:", shared_.absent_refused.load(),
      "\r\nrampart_write_conflicts:", shared_.write_conflicts.load(),
      "\r\nrampart_script_reruns:", shared_.script_reruns.load(),
      "\r\nrampart_extra_read_rounds:", shared_.read_rounds.load(), "\r\nrampart_failovers:", shared_.failovers.load(),
      "\r\nrampart_one_sided_reads:", slot_reads, "\r\nrampart_one_sided_fallbacks:", slot_fallbacks,
      "\r\nrampart_ramp_repair_rounds:", repair_rounds,
      "\r\nrampart_unreachable_partitions:", client_->unreachable_partitions(),
      "\r\nrampart_backend_errors:", shared_.backend_errors.load(), "\r\n");
  const PeerPublisher::Stats peers = shared_.peers != nullptr ? shared_.peers->stats() : PeerPublisher::Stats{};
  return text + StrCat("rampart_pubsub_peers_linked:", peers.linked, "\r\nrampart_pubsub_forwarded:", peers.forwarded,
                       "\r\nrampart_pubsub_dropped:", peers.dropped, "\r\n");
}

// cmdstat_<name>:calls=…,usec=…,usec_per_call=…,rejected_calls=…,failed_calls=…
// for every command counted since the start (or CONFIG RESETSTAT).
std::string Worker::CommandStatsSection() const {
  std::string text = "# Commandstats\r\n";
  const size_t slots = CommandStatsSlots();
  for (size_t i = 0; i < slots; ++i) {
    uint64_t calls = 0, nsec = 0, rejected = 0, failed = 0;
    for (uint32_t w = 0; w < shared_.worker_count; ++w) {
      const SharedState::CommandStats& st = shared_.command_stats[w * slots + i];
      calls += st.calls.load(std::memory_order_relaxed);
      nsec += st.nsec.load(std::memory_order_relaxed);
      rejected += st.rejected.load(std::memory_order_relaxed);
      failed += st.failed.load(std::memory_order_relaxed);
    }
    if (calls == 0 && rejected == 0 && failed == 0) continue;
    const uint64_t usec = nsec / 1000;
    char per_call[32];  // Redis divides as a float
    std::snprintf(per_call, sizeof per_call, "%.2f", calls == 0 ? 0.0 : static_cast<float>(usec) / calls);
    text += StrCat("cmdstat_", CommandStatsName(i), ":calls=", calls, ",usec=", usec, ",usec_per_call=", per_call,
                   ",rejected_calls=", rejected, ",failed_calls=", failed, "\r\n");
  }
  return text;
}

std::string Worker::ErrorStatsSection() {
  std::string text = "# Errorstats\r\n";
  std::lock_guard lock(shared_.error_stats_mutex);
  for (const auto& [code, count] : shared_.error_stats) {
    text += StrCat("errorstat_", SafeInfoName(code), ":count=", count, "\r\n");
  }
  return text;
}

void Worker::CountError(std::string_view reply) {
  ++shared_.error_replies;
  const std::string_view code = ErrorCode(reply);
  std::lock_guard lock(shared_.error_stats_mutex);
  // At most 128 codes are kept (Redis 7.0 has no bound; 7.2 has this one): a
  // client inventing codes cannot grow the table; the rest count in
  // total_error_replies only.
  if (auto it = shared_.error_stats.find(code); it != shared_.error_stats.end()) {
    ++it->second;
  } else if (shared_.error_stats.size() < 128) {
    shared_.error_stats.emplace(code, 1);
  }
}

SharedState::CommandStats* Worker::StatsOf(int index) {
  if (index < 0) return nullptr;
  return &shared_.command_stats[index_ * CommandStatsSlots() + static_cast<size_t>(index)];
}

namespace {

void Add(std::atomic<uint64_t>& counter, uint64_t n = 1) { counter.fetch_add(n, std::memory_order_relaxed); }

}  // namespace

void Worker::CountAnswered(const Job& j, uint64_t nsec) {
  if (j.session->internal) return;  // the sweeper's commands
  if (j.kind == Job::Kind::kParked) {  // a blocking command's call, counted when it first parks
    if (SharedState::CommandStats* st = j.woken ? nullptr : StatsOf(j.commands[0].stats)) Add(st->calls);
    return;
  }
  const bool error = !j.reply.empty() && j.reply[0] == '-';
  if (error) CountError(j.reply);
  static const int kExec = CommandStatsIndex(FindCommand("exec"), 1, {});
  const int index = j.multi ? kExec : !j.commands.empty() ? j.commands[0].stats : j.answered_stats;
  SharedState::CommandStats* st = StatsOf(index);
  const bool counted = j.multi || !j.commands.empty() || j.counted == Counted::kCall;
  if (st != nullptr && j.counted == Counted::kRejected && j.commands.empty() && !j.multi) {
    Add(st->rejected);
  } else if (st != nullptr && counted) {
    if (!j.woken) Add(st->calls);
    Add(st->nsec, nsec);
    if (error) Add(st->failed);
    if (index != kExec) SlowlogIfSlow(*j.session, j.commands.empty() ? j.answered_args : j.commands[0].args, nsec);
  }
  for (const ScriptRunner::Call& call : j.script_calls) {  // as Redis counts a script's redis.call
    if (SharedState::CommandStats* c = StatsOf(call.stats)) {
      Add(call.rejected ? c->rejected : c->calls);
      if (call.failed) Add(c->failed);
    }
  }
  if (!j.multi || error) return;  // a block that failed whole ran none of its commands
  for (size_t i = 0; i < j.commands_run && i < j.commands.size(); ++i) {
    if (SharedState::CommandStats* c = StatsOf(j.commands[i].stats)) Add(c->calls);
    SlowlogIfSlow(*j.session, j.commands[i].args, nsec);  // EXEC's commands, not EXEC
  }
  for (const auto& [i, at] : j.failed_at) {
    if (at >= j.reply.size() || j.reply[at] != '-' || i >= j.commands.size()) continue;
    CountError(std::string_view(j.reply).substr(at));
    if (SharedState::CommandStats* c = StatsOf(j.commands[i].stats)) Add(c->failed);
  }
}

void Worker::CountUnblocked(const Command& c, std::string_view reply) {
  if (reply.starts_with("-")) CountError(reply);
  if (SharedState::CommandStats* st = StatsOf(c.stats)) Add(st->failed);
}

void Worker::ResetStats() {
  for (size_t i = 0; i < shared_.worker_count * CommandStatsSlots(); ++i) {
    SharedState::CommandStats& st = shared_.command_stats[i];
    st.calls = st.nsec = st.rejected = st.failed = 0;
  }
  shared_.error_replies = 0;
  std::lock_guard lock(shared_.error_stats_mutex);
  shared_.error_stats.clear();
}

}  // namespace rampart::proxy
