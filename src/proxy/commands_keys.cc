// Key commands over a DataView (see commands.h): DEL/UNLINK, EXISTS/TOUCH,
// TTL/PTTL/EXPIRETIME/PEXPIRETIME, EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT,
// PERSIST, TYPE. They work on a value of any type through its stored header
// alone: an expiry change rewrites the header and keeps the type and payload
// (EncodeStored), so a new value type needs nothing here (TYPE asks
// RedisTypeName).
// Semantics and error texts are Redis 7.0's (expire.c, db.c).
#include <limits>

#include "proxy/commands_internal.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();

// EXPIRE's NX | XX | GT | LT options.
struct ExpireCondition {
  bool nx = false, xx = false, gt = false, lt = false;

  // Whether a key whose deadline is `current` (-1: none) takes `when`. No
  // expiry counts as infinite: GT never passes it, LT always does.
  bool Allows(int64_t when, int64_t current) const {
    if (nx && current != -1) return false;
    if (xx && current == -1) return false;
    if (gt && (current == -1 || when <= current)) return false;
    if (lt && current != -1 && when >= current) return false;
    return true;
  }
};

// args[3..] as Redis's parseExtendedExpireArgumentsOrReply reads them: any of
// the four, any number of times, then "ERR NX and XX, GT or LT options at the
// same time are not compatible" / "ERR GT and LT options at the same time are
// not compatible"; another word is "ERR Unsupported option <word>".
Result<ExpireCondition> ParseExpireCondition(Args args) {
  ExpireCondition c;
  for (size_t n = 3; n < args.size(); ++n) {
    const std::string_view a = args[n];
    if (EqualsNoCase(a, "nx")) {
      c.nx = true;
    } else if (EqualsNoCase(a, "xx")) {
      c.xx = true;
    } else if (EqualsNoCase(a, "gt")) {
      c.gt = true;
    } else if (EqualsNoCase(a, "lt")) {
      c.lt = true;
    } else {
      return InvalidArgument("ERR Unsupported option ", a);
    }
  }
  if (c.nx && (c.xx || c.gt || c.lt)) {
    return InvalidArgument("ERR NX and XX, GT or LT options at the same time are not compatible");
  }
  if (c.gt && c.lt) return InvalidArgument("ERR GT and LT options at the same time are not compatible");
  return c;
}

// The unix-ms deadline `amount` means for `command` (expire, pexpire: from
// now; expireat, pexpireat: absolute; seconds for expire, expireat), as
// Redis's expireGenericCommand computes it: it may lie in the past or be
// negative; "ERR invalid expire time in '<command>' command" when the
// conversion to milliseconds or the addition of now overflows int64.
Result<int64_t> ExpireDeadline(std::string_view command, int64_t amount, uint64_t now_ms) {
  const bool seconds = command == "expire" || command == "expireat";
  const int64_t base = command.ends_with("at") ? 0 : static_cast<int64_t>(now_ms);
  const auto invalid = [&] { return InvalidArgument("ERR invalid expire time in '", command, "' command"); };
  if (seconds && (amount > kMaxInt64 / 1000 || amount < kMinInt64 / 1000)) return invalid();
  const int64_t ms = seconds ? amount * 1000 : amount;
  if (ms > kMaxInt64 - base) return invalid();
  return ms + base;
}

}  // namespace

// DEL, UNLINK key...: how many of the keys existed (each counted once); "del"
// for each.
void Del(Args args, DataView& data, resp::Writer& out) {
  int64_t deleted = 0;
  for (size_t n = 1; n < args.size(); ++n) {
    auto v = data.FindStored(args[n]);
    if (!v.ok() || v->has_value()) {
      data.Delete(args[n]);  // also a value not written by the proxy
      data.Notify(notify::kGeneric, "del", args[n]);
      ++deleted;
    }
  }
  out.Integer(deleted);
}

// EXISTS, TOUCH key...: how many of the keys exist (a key named twice counts
// twice).
void Exists(Args args, DataView& data, resp::Writer& out) {
  int64_t found = 0;
  for (size_t n = 1; n < args.size(); ++n) {
    auto v = data.FindStored(args[n]);
    found += !v.ok() || v->has_value();
  }
  out.Integer(found);
}

// TTL, PTTL (time left), EXPIRETIME, PEXPIRETIME (the unix deadline): -2 for a
// missing key, -1 without expiry; seconds are rounded to the nearest, as
// Redis's ttlGenericCommand does ((ms + 500) / 1000).
void Ttl(Args args, DataView& data, resp::Writer& out) {
  auto v = data.FindStored(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Integer(-2);
  if ((*v)->expire_at_ms == 0) return out.Integer(-1);
  const std::string_view name = CommandName(args);
  const uint64_t base = name.ends_with("expiretime") ? 0 : data.now_ms();
  const int64_t ms = static_cast<int64_t>((*v)->expire_at_ms - base);
  const bool seconds = name == "ttl" || name == "expiretime";
  out.Integer(seconds ? ms / 1000 + (ms % 1000 >= 500 ? 1 : 0) : ms);
}

// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key amount [NX|XX|GT|LT ...]: 1 when
// the expiry was set ("expire") — a deadline at or before now deletes the key
// ("del") —, 0 for a missing key or a condition that does not hold. Options
// are checked before the amount, as in Redis.
void Expire(Args args, DataView& data, resp::Writer& out) {
  auto condition = ParseExpireCondition(args);
  if (ReplyIfError(condition.status(), out)) return;
  auto amount = ParseInt64(args[2]);
  if (ReplyIfError(amount.status(), out)) return;
  auto when = ExpireDeadline(CommandName(args), *amount, data.now_ms());
  if (ReplyIfError(when.status(), out)) return;
  auto v = data.FindStored(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Integer(0);
  const int64_t current = (*v)->expire_at_ms == 0 ? -1 : static_cast<int64_t>((*v)->expire_at_ms);
  if (!condition->Allows(*when, current)) return out.Integer(0);
  if (*when <= static_cast<int64_t>(data.now_ms())) {
    data.Delete(args[1]);
    data.Notify(notify::kGeneric, "del", args[1]);
  } else {
    data.Put(args[1], EncodeStored((*v)->type, static_cast<uint64_t>(*when), (*v)->payload));
    data.Notify(notify::kGeneric, "expire", args[1]);
  }
  out.Integer(1);
}

void Persist(Args args, DataView& data, resp::Writer& out) {
  auto v = data.FindStored(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value() || (*v)->expire_at_ms == 0) return out.Integer(0);
  data.Put(args[1], EncodeStored((*v)->type, 0, (*v)->payload));
  data.Notify(notify::kGeneric, "persist", args[1]);
  out.Integer(1);
}

void Type(Args args, DataView& data, resp::Writer& out) {
  auto v = data.FindStored(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Simple("none");
  out.Simple(RedisTypeName((*v)->type));
}

void Watch(Args, DataView&, resp::Writer& out) { out.Simple("OK"); }

// PING [message], ECHO message.
void Ping(Args args, DataView& /*data*/, resp::Writer& out) {
  if (CommandName(args) == "echo" || args.size() == 2) return out.Bulk(args[1]);
  if (args.size() > 2) return out.Error("ERR wrong number of arguments for 'ping' command");
  out.Simple("PONG");
}

}  // namespace rampart::proxy::internal
