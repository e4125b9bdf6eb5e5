// String and key commands over a DataView (see commands.h).
#include <cctype>
#include <limits>

#include "proxy/commands_internal.h"

namespace rampart::proxy::internal {
namespace {

// SET's options after key and value.
struct SetOptions {
  bool nx = false, xx = false, get = false, keep_ttl = false;
  uint64_t expire_at_ms = 0;  // 0: none
};

Result<SetOptions> ParseSetOptions(Args args, uint64_t now_ms) {
  SetOptions o;
  bool has_expiry = false;
  for (size_t n = 3; n < args.size(); ++n) {
    const std::string_view a = args[n];
    if (EqualsNoCase(a, "nx") && !o.xx) {
      o.nx = true;
    } else if (EqualsNoCase(a, "xx") && !o.nx) {
      o.xx = true;
    } else if (EqualsNoCase(a, "get")) {
      o.get = true;
    } else if (EqualsNoCase(a, "keepttl") && !has_expiry) {
      o.keep_ttl = true;
    } else if ((EqualsNoCase(a, "ex") || EqualsNoCase(a, "px") || EqualsNoCase(a, "exat") ||
                EqualsNoCase(a, "pxat")) &&
               !has_expiry && !o.keep_ttl && n + 1 < args.size()) {
      auto v = ParseInt64(args[++n]);
      if (!v.ok()) return v.status();
      const bool seconds = std::tolower(static_cast<unsigned char>(a[0])) == 'e';
      const bool absolute = a.size() == 4;
      if (*v <= 0 || (seconds && *v > std::numeric_limits<int64_t>::max() / 1000)) {
        return InvalidArgument("ERR invalid expire time in 'set' command");
      }
      const uint64_t ms = static_cast<uint64_t>(*v) * (seconds ? 1000 : 1);
      if (!absolute && ms > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - now_ms) {
        return InvalidArgument("ERR invalid expire time in 'set' command");
      }
      o.expire_at_ms = absolute ? ms : now_ms + ms;
      has_expiry = true;
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  return o;
}

// The key's string value, or nullopt; WRONGTYPE/corruption as an error.
Result<std::optional<StoredValue>> FindString(DataView& data, std::string_view key) {
  return data.FindTyped(key, ValueType::kString);
}

}  // namespace

bool SetNeedsRead(Args args) {
  for (size_t n = 3; n < args.size(); ++n) {
    if (EqualsNoCase(args[n], "nx") || EqualsNoCase(args[n], "xx") ||
        EqualsNoCase(args[n], "get") || EqualsNoCase(args[n], "keepttl")) {
      return true;
    }
  }
  return false;
}

namespace {

// A string value as a bulk reply, nil when absent.
void ReplyValue(const std::optional<StoredValue>& v, resp::Writer& out) {
  if (v.has_value()) {
    out.Bulk(v->payload);
  } else {
    out.Null();
  }
}

}  // namespace

void Get(Args args, DataView& data, resp::Writer& out) {
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  ReplyValue(*v, out);
}

void Set(Args args, DataView& data, resp::Writer& out) {
  auto options = ParseSetOptions(args, data.now_ms());
  if (ReplyIfError(options.status(), out)) return;
  std::optional<StoredValue> old;
  if (options->nx || options->xx || options->get || options->keep_ttl) {
    // SET ... GET fails on a non-string; NX/XX only look at existence.
    auto found = options->get ? FindString(data, args[1]) : data.Find(args[1]);
    if (ReplyIfError(found.status(), out)) return;
    old = *found;
  }
  const bool apply = !(options->nx && old.has_value()) && !(options->xx && !old.has_value());
  if (options->get) ReplyValue(old, out);  // before Put: `old` views the entry Put replaces
  if (apply) {
    uint64_t expire = options->expire_at_ms;
    if (options->keep_ttl && old.has_value()) expire = old->expire_at_ms;
    data.Put(args[1], EncodeString(args[2], expire));
  }
  if (options->get) {
    return;
  } else if (apply) {
    out.Simple("OK");
  } else {
    out.Null();
  }
}

void MGet(Args args, DataView& data, resp::Writer& out) {
  out.Array(args.size() - 1);
  for (size_t n = 1; n < args.size(); ++n) {
    auto v = data.Find(args[n]);
    if (v.ok() && v->has_value() && (*v)->type == ValueType::kString) {
      out.Bulk((*v)->payload);
    } else {
      out.Null();  // absent, another type, or not ours: nil, as Redis does
    }
  }
}

void MSet(Args args, DataView& data, resp::Writer& out) {
  for (size_t n = 1; n + 1 < args.size(); n += 2) data.Put(args[n], EncodeString(args[n + 1], 0));
  out.Simple("OK");
}

void Del(Args args, DataView& data, resp::Writer& out) {
  int64_t deleted = 0;
  for (size_t n = 1; n < args.size(); ++n) {
    auto v = data.Find(args[n]);
    if (!v.ok() || v->has_value()) {
      data.Delete(args[n]);  // also a value not written by the proxy
      ++deleted;
    }
  }
  out.Integer(deleted);
}

void Exists(Args args, DataView& data, resp::Writer& out) {
  int64_t found = 0;
  for (size_t n = 1; n < args.size(); ++n) {
    auto v = data.Find(args[n]);
    found += !v.ok() || v->has_value();
  }
  out.Integer(found);
}

void IncrBy(Args args, DataView& data, resp::Writer& out) {
  const std::string_view name = args[0];
  int64_t by = 1;
  if (args.size() == 3) {
    auto parsed = ParseInt64(args[2]);
    if (ReplyIfError(parsed.status(), out)) return;
    by = *parsed;
  }
  const bool decrement = std::tolower(static_cast<unsigned char>(name[0])) == 'd';
  if (decrement) {
    if (by == std::numeric_limits<int64_t>::min()) {
      out.Error("ERR decrement would overflow");
      return;
    }
    by = -by;
  }
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  int64_t current = 0;
  uint64_t expire = 0;
  if (v->has_value()) {
    auto parsed = ParseInt64((*v)->payload);
    if (ReplyIfError(parsed.status(), out)) return;
    current = *parsed;
    expire = (*v)->expire_at_ms;
  }
  int64_t result = 0;
  if (__builtin_add_overflow(current, by, &result)) {
    out.Error("ERR increment or decrement would overflow");
    return;
  }
  data.Put(args[1], EncodeString(std::to_string(result), expire));
  out.Integer(result);
}

void GetSet(Args args, DataView& data, resp::Writer& out) {
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  ReplyValue(*v, out);
  data.Put(args[1], EncodeString(args[2], 0));
}

void StrLen(Args args, DataView& data, resp::Writer& out) {
  auto v = FindString(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  out.Integer(v->has_value() ? static_cast<int64_t>((*v)->payload.size()) : 0);
}

void Ttl(Args args, DataView& data, resp::Writer& out) {
  auto v = data.Find(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Integer(-2);
  if ((*v)->expire_at_ms == 0) return out.Integer(-1);
  const int64_t left_ms = static_cast<int64_t>((*v)->expire_at_ms - data.now_ms());
  const bool seconds = std::tolower(static_cast<unsigned char>(args[0][0])) == 't';
  out.Integer(seconds ? left_ms / 1000 + (left_ms % 1000 >= 500 ? 1 : 0) : left_ms);
}

void Expire(Args args, DataView& data, resp::Writer& out) {
  auto amount = ParseInt64(args[2]);
  if (ReplyIfError(amount.status(), out)) return;
  const bool seconds = std::tolower(static_cast<unsigned char>(args[0][0])) == 'e';
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t now = static_cast<int64_t>(data.now_ms());
  // As Redis: a ttl whose milliseconds or deadline do not fit int64 is refused.
  if ((seconds && (*amount > kMax / 1000 || *amount < -(kMax / 1000))) ||
      (!seconds ? *amount : *amount * 1000) > kMax - now) {
    return out.Error(StrCat("ERR invalid expire time in '", seconds ? "expire" : "pexpire",
                            "' command"));
  }
  auto v = data.Find(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Integer(0);
  const int64_t ms = seconds ? *amount * 1000 : *amount;
  if (ms <= 0) {
    data.Delete(args[1]);  // Redis: a non-positive ttl deletes the key
  } else {
    data.Put(args[1], EncodeStored((*v)->type, data.now_ms() + static_cast<uint64_t>(ms), (*v)->payload));
  }
  out.Integer(1);
}

void Persist(Args args, DataView& data, resp::Writer& out) {
  auto v = data.Find(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value() || (*v)->expire_at_ms == 0) return out.Integer(0);
  data.Put(args[1], EncodeStored((*v)->type, 0, (*v)->payload));
  out.Integer(1);
}

void Type(Args args, DataView& data, resp::Writer& out) {
  auto v = data.Find(args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Simple("none");
  switch ((*v)->type) {
    case ValueType::kString: return out.Simple("string");
    case ValueType::kHash: return out.Simple("hash");
    case ValueType::kZset: return out.Simple("zset");
  }
}

}  // namespace rampart::proxy::internal
