// The commands a worker answers without touching data (PING, AUTH, HELLO,
// COMMAND, CONFIG, SELECT, QUIT, ECHO, TIME) and the whole-store ones
// (DBSIZE, FLUSHDB, FLUSHALL, INFO; INFO's text is worker_info.cc's).

#include <cctype>

#include "common/size.h"
#include "proxy/glob.h"
#include "proxy/worker_job.h"

namespace rampart::proxy {

namespace {


std::string_view GroupOf(const CommandSpec& spec) {
  const std::string_view n = spec.name;
  if (spec.kind == CommandKind::kConnection) return "connection";
  if (spec.kind == CommandKind::kTransaction) return "transactions";
  if (spec.kind == CommandKind::kServer) return "server";
  if (n[0] == 'h') return "hash";
  if (n[0] == 'z') return "sorted-set";
  if (n == "del" || n == "exists" || n == "expire" || n == "pexpire" || n == "persist" ||
      n == "ttl" || n == "pttl" || n == "type" || n == "expireat" || n == "pexpireat" ||
      n == "expiretime" || n == "pexpiretime" || n == "touch" || n == "unlink") {
    return "generic";
  }
  return "string";
}

// COMMAND's per-command entry: name, arity, flags, first key, last key, step.
void CommandInfo(const CommandSpec& spec, resp::Writer& out) {
  out.Array(6);
  out.Bulk(spec.name);
  out.Integer(spec.arity);
  const bool write = spec.kind == CommandKind::kWrite || spec.name.starts_with("flush");
  const bool read = spec.kind == CommandKind::kRead;
  out.Array(write || read ? 1 : 0);
  if (write) out.Simple("write");
  if (read) out.Simple("readonly");
  out.Integer(spec.first_key);
  out.Integer(spec.last_key);
  out.Integer(spec.first_key == 0 ? 0 : spec.key_step);
}

}  // namespace

void Worker::ConnectionCommand(Session& s, const Command& c, std::string& reply) {
  resp::Writer out(&reply);
  out.SetProtocol(s.protocol);
  const std::string_view name = c.spec->name;
  const auto& a = c.args;
  if (name == "ping" && s.protocol == 2 && s.subscriptions() > 0) {  // Redis's subscribed PING
    if (a.size() > 2) return out.Error("ERR wrong number of arguments for 'ping' command");
    out.Array(2);
    out.Bulk("pong");
    return out.Bulk(a.size() > 1 ? std::string_view(a[1]) : std::string_view());
  }
  if (name == "ping" || name == "echo") {
    DataView none(NowMs(), 0);  // they touch no data
    return c.spec->apply(c.Views(), none, out);
  }
  if (name == "time") return TimeReply(out);
  if (name == "wait") {
    // WAIT numreplicas timeout: a write is answered only once all of its key's
    // proxy.replicas copies hold it, so the other copies have acknowledged
    // every write answered before: never blocks (docs/proxy.md).
    auto timeout = ParseInt64(a[2]);
    if (!timeout.ok()) return out.Error("ERR timeout is not an integer or out of range");
    if (*timeout < 0) return out.Error("ERR timeout is negative");
    if (auto n = ParseInt64(a[1]); !n.ok()) return out.Error(n.status().message());
    return out.Integer(static_cast<int64_t>(shared_.config.proxy.replicas) - 1);
  }
  if (name == "unwatch") {
    s.watched.clear();
    return out.Simple("OK");
  }
  if (name == "quit") {
    s.closing = true;
    return out.Simple("OK");
  }
  if (name == "select") return SelectReply(a[1], out);
  if (name == "auth") {
    if (a.size() > 3) return out.Error("ERR syntax error");
    const std::string& pass = shared_.config.proxy.requirepass;
    if (pass.empty()) {
      return out.Error(
          "ERR AUTH <password> called without any password configured for the default user. "
          "Are you sure your configuration is correct?");
    }
    const bool user_ok = a.size() == 2 || a[1] == "default";
    if (user_ok && a.back() == pass) {
      s.authenticated = true;
      return out.Simple("OK");
    }
    return out.Error("WRONGPASS invalid username-password pair or user is disabled.");
  }
  if (name == "hello") return Hello(s, c, out);
  if (IsPubSub(name)) return PubSubCommand(s, c, out);
  if (name == "client") return ClientCommand(s, c, out);
  if (name == "command") return CommandCommand(c, out);
  if (name == "config") return ConfigCommand(c, out);
  if (name == "function") return FunctionCommand(c, out);
  if (name == "script") return ScriptCommand(c, out);
  if (name == "slowlog") return SlowlogCommand(c, out);
  out.Error(StrCat("ERR rampart: ", name, " is not handled"));
}

void Worker::Hello(Session& s, const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  int protocol = s.protocol;
  size_t n = 1;
  if (a.size() >= 2) {
    auto v = ParseInt64(a[1]);
    if (!v.ok()) return out.Error("ERR Protocol version is not an integer or out of range");
    if (*v != 2 && *v != 3) return out.Error("NOPROTO unsupported protocol version");
    protocol = static_cast<int>(*v);
    n = 2;
  }
  std::string name = s.name;
  bool authenticated = s.authenticated;
  for (; n < a.size(); ++n) {
    const std::string opt = Lower(a[n]);
    if (opt == "auth" && n + 2 < a.size()) {
      const std::string& pass = shared_.config.proxy.requirepass;
      if (pass.empty() || a[n + 1] != "default" || a[n + 2] != pass) {
        return out.Error("WRONGPASS invalid username-password pair or user is disabled.");
      }
      authenticated = true;
      n += 2;
    } else if (opt == "setname" && n + 1 < a.size()) {
      name = a[++n];
    } else {
      return out.Error(StrCat("ERR Syntax error in HELLO option '", a[n], "'"));
    }
  }
  if (!authenticated) {
    return out.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise "
                     "the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the "
                     "client and select the RESP protocol version at the same time");
  }
  s.authenticated = authenticated;
  s.name = name;
  s.protocol = protocol;
  PublishClient(s);
  out.SetProtocol(protocol);
  out.Map(7);
  out.Bulk("server");
  out.Bulk("redis");
  out.Bulk("version");
  out.Bulk(kRedisVersion);
  out.Bulk("proto");
  out.Integer(protocol);
  out.Bulk("id");
  out.Integer(static_cast<int64_t>(s.id));
  out.Bulk("mode");
  out.Bulk("standalone");
  out.Bulk("role");
  out.Bulk("master");
  out.Bulk("modules");
  out.Array(0);
}

