// SLOWLOG: the commands whose time reached slowlog-log-slower-than µs,
// newest first, at most slowlog-max-len of them, in Redis 7.0's entries
// (id, unix time, µs, the arguments trimmed as Redis trims them, the
// client's address and name). A command's time is its share of its turn,
// as INFO commandstats counts it (worker_info.cc): a turn runs its commands
// together. Like Redis, EXEC is not logged but the commands it ran, a
// blocking command once it is answered, AUTH's and HELLO's passwords and
// CONFIG SET's values of requirepass, masterauth and masteruser as
// "(redacted)". A script's redis.calls are not logged (Redis logs them).
#include <ctime>

#include "proxy/worker_job.h"

namespace rampart::proxy {
namespace {

constexpr size_t kMaxArgs = 32;          // Redis's SLOWLOG_ENTRY_MAX_ARGC
constexpr size_t kMaxArgBytes = 128;     // SLOWLOG_ENTRY_MAX_STRING

// Whether argument `n` of `args` is a secret Redis redacts.
bool Redacted(const std::vector<std::string>& args, size_t n) {
  const std::string name = Lower(args[0]);
  if (name == "auth") return n >= 1;
  if (name == "hello") {  // HELLO [protover [AUTH username password] ...]
    return n >= 2 && (Lower(args[n - 1]) == "auth" || (n >= 3 && Lower(args[n - 2]) == "auth"));
  }
  if (name == "config" && args.size() >= 4 && Lower(args[1]) == "set") {  // the values of Redis's secrets
    const std::string parameter = n >= 3 && n % 2 == 1 ? Lower(args[n - 1]) : "";
    return parameter == "requirepass" || parameter == "masterauth" || parameter == "masteruser";
  }
  return false;
}

// The arguments as an entry keeps them (Redis's slowlogCreateEntry).
std::vector<std::string> EntryArgs(const std::vector<std::string>& args) {
  const size_t kept = std::min(args.size(), kMaxArgs);
  std::vector<std::string> out;
  out.reserve(kept);
  for (size_t n = 0; n < kept; ++n) {
    if (kept != args.size() && n == kept - 1) {
      out.push_back(StrCat("... (", args.size() - kept + 1, " more arguments)"));
    } else if (Redacted(args, n)) {
      out.emplace_back("(redacted)");
    } else if (args[n].size() > kMaxArgBytes) {
      out.push_back(StrCat(std::string_view(args[n]).substr(0, kMaxArgBytes), "... (",
                           args[n].size() - kMaxArgBytes, " more bytes)"));
    } else {
      out.push_back(args[n]);
    }
  }
  return out;
}

}  // namespace

void Worker::SlowlogIfSlow(const Session& s, const std::vector<std::string>& args, uint64_t nsec) {
  const int64_t slower_than = shared_.slowlog_slower_than_us.load(std::memory_order_relaxed);
  const uint64_t max_len = shared_.slowlog_max_len.load(std::memory_order_relaxed);
  const uint64_t usec = nsec / 1000;
  if (slower_than < 0 || usec < static_cast<uint64_t>(slower_than) || args.empty()) return;
  SharedState::SlowlogEntry e{0, static_cast<int64_t>(std::time(nullptr)), usec, EntryArgs(args), s.peer, s.name};
  std::lock_guard lock(shared_.slowlog_mutex);
  e.id = shared_.slowlog_next_id++;  // as Redis, also for an entry slowlog-max-len 0 drops at once
  shared_.slowlog.push_front(std::move(e));
  TrimSlowlogLocked(max_len);
}

void Worker::TrimSlowlogLocked(uint64_t max_len) {
  while (shared_.slowlog.size() > max_len) shared_.slowlog.pop_back();
}

// SLOWLOG GET [count] | LEN | RESET | HELP
void Worker::SlowlogCommand(const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  const std::string sub = Lower(a[1]);
  if (sub == "help" && a.size() == 2) {
    static constexpr std::string_view kHelp[] = {
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Prints this help.",
    };
    return out.SimpleLines(kHelp);
  }
  // Redis's texts: an unknown subcommand, a known one's arity, GET's.
  if (sub != "get" && sub != "len" && sub != "reset" && sub != "help") {
    return out.Error(SubcommandError(*c.spec, a[1]));
  }
  if (sub != "get" && a.size() != 2) return out.Error(StrCat("ERR wrong number of arguments for 'slowlog|", sub, "' command"));
  if (a.size() > 3) {
    return out.Error(StrCat("ERR unknown subcommand or wrong number of arguments for '", a[1], "'. Try SLOWLOG HELP."));
  }
  std::lock_guard lock(shared_.slowlog_mutex);
  if (sub == "reset") {
    shared_.slowlog.clear();  // the ids go on
    return out.Simple("OK");
  }
  if (sub == "len") return out.Integer(static_cast<int64_t>(shared_.slowlog.size()));
  size_t count = 10;
  if (a.size() == 3) {
    auto n = ParseInt64(a[2]);  // Redis words both failures so
    if (!n.ok() || *n < -1) return out.Error("ERR count should be greater than or equal to -1");
    count = *n == -1 ? shared_.slowlog.size() : static_cast<size_t>(*n);
  }
  count = std::min(count, shared_.slowlog.size());
  out.Array(count);
  for (size_t i = 0; i < count; ++i) {
    const SharedState::SlowlogEntry& e = shared_.slowlog[i];
    out.Array(6);
    out.Integer(static_cast<int64_t>(e.id));
    out.Integer(e.unix_seconds);
    out.Integer(static_cast<int64_t>(e.usec));
    out.Array(e.args.size());
    for (const std::string& arg : e.args) out.Bulk(arg);
    out.Bulk(e.peer);
    out.Bulk(e.name);
  }
}

}  // namespace rampart::proxy
