// One client connection of the proxy: its socket, its unparsed input, the
// commands parsed but not yet started, its reply bytes not yet written, and
// the connection state Redis keeps per client (AUTH, protocol version, name,
// MULTI queue).
//
// Thread-safety: owned by the worker thread that accepted the connection.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/commands.h"

namespace rampart::proxy {

// A parsed command; owns its arguments (the input buffer moves on).
struct Command {
  std::vector<std::string> args;
  const CommandSpec* spec = nullptr;  // nullptr: unknown command
  // Not a command: the input could not be parsed. Answered with this error
  // (Redis's "ERR Protocol error: ..." text) in order, then the connection closes.
  std::string protocol_error;
  // The worker's count of commands parsed before this one: a turn takes the
  // sessions in the order their front commands arrived (Worker::TakeJobs).
  uint64_t arrival = 0;
  // CLIENT REPLY: whether its reply is dropped, decided when a turn first
  // looks at it (Worker::DecideSilence), in the session's order.
  bool silence_decided = false;
  bool silent = false;
  // EVAL and friends: keys the script called commands on beyond its KEYS in
  // an earlier run, read and locked with them when it runs again
  // (Worker::RunAgainWithKeys), and how often it was taken again so.
  std::vector<std::string> script_keys;
  int script_reruns = 0;
  // Where INFO commandstats counts it (CommandStatsIndex, set with spec at
  // parsing; -1: nowhere, as for the sweeper's commands).
  int stats = -1;

  // Views of args, for the Apply functions. Valid while the Command lives.
  std::vector<std::string_view> Views() const { return {args.begin(), args.end()}; }
};

// CLIENT UNBLOCK's ask: answer a blocked command as at its timeout, or with
// -UNBLOCKED (kNone: no ask).
enum class Unblock : uint8_t { kNone, kTimeout, kError };

struct Session {
  int fd = -1;
  uint64_t id = 0;
  std::string peer;  // "127.0.0.1:53422"
  uint64_t connected_ms = 0;

  std::string in;      // bytes received, from in_pos on not yet parsed
  size_t in_pos = 0;
  std::string out;     // reply bytes not yet written, from out_pos on
  size_t out_pos = 0;
  bool want_write = false;  // EPOLLOUT registered (the socket was full)

  std::deque<Command> queue;  // parsed, waiting for a turn

  int protocol = 2;
  bool authenticated = false;
  // The sweeper's session (no socket): its commands name internal keys and
  // its replies are dropped.
  bool internal = false;
  std::string name;
  std::string lib_name, lib_version;

  bool in_multi = false;
  bool multi_failed = false;  // a command was refused while queueing: EXEC aborts
  std::vector<Command> multi;

  // WATCH: each watched key with the version read when it was watched (0:
  // none) and whether it held a live value then. EXEC, DISCARD and UNWATCH
  // forget them.
  struct Watched {
    std::string key;
    uint64_t version = 0;
    bool live = false;
  };
  std::vector<Watched> watched;

  // A blocking command (BLPOP, BLMOVE, BZPOPMIN, BLMPOP, ...) at the front of `queue` that
  // found nothing to pop: the session takes no commands until a write to
  // one of `park_slots` (lock-table slots of its keys) moves the slot's
  // write epoch past `park_epochs`, or until `park_deadline_ms` (0: never),
  // when it is answered with a null.
  bool parked = false;
  bool park_started = false;  // the front command has parked before (its deadline stands)
  uint64_t park_deadline_ms = 0;
  std::vector<uint32_t> park_slots;
  std::vector<uint32_t> park_epochs;
  uint64_t park_seq = 0;  // its place among the blocked clients (0: none)
  // With several proxies: when it runs again to look for another proxy's
  // write (Worker::PollsRemoteWrites).
  uint64_t park_poll_ms = 0;
  bool park_poll_behind = false;  // it was behind older waiters: the slower look
  // Its front blocking command, not blocked before, has waited since then
  // for the waiters a write woke to run (Worker::NewcomerWaits); 0: not.
  // Once that is kMaxWaitBehindWaitersMs ago it waits no more.
  uint64_t behind_waiters_since_ms = 0;
  // An UNBLOCK that came after a write woke the command, or while it ran
  // again: the run goes ahead (the write came first), and if it parks the
  // command again it is answered so instead (Worker::Park).
  Unblock unblock = Unblock::kNone;

  // CLIENT REPLY ON | OFF | SKIP: replies sent, none, or none for the next
  // command (as Redis 7.0, pub/sub confirmations and messages go out anyway).
  enum class ReplyMode : uint8_t { kOn, kOff, kSkipNext };
  ReplyMode reply_mode = ReplyMode::kOn;

  // Pub/sub: the channels, patterns and shard channels it is subscribed to
  // (worker_pubsub.cc).
  // With any, a RESP2 connection takes only (P)SUBSCRIBE, (P)UNSUBSCRIBE,
  // PING and QUIT.
  std::set<std::string> channels, patterns, shard_channels;
  size_t subscriptions() const { return channels.size() + patterns.size() + shard_channels.size(); }

  // Close once `out` is written (QUIT, a protocol error).
  bool closing = false;
  bool input_closed = false;  // EOF or error on read

  bool HasOutput() const { return out_pos < out.size(); }
};

}  // namespace rampart::proxy