void Worker::CommandCommand(const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  const std::span<const CommandSpec> all = AllCommands();
  if (a.size() == 1) {
    out.Array(all.size());
    for (const CommandSpec& spec : all) CommandInfo(spec, out);
    return;
  }
  const std::string sub = Lower(a[1]);
  if (sub == "help") return SubcommandHelp(*c.spec, out);
  if (sub == "count") return out.Integer(static_cast<int64_t>(all.size()));
  if (sub == "info" || sub == "docs") {
    std::vector<const CommandSpec*> specs;
    if (a.size() == 2) {
      for (const CommandSpec& spec : all) specs.push_back(&spec);
    } else {
      for (size_t n = 2; n < a.size(); ++n) specs.push_back(FindCommand(a[n]));
    }
    if (sub == "info") {
      out.Array(specs.size());
      for (const CommandSpec* spec : specs) {
        if (spec == nullptr) {
          out.NullArray();
        } else {
          CommandInfo(*spec, out);
        }
      }
      return;
    }
    size_t known = 0;
    for (const CommandSpec* spec : specs) known += spec != nullptr;
    out.Map(known);
    for (const CommandSpec* spec : specs) {
      if (spec == nullptr) continue;
      out.Bulk(spec->name);
      out.Map(3);
      out.Bulk("summary");
      out.Bulk(StrCat("Redis ", spec->name, ", served by rampart"));
      out.Bulk("since");
      out.Bulk("1.0.0");
      out.Bulk("group");
      out.Bulk(GroupOf(*spec));
    }
    return;
  }
  if (sub == "list") {
    out.Array(all.size());
    for (const CommandSpec& spec : all) out.Bulk(spec.name);
    return;
  }
  if (sub == "getkeys") {
    if (a.size() < 4) return out.Error("ERR wrong number of arguments for 'command|getkeys' command");
    return CommandGetKeys(c, out);
  }
  out.Error(SubcommandError(*c.spec, a[1]));
}

// COMMAND GETKEYS command [arg ...]: the keys the proxy locks and reads
// for it (KeysOf), with Redis's errors.
void Worker::CommandGetKeys(const Command& c, resp::Writer& out) {
  const CommandSpec* spec = FindCommand(c.args[2]);
  if (spec == nullptr) return out.Error("ERR Invalid command specified");
  if (spec->first_key == 0 && spec->keys_of == nullptr) {
    return out.Error("ERR The command has no key arguments");
  }
  const std::vector<std::string_view> args(c.args.begin() + 2, c.args.end());
  if (!CheckArity(*spec, args).empty()) {
    return out.Error("ERR Invalid number of arguments specified for command");
  }
  const std::vector<std::string_view> keys = KeysOf(*spec, args);
  if (keys.empty()) return out.Error("ERR Invalid arguments specified for command");
  out.Array(keys.size());
  for (std::string_view k : keys) out.Bulk(k);
}

void Worker::ServerCommand(Session& s, const Command& c, std::string& reply) {
  resp::Writer out(&reply);
  out.SetProtocol(s.protocol);
  const std::string_view name = c.spec->name;
  const auto& a = c.args;
  auto keys = [&]() -> Result<uint64_t> {
    RAMPART_ASSIGN_OR_RETURN(uint64_t copies, client_->CountKeys());
    return copies / shared_.ring.replicas();  // every key lives on R partitions
  };
  if (name == "keys") return Keys(c, out);
  if (name == "scan") return Scan(c, out);
  if (name == "randomkey") return RandomKey(out);
  if (name == "dbsize") {
    auto n = keys();
    if (!n.ok()) return FailReply(out, n.status());
    return out.Integer(static_cast<int64_t>(*n));
  }
  if (name == "flushdb" || name == "flushall") {
    if (a.size() > 2 || (a.size() == 2 && Lower(a[1]) != "async" && Lower(a[1]) != "sync")) {
      return out.Error("ERR syntax error");
    }
    Status st = client_->FlushAll();
    if (!st.ok()) return FailReply(out, st);
    return out.Simple("OK");
  }
  // INFO [section ...]
  std::vector<std::string> sections;
  for (size_t n = 1; n < a.size(); ++n) sections.push_back(Lower(a[n]));
  auto asks = [&](std::string_view name) {
    return sections.empty() || std::any_of(sections.begin(), sections.end(), [&](const std::string& s) {
             return s == name || s == "default" || s == "all" || s == "everything";
           });
  };
  std::optional<uint64_t> count;
  std::optional<txn::StoreStats> store;
  if (asks("keyspace")) {
    auto n = keys();
    if (n.ok()) count = *n;
  }
  if (asks("memory") || asks("keyspace")) {
    auto st = client_->QueryStoreStats();
    if (st.ok()) store = *st;
  }
  out.Bulk(Info(sections, count, store));
}

void Worker::FailReply(resp::Writer& out, const Status& status) { out.Error(BackendError(status)); }

}  // namespace rampart::proxy
