// Pub/sub: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, their
// sharded twins SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, and PUBSUB over
// SharedState's registry (worker.h), whatever worker each
// connection is on. A PUBLISH goes to this proxy's subscribers and, through
// SharedState::peers, to the other proxies' (docs/proxy.md, "Pub/sub").

#include <spdlog/spdlog.h>

#include "proxy/glob.h"
#include "proxy/worker_job.h"

namespace rampart::proxy {
namespace {

// Redis's client-output-buffer-limit for pubsub clients (its hard limit): a
// subscriber that lets more than this pile up unread is disconnected.
constexpr size_t kMaxSubscriberBacklog = size_t{32} << 20;

// ["subscribe" | "unsubscribe" | ..., name (nil: none), subscriptions left].
void Confirm(resp::Writer& out, std::string_view kind, const std::string* name, size_t count) {
  out.Push(3);
  out.Bulk(kind);
  if (name != nullptr) {
    out.Bulk(*name);
  } else {
    out.Null();
  }
  out.Integer(static_cast<int64_t>(count));
}

// Takes session `id` out of the subscribers of `name` in `registry`
// (SharedState::channels or patterns), and the name out when none is left.
template <typename Registry>
void EraseSubscriber(Registry& registry, const std::string& name, uint64_t id) {
  auto it = registry.find(name);
  if (it == registry.end()) return;
  it->second.erase(id);
  if (it->second.empty()) registry.erase(it);
}

}  // namespace

void Worker::PubSubCommand(Session& s, const Command& c, resp::Writer& out) {
  const std::string_view name = c.spec->name;
  if (name == "publish" || name == "rampart.publish") return Publish(c, Channels::kPlain, out);
  if (name == "spublish" || name == "rampart.spublish") return Publish(c, Channels::kShard, out);
  if (name == "pubsub") return PubSubIntrospection(c, out);
  Subscribe(s, c, out);
}

// PUBLISH, SPUBLISH; RAMPART.(S)PUBLISH: a message another proxy of the
// cluster forwards (peer_publish.h), for this proxy's subscribers only.
void Worker::Publish(const Command& c, Channels kind, resp::Writer& out) {
  const auto& a = c.args;
  int64_t receivers = 0;
  std::vector<uint32_t> woken;
  {
    std::lock_guard lock(shared_.pubsub_mutex);
    receivers = PublishLocked(a[1], a[2], kind == Channels::kShard, !c.spec->name.starts_with("rampart."), woken);
  }
  for (uint32_t w : woken) Wake(shared_.delivery_pending.get(), w);
  out.Integer(receivers);  // this proxy's, as a Redis Cluster node counts
}

void Worker::PublishEvents(const DataView& view) {
  const std::vector<DataView::Event>& events = view.events();
  const uint32_t flags = view.notify_flags();  // those the events were recorded under
  std::vector<uint32_t> woken;
  {
    std::lock_guard lock(shared_.pubsub_mutex);
    for (const DataView::Event& e : events) {
      if (flags & notify::kKeyspace) PublishLocked(notify::KeyspaceChannel(e.key), e.name, false, true, woken);
      if (flags & notify::kKeyevent) PublishLocked(notify::KeyeventChannel(e.name), e.key, false, true, woken);
    }
  }
  for (uint32_t w : woken) Wake(shared_.delivery_pending.get(), w);
}

int64_t Worker::PublishLocked(const std::string& channel, std::string_view message, bool shard, bool forward,
                              std::vector<uint32_t>& woken) {
  int64_t receivers = 0;
  std::shared_ptr<const std::pair<std::string, std::string>> published;
  auto add = [&](uint64_t session, const SharedState::Subscriber& at, const std::string* pattern) {
    if (published == nullptr) {
      published = std::make_shared<const std::pair<std::string, std::string>>(channel, message);
    }
    const auto how = shard ? SharedState::Delivery::kShard
                           : pattern != nullptr ? SharedState::Delivery::kPattern : SharedState::Delivery::kChannel;
    shared_.inboxes[at.worker].push_back(
        SharedState::Delivery{session, at.fd, how, pattern != nullptr ? *pattern : std::string(), published});
    if (std::find(woken.begin(), woken.end(), at.worker) == woken.end()) woken.push_back(at.worker);
    ++receivers;
  };
  const auto& channels = shard ? shared_.shard_channels : shared_.channels;
  if (auto it = channels.find(channel); it != channels.end()) {
    for (const auto& [session, at] : it->second) add(session, at, nullptr);
  }
  if (!shard) {  // patterns are for PUBLISH's channels only
    for (const auto& [pattern, subscribers] : shared_.patterns) {
      if (!GlobMatch(pattern, channel)) continue;
      for (const auto& [session, at] : subscribers) add(session, at, &pattern);
    }
  }
  // Under the lock: the other proxies get this proxy's messages in the
  // order its own subscribers do, whatever workers published them.
  if (forward && shared_.peers != nullptr) shared_.peers->Forward(channel, message, shard);
  return receivers;
}

void Worker::PubSubIntrospection(const Command& c, resp::Writer& out) {
  const auto& a = c.args;
  const std::string sub = Lower(a[1]);
  if (sub == "help") return SubcommandHelp(*c.spec, out);
  std::lock_guard lock(shared_.pubsub_mutex);
  const bool shard = sub.starts_with("shard");
  const auto& channels = shard ? shared_.shard_channels : shared_.channels;
  if ((sub == "channels" || sub == "shardchannels") && a.size() <= 3) {
    std::vector<std::string_view> names;
    for (const auto& [channel, subscribers] : channels) {
      if (a.size() == 2 || GlobMatch(a[2], channel)) names.push_back(channel);
    }
    out.Array(names.size());
    for (std::string_view n : names) out.Bulk(n);
    return;
  }
  if (sub == "numsub" || sub == "shardnumsub") {
    out.Array((a.size() - 2) * 2);
    for (size_t n = 2; n < a.size(); ++n) {
      auto it = channels.find(a[n]);
      out.Bulk(a[n]);
      out.Integer(it != channels.end() ? static_cast<int64_t>(it->second.size()) : 0);
    }
    return;
  }
  if (sub == "numpat" && a.size() == 2) return out.Integer(static_cast<int64_t>(shared_.patterns.size()));
  out.Error(SubcommandError(*c.spec, a[1]));
}

// (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE. A shard channel is a name of its own
// (SPUBLISH reaches only SSUBSCRIBE), with its own count in the replies.
void Worker::Subscribe(Session& s, const Command& c, resp::Writer& out) {
  const std::string_view name = c.spec->name;
  const auto& a = c.args;
  const char family = name[0] == 'p' ? 'p' : name == "ssubscribe" || name == "sunsubscribe" ? 's' : ' ';
  std::set<std::string>& mine = family == 'p' ? s.patterns : family == 's' ? s.shard_channels : s.channels;
  const std::string_view kind = name.substr(family == ' ' ? 0 : 1);  // "subscribe" or "unsubscribe"
  auto count = [&] { return family == 's' ? s.shard_channels.size() : s.channels.size() + s.patterns.size(); };
  std::lock_guard lock(shared_.pubsub_mutex);
  auto add = [&](const std::string& n) {
    SharedState::Subscribers& subscribers = family == 'p'   ? shared_.patterns[n]
                                            : family == 's' ? shared_.shard_channels[n]
                                                            : shared_.channels[n];
    subscribers[s.id] = {index_, s.fd};
  };
  auto forget = [&](const std::string& n) {
    if (family == 'p') {
      EraseSubscriber(shared_.patterns, n, s.id);
    } else {
      EraseSubscriber(family == 's' ? shared_.shard_channels : shared_.channels, n, s.id);
    }
  };
  if (kind == "subscribe") {
    for (size_t n = 1; n < a.size(); ++n) {
      if (mine.insert(a[n]).second) add(a[n]);
      Confirm(out, name, &a[n], count());
    }
  } else {  // UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE [name ...]: none named: every one
    std::vector<std::string> names(a.begin() + 1, a.end());
    if (names.empty()) names.assign(mine.begin(), mine.end());
    if (names.empty()) Confirm(out, name, nullptr, count());
    for (const std::string& n : names) {
      if (mine.erase(n) > 0) forget(n);
      Confirm(out, name, &n, count());
    }
  }
  PublishClient(s);  // its CLIENT LIST type and sub=/psub=/ssub= counts
}

void Worker::DeliverMessages() {
  if (!shared_.delivery_pending[index_].exchange(false)) return;
  std::vector<SharedState::Delivery> inbox;
  {
    std::lock_guard lock(shared_.pubsub_mutex);
    inbox.swap(shared_.inboxes[index_]);
  }
  if (inbox.empty()) return;
  for (const SharedState::Delivery& d : inbox) {
    auto it = sessions_.find(d.fd);
    if (it == sessions_.end() || it->second->id != d.session) continue;  // gone meanwhile
    Session& s = *it->second;
    if (s.input_closed || s.closing) continue;  // (CLIENT REPLY OFF keeps messages, as Redis)
    const auto& [channel, message] = *d.published;
    // Unsubscribed since it was published: a RESP2 connection out of
    // subscribed mode would take the message for a reply.
    const bool by_pattern = d.how == SharedState::Delivery::kPattern;
    const bool still = by_pattern                                   ? s.patterns.count(d.pattern) > 0
                       : d.how == SharedState::Delivery::kShard ? s.shard_channels.count(channel) > 0
                                                                  : s.channels.count(channel) > 0;
    if (!still) continue;
    resp::Writer out(&s.out);
    out.SetProtocol(s.protocol);
    out.Push(by_pattern ? 4 : 3);
    out.Bulk(by_pattern ? "pmessage" : d.how == SharedState::Delivery::kShard ? "smessage" : "message");
    if (by_pattern) out.Bulk(d.pattern);
    out.Bulk(channel);
    out.Bulk(message);
    if (s.out.size() - s.out_pos > kMaxSubscriberBacklog) WriteTo(s);  // a slow turn, not a slow reader?
    if (s.out.size() - s.out_pos > kMaxSubscriberBacklog) {
      spdlog::warn("proxy: closing subscriber {} ({}): more than {} bytes of messages unread", s.id,
                   s.peer, kMaxSubscriberBacklog);
      s.input_closed = true;
    }
  }
}

void Worker::DropSubscriptions(Session& s) {
  if (s.subscriptions() == 0) return;
  std::lock_guard lock(shared_.pubsub_mutex);
  for (const std::string& channel : s.channels) EraseSubscriber(shared_.channels, channel, s.id);
  for (const std::string& pattern : s.patterns) EraseSubscriber(shared_.patterns, pattern, s.id);
  for (const std::string& channel : s.shard_channels) EraseSubscriber(shared_.shard_channels, channel, s.id);
  s.channels.clear();
  s.patterns.clear();
  s.shard_channels.clear();
}

}  // namespace rampart::proxy
