// CLIENT: the connection's own settings (SETNAME, SETINFO, ID, INFO, ...)
// and, over every worker of the proxy, LIST and KILL through the registry
// SharedState::clients (worker.h says who writes it when).

#include "proxy/worker_job.h"

namespace rampart::proxy {
namespace {

// Redis's client types: a rampart client is "pubsub" while it has
// subscriptions, else "normal"; never a master or replica.
enum class ClientType { kNormal, kPubSub, kReplication };
std::optional<ClientType> ParseClientType(std::string_view name) {
  const std::string t = Lower(name);
  if (t == "normal") return ClientType::kNormal;
  if (t == "pubsub") return ClientType::kPubSub;
  if (t == "master" || t == "slave" || t == "replica") return ClientType::kReplication;
  return std::nullopt;
}
bool OfType(const SharedState::ClientRecord& r, ClientType type) {
  const bool pubsub = r.channels + r.patterns + r.shard_channels > 0;
  return type == ClientType::kPubSub ? pubsub : type == ClientType::kNormal && !pubsub;
}

// A CLIENT LIST / INFO line: Redis's fields that apply, then the worker
// thread that serves the connection. `multi`: the commands queued in MULTI,
// -1 when not in one (only the session's own worker knows; others print -1).
std::string Describe(const SharedState::ClientRecord& r, uint64_t id, std::string_view laddr, int multi) {
  return StrCat("id=", id, " addr=", r.peer, " laddr=", laddr, " fd=", r.fd, " name=", r.name,
                " age=", (NowMs() - r.connected_ms) / 1000, " db=0 sub=", r.channels, " psub=", r.patterns, " ssub=", r.shard_channels,
                " multi=", multi, " resp=", r.protocol,
                " lib-name=", r.lib_name, " lib-ver=", r.lib_version, " rampart-worker=", r.worker, "\n");
}

SharedState::ClientRecord Record(const Session& s, uint32_t worker) {
  return {.worker = worker,
          .fd = s.fd,
          .peer = s.peer,
          .name = s.name,
          .lib_name = s.lib_name,
          .lib_version = s.lib_version,
          .connected_ms = s.connected_ms,
          .protocol = s.protocol,
          .channels = s.channels.size(),
          .patterns = s.patterns.size(),
          .shard_channels = s.shard_channels.size()};
}

}  // namespace

void Worker::PublishClient(const Session& s) {
  SharedState::ClientRecord r = Record(s, index_);
  std::lock_guard lock(shared_.clients_mutex);
  shared_.clients[s.id] = std::move(r);
}

void Worker::Wake(std::atomic<bool>* pending, uint32_t worker) {
  pending[worker].store(true);
  Poke(shared_.wake_fds[worker]);
}

void Worker::ForgetClient(const Session& s) {
  std::lock_guard lock(shared_.clients_mutex);
  shared_.clients.erase(s.id);
  shared_.kill.erase(s.id);
}

// CLIENT LIST [TYPE type | ID id [id ...]]: every worker's sessions, in id order.
void Worker::ListClients(const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  std::vector<uint64_t> ids;
  std::optional<ClientType> type;
  if (a.size() == 4 && Lower(a[2]) == "type") {
    type = ParseClientType(a[3]);
    if (!type) return out.Error(StrCat("ERR Unknown client type '", a[3], "'"));
  } else if (a.size() > 3 && Lower(a[2]) == "id") {
    for (size_t n = 3; n < a.size(); ++n) {
      auto id = ParseInt64(a[n]);
      if (!id.ok()) return out.Error("ERR Invalid client ID");
      ids.push_back(static_cast<uint64_t>(*id));
    }
  } else if (a.size() != 2) {
    return out.Error("ERR syntax error");
  }
  std::string all;
  const std::string laddr = shared_.listen.address();
  std::lock_guard lock(shared_.clients_mutex);
  auto line = [&](uint64_t id, const SharedState::ClientRecord& r) {
    if (shared_.kill.contains(id) || (type && !OfType(r, *type))) return;  // killed: closing
    int multi = -1;
    if (r.worker == index_) {  // this worker's own: live, MULTI included
      auto it = sessions_.find(r.fd);
      if (it != sessions_.end() && it->second->in_multi) multi = static_cast<int>(it->second->multi.size());
    }
    all += Describe(r, id, laddr, multi);
  };
  if (!ids.empty()) {
    for (uint64_t id : ids) {
      auto it = shared_.clients.find(id);
      if (it != shared_.clients.end()) line(id, it->second);
    }
  } else {
    for (const auto& [id, r] : shared_.clients) line(id, r);
  }
  out.Bulk(all);
}

// CLIENT KILL addr:port | CLIENT KILL [ID id] [ADDR a] [LADDR a] [USER u]
// [TYPE t] [SKIPME yes|no]: as Redis 7.0. Other sessions are marked and
// closed by their worker before its next turn (their unsent replies are
// dropped, as Redis's freeClient drops them); this one after its reply.
void Worker::KillClients(Session& s, const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  if (a.size() < 3) return out.Error("ERR wrong number of arguments for 'client|kill' command");
  std::optional<std::string> addr, laddr;
  std::optional<ClientType> type;
  std::optional<uint64_t> id;
  bool skipme = a.size() > 3;
  if (a.size() == 3) {
    addr = a[2];
  } else {
    for (size_t n = 2; n < a.size(); n += 2) {
      const std::string option = Lower(a[n]);
      if (n + 1 >= a.size()) return out.Error("ERR syntax error");
      const std::string& value = a[n + 1];
      if (option == "id") {
        auto v = ParseInt64(value);
        if (!v.ok() || *v < 1) return out.Error("ERR client-id should be greater than 0");
        id = static_cast<uint64_t>(*v);
      } else if (option == "type") {
        type = ParseClientType(value);
        if (!type) return out.Error(StrCat("ERR Unknown client type '", value, "'"));
      } else if (option == "addr") {
        addr = value;
      } else if (option == "laddr") {
        laddr = value;
      } else if (option == "user") {
        if (value != "default") return out.Error(StrCat("ERR No such user '", value, "'"));
      } else if (option == "skipme") {
        const std::string yes_no = Lower(value);
        if (yes_no != "yes" && yes_no != "no") return out.Error("ERR syntax error");
        skipme = yes_no == "yes";
      } else {
        return out.Error("ERR syntax error");
      }
    }
  }
  int64_t killed = 0;
  bool kill_self = false;
  std::vector<uint32_t> owners;
  // Every connection's local address is the proxy's listening one.
  if (!laddr || *laddr == shared_.listen.address()) {
    std::lock_guard lock(shared_.clients_mutex);
    for (const auto& [client_id, r] : shared_.clients) {
      if (shared_.kill.contains(client_id) || (type && !OfType(r, *type)) || (addr && r.peer != *addr) ||
          (id && client_id != *id) || (client_id == s.id && skipme)) {
        continue;
      }
      ++killed;
      if (client_id == s.id) {
        kill_self = true;
      } else {
        shared_.kill.insert(client_id);
        owners.push_back(r.worker);
      }
    }
  }
  for (uint32_t w : owners) Wake(shared_.kill_pending.get(), w);
  if (kill_self) s.closing = true;  // after this reply; TakeCommand drops what follows it
  if (a.size() == 3) return killed == 0 ? out.Error("ERR No such client") : out.Simple("OK");
  out.Integer(killed);
}

void Worker::ApplyKills() {
  if (!shared_.kill_pending[index_].exchange(false)) return;
  std::lock_guard lock(shared_.clients_mutex);
  for (uint64_t id : shared_.kill) {
    auto record = shared_.clients.find(id);
    if (record == shared_.clients.end() || record->second.worker != index_) continue;
    auto session = sessions_.find(record->second.fd);
    if (session != sessions_.end() && session->second->id == id) session->second->input_closed = true;
  }
}

void Worker::ClientCommand(Session& s, const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  const std::string sub = Lower(a[1]);
  if (sub == "help") return SubcommandHelp(*c.spec, out);
  auto describe = [&](const Session& x) {
    const SharedState::ClientRecord r = Record(x, index_);
    return Describe(r, x.id, shared_.listen.address(), x.in_multi ? static_cast<int>(x.multi.size()) : -1);
  };
  if (sub == "setname" && a.size() == 3) {
    for (char ch : a[2]) {
      if (ch <= ' ' || ch > '~') {
        return out.Error("ERR Client names cannot contain spaces, newlines or special characters.");
      }
    }
    s.name = a[2];
    PublishClient(s);
    return out.Simple("OK");
  }
  if (sub == "getname" && a.size() == 2) {
    if (s.name.empty()) return out.Null();
    return out.Bulk(s.name);
  }
  if (sub == "id" && a.size() == 2) return out.Integer(static_cast<int64_t>(s.id));
  if (sub == "setinfo" && a.size() == 4) {
    const std::string attr = Lower(a[2]);
    if (attr == "lib-name") {
      s.lib_name = a[3];
    } else if (attr == "lib-ver") {
      s.lib_version = a[3];
    } else {
      return out.Error(StrCat("ERR Unrecognized option '", a[2], "'"));
    }
    PublishClient(s);
    return out.Simple("OK");
  }
  if (sub == "info" && a.size() == 2) return out.Bulk(describe(s));
  if (sub == "list") return ListClients(c, out);
  if (sub == "kill") return KillClients(s, c, out);
  if ((sub == "no-evict" || sub == "no-touch") && a.size() == 3) return out.Simple("OK");
  if (sub == "unblock" && (a.size() == 3 || a.size() == 4)) return UnblockClient(c, out);
  if (sub == "reply" && a.size() == 3) {
    const std::string mode = Lower(a[2]);
    if (mode == "on") {
      s.reply_mode = Session::ReplyMode::kOn;
      return out.Simple("OK");
    }
    if (mode == "off") {
      s.reply_mode = Session::ReplyMode::kOff;
      return;  // no reply
    }
    if (mode == "skip") {
      if (s.reply_mode != Session::ReplyMode::kOff) s.reply_mode = Session::ReplyMode::kSkipNext;
      return;
    }
    return out.Error("ERR syntax error");
  }
  out.Error(SubcommandError(*c.spec, a[1]));
}


}  // namespace rampart::proxy
