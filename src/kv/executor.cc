// PartitionExecutor: wire requests -> Partition / LockTable -> wire replies.
//
// Replies are collected per connection in an Outbox while one call runs; the
// caller's own message comes first, then messages to other connections whose
// LOCK requests were granted by this call.
//
// S2PL. A LOCK request lists its keys in global key order. They are acquired
// one after the other; when one must wait, the request is parked in
// `waiting_` (by txn) with the index of that key, and it resumes from the next
// key when the LockTable reports the grant (from an UNLOCK, a closed
// connection or an expiry). The reply goes out once every key is held.
#include "kv/executor.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

#include "kv/lock_table.h"
#include "kv/protocol.h"
#include "kv/redo.h"

namespace rampart::kv {
namespace {

uint32_t ClampU32(uint64_t v) {
  return static_cast<uint32_t>(std::min<uint64_t>(v, std::numeric_limits<uint32_t>::max()));
}

wire::SlotAddress SlotOf(const VersionView& v) {
  return wire::SlotAddress{v.slot_offset, ClampU32(v.slot_bytes), v.gen};
}

wire::GetResultIn ToResult(const VersionView& v) {
  wire::GetResultIn r;
  r.found = true;
  r.tombstone = v.tombstone;
  r.ts = v.ts;
  r.value = v.value;
  r.siblings = v.metadata;
  r.slot = SlotOf(v);
  return r;
}

}  // namespace

struct PartitionExecutor::Impl {
  // A LOCK request that waits for one of its keys.
  struct WaitingLock {
    ConnectionId from = 0;
    uint16_t partition = 0;
    uint64_t request_id = 0;
    std::vector<std::pair<std::string, LockMode>> keys;
    size_t next = 0;  // index of the key being waited for
  };

  // The reply message under construction for one connection. Built in place
  // and never moved (the writer points at the bytes): a deque keeps every
  // Outbox where it is while more are added.
  struct Outbox {
    explicit Outbox(ConnectionId c) : to(c), writer(&bytes) {}
    ConnectionId to;
    std::vector<std::byte> bytes;
    wire::ReplyWriter writer;
  };
  using Outboxes = std::deque<Outbox>;

  Impl(uint32_t partition_id, std::span<std::byte> arena, const ExecutorOptions& opts)
      : id(partition_id), options(opts), partition(arena, opts.partition) {
    limits.max_message_bytes = ClampU32(opts.max_message_bytes);
    limits.max_key_bytes = ClampU32(opts.partition.max_key_bytes);
    limits.max_value_bytes = ClampU32(opts.partition.max_value_bytes);
  }

  // The writer of the message under construction for `conn` (its last).
  wire::ReplyWriter& To(Outboxes& out, ConnectionId conn) {
    for (auto o = out.rbegin(); o != out.rend(); ++o) {
      if (o->to == conn) return o->writer;
    }
    return out.emplace_back(conn).writer;
  }

  // To(), for a reply of `bytes`: another message for `conn` when this one
  // would grow past the message bound (a reply that alone does not fit is
  // the caller's to refuse).
  wire::ReplyWriter& ToWithRoom(Outboxes& out, ConnectionId conn, size_t bytes) {
    wire::ReplyWriter& w = To(out, conn);
    if (w.count() == 0 || w.message_bytes() + bytes <= options.max_message_bytes) return w;
    return out.emplace_back(conn).writer;
  }

  // GET / GET_BY_TS: the results, or an error when they are more than one
  // message carries (the client asks for fewer keys at once: RunBatch cuts a
  // partition's keys by their expected bytes, BatchTxn::PlacedRead).
  void ReplyResults(Outboxes& out, ConnectionId from, const wire::RequestHeader& h,
                    std::span<const wire::GetResultIn> results) {
    const size_t bytes = wire::ReplyWriter::GetResultsBytes(results);
    wire::ReplyWriter& w = ToWithRoom(out, from, bytes);
    if (bytes + 4 > options.max_message_bytes) {  // 4: the message's frame count
      return w.Error(static_cast<uint8_t>(h.type), h.partition, h.request_id,
                     ResourceExhausted("the reply to a read of ", results.size(), " keys would be ",
                                       bytes, " bytes, more than one message carries (",
                                       options.max_message_bytes, "); read fewer keys at once"));
    }
    w.GetResults(h.type, h.partition, h.request_id, results);
  }

  static std::vector<OutgoingReply> Finish(Outboxes& out) {
    std::vector<OutgoingReply> replies;
    for (Outbox& o : out) {
      if (o.writer.count() == 0) continue;
      replies.push_back(OutgoingReply{o.to, std::move(o.bytes)});
    }
    return replies;
  }

  uint16_t wire_partition() const { return static_cast<uint16_t>(id); }

  // Acquires w.keys[w.next..] for txn. Returns true when the request is
  // finished (granted, replied OK, or failed, replied with the error); false
  // when it waits on w.keys[w.next].
  bool Continue(uint64_t txn, WaitingLock& w, Clock::time_point now, Outboxes& out) {
    for (; w.next < w.keys.size(); ++w.next) {
      const auto& [key, mode] = w.keys[w.next];
      Result<AcquireOutcome> r = locks.Acquire(txn, key, mode, now);
      if (!r.ok()) {
        To(out, w.from).Error(static_cast<uint8_t>(wire::MsgType::kLock), w.partition,
                              w.request_id, r.status().WithContext(StrCat("LOCK key ", w.next)));
        return true;
      }
      if (*r == AcquireOutcome::kWaiting) return false;
    }
    To(out, w.from).Ok(wire::MsgType::kLock, w.partition, w.request_id);
    return true;
  }

  // Resumes the LOCK requests whose awaited key was just granted.
  void OnGrants(const std::vector<LockGrant>& grants, Clock::time_point now,
                Outboxes& out) {
    for (const LockGrant& g : grants) {
      auto it = waiting.find(g.txn);
      if (it == waiting.end()) continue;  // not waiting through us (or already answered)
      ++it->second.next;
      if (Continue(g.txn, it->second, now, out)) waiting.erase(it);
    }
  }

  // Where each item's version at `ts` lives: what a PREPARE with
  // kFlagReturnSlots answers (wire::ReplyWriter::Slots).
  std::vector<wire::SlotAddress> WrittenSlots(std::span<const PrepareItem> items, uint64_t ts,
                                              bool committed) const {
    std::vector<wire::SlotAddress> slots(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      std::optional<VersionView> v = partition.GetByTs(items[i].key, ts);
      if (!v || (committed && !v->latest)) continue;
      slots[i] = SlotOf(*v);
    }
    return slots;
  }

  // kFlagIfAbsent: AlreadyExists naming the first item whose key is live.
  Status CheckAbsent(std::span<const PrepareItem> items, uint64_t ts, uint16_t partition_id) const {
    for (const PrepareItem& item : items) {
      if (!partition.Absent(item.key, ts)) {
        return AlreadyExists("key \"", item.key.substr(0, 64), "\" exists on partition ",
                             partition_id, " (PREPARE IF_ABSENT)");
      }
    }
    return Status::Ok();
  }

  // kFlagIfUnchanged: FailedPrecondition naming the first key written or
  // prepared since the writer read it.
  Status CheckUnchanged(std::span<const wire::KeyTs> read, uint64_t ts, uint16_t partition_id,
                        Clock::time_point now) const {
    for (const wire::KeyTs& k : read) {
      if (!partition.Unchanged(k.key, k.ts, ts, now)) {
        return FailedPrecondition("key \"", k.key.substr(0, 64), "\" changed on partition ",
                                  partition_id, " since version ", k.ts,
                                  " was read (PREPARE IF_UNCHANGED)");
      }
    }
    return Status::Ok();
  }

  // `frame` is the request as it arrived (a PREPARE's body goes to the redo
  // log as it is).
  void ExecuteOne(ConnectionId from, const wire::RequestFrame& frame, const wire::Request& req,
                  Clock::time_point now, Outboxes& out) {
    const wire::RequestHeader& h = req.header;
    wire::ReplyWriter& w = To(out, from);
    auto error = [&](const Status& st) {
      w.Error(static_cast<uint8_t>(h.type), h.partition, h.request_id, st);
    };
    if (const auto* p = std::get_if<wire::PrepareRequest>(&req.body)) {
      // Views into the message: the wire's KeyList encoding is the slot's
      // metadata encoding, so the siblings go into the slot as they are.
      const std::vector<PrepareItem> items = PartitionItems(*p);
      const bool commit_now = (h.flags & wire::kFlagCommitNow) != 0;
      if ((h.flags & wire::kFlagIfAbsent) != 0) {
        if (Status st = CheckAbsent(items, p->ts, h.partition); !st.ok()) return error(st);
      }
      if ((h.flags & wire::kFlagIfUnchanged) != 0) {
        if (Status st = CheckUnchanged(p->unchanged, p->ts, h.partition, now); !st.ok()) {
          return error(st);
        }
      }
      Status st = partition.Prepare(p->ts, items, now);
      if (st.ok() && commit_now) st = partition.Commit(p->ts, now);
      if (!st.ok()) return error(st);
      // The log keeps what recovery needs: whether the PREPARE committed.
      // (Without the IF_UNCHANGED list: a logged PREPARE passed its checks.)
      if (redo != nullptr) {
        redo->Prepare(h.flags & wire::kFlagCommitNow, frame.body.first(p->items_bytes));
      }
      if ((h.flags & wire::kFlagReturnSlots) == 0) return w.Ok(h.type, h.partition, h.request_id);
      w.Slots(h.partition, h.request_id, WrittenSlots(items, p->ts, commit_now));
    } else if (const auto* c = std::get_if<wire::CommitRequest>(&req.body)) {
      if (Status st = partition.Commit(c->ts, now); !st.ok()) return error(st);
      if (redo != nullptr) redo->Commit(c->ts);
      w.Ok(h.type, h.partition, h.request_id);
    } else if (const auto* g = std::get_if<wire::GetRequest>(&req.body)) {
      std::vector<wire::GetResultIn> results(g->keys.size());
      for (size_t i = 0; i < g->keys.size(); ++i) {
        if (std::optional<VersionView> v = partition.Get(g->keys[i])) results[i] = ToResult(*v);
      }
      ReplyResults(out, from, h, results);
    } else if (const auto* b = std::get_if<wire::GetByTsRequest>(&req.body)) {
      std::vector<wire::GetResultIn> results(b->items.size());
      for (size_t i = 0; i < b->items.size(); ++i) {
        if (auto v = partition.GetByTs(b->items[i].key, b->items[i].ts)) results[i] = ToResult(*v);
      }
      ReplyResults(out, from, h, results);
    } else if (const auto* l = std::get_if<wire::LockRequest>(&req.body)) {
      if (waiting.contains(l->txn)) {
        return error(FailedPrecondition("txn ", l->txn, " already has a LOCK request waiting"));
      }
      WaitingLock wl{from, h.partition, h.request_id, {}, 0};
      wl.keys.reserve(l->keys.size());
      for (const wire::LockKey& k : l->keys) wl.keys.emplace_back(std::string(k.key), k.mode);
      if (!Continue(l->txn, wl, now, out)) waiting.emplace(l->txn, std::move(wl));
    } else if (const auto* u = std::get_if<wire::UnlockRequest>(&req.body)) {
      // A LOCK of this txn still waiting is abandoned: answer it.
      if (auto it = waiting.find(u->txn); it != waiting.end()) {
        const WaitingLock& wl = it->second;
        To(out, wl.from).Error(static_cast<uint8_t>(wire::MsgType::kLock), wl.partition,
                               wl.request_id, Aborted("txn ", u->txn, " unlocked while waiting"));
        waiting.erase(it);
      }
      std::vector<LockGrant> grants = locks.ReleaseAll(u->txn, now);
      w.Ok(h.type, h.partition, h.request_id);
      OnGrants(grants, now, out);
    } else if (const auto* d = std::get_if<wire::DescribeRequest>(&req.body)) {
      if (!describe) {
        return error(NotSupported("partition ", id,
                                  " does not expose its arena (the tcp transport has no "
                                  "one-sided reads); use get mode rpc or ring"));
      }
      const Arena& arena = partition.arena();
      if (d->extent >= arena.extent_count()) {
        return error(NotFound("partition ", id, " has no arena extent ", d->extent, " (it has ",
                              arena.extent_count(), ")"));
      }
      Result<std::vector<std::byte>> descriptor = describe(d->extent);
      if (!descriptor.ok()) return error(descriptor.status());
      w.Arena(h.partition, h.request_id,
              wire::ArenaInfo{arena.extent(d->extent).size(),
                              std::string_view(reinterpret_cast<const char*>(descriptor->data()),
                                               descriptor->size())});
    } else if (std::holds_alternative<wire::CountRequest>(req.body)) {
      w.Count(h.partition, h.request_id, partition.LiveUserKeys());
    } else if (const auto* scan = std::get_if<wire::ScanRequest>(&req.body)) {
      std::vector<wire::ScanItem> items;
      const std::optional<uint64_t> next =
          partition.ScanKeys(scan->from, scan->max_keys, [&](const VersionView& v) {
            items.push_back({v.key, v.value.substr(0, scan->head_bytes)});
          });
      w.Scan(h.partition, h.request_id, next, items);
    } else if (std::holds_alternative<wire::StatsRequest>(req.body)) {
      const PartitionStats st = partition.Stats();
      w.Stats(h.partition, h.request_id,
              wire::PartitionStatsInfo{partition.LiveUserKeys(), st.versions, st.arena.page_bytes,
                                       st.arena.reserved_bytes, partition.max_ts(),
                                       partition.LiveKeys() - partition.LiveUserKeys()});
    } else if (std::holds_alternative<wire::FlushRequest>(req.body)) {
      partition.Flush();
      if (redo != nullptr) redo->Flush();
      w.Ok(h.type, h.partition, h.request_id);
    }
  }

  std::vector<OutgoingReply> Execute(ConnectionId from, std::span<const std::byte> message,
                                     Clock::time_point now) {
    Outboxes out;
    if (message.size() > options.max_message_bytes) {
      To(out, from).Error(0, wire_partition(), 0,
                          InvalidArgument("message of ", message.size(),
                                          " bytes exceeds the limit of ",
                                          options.max_message_bytes));
      return Finish(out);
    }
    Result<std::vector<wire::RequestFrame>> frames = wire::SplitRequests(message, limits);
    if (!frames.ok()) {
      To(out, from).Error(0, wire_partition(), 0, frames.status());
      return Finish(out);
    }
    To(out, from);  // the caller's message first, even if grants follow
    for (const wire::RequestFrame& frame : *frames) {
      const wire::RequestHeader& h = frame.header;
      if (h.partition != id) {
        To(out, from).Error(static_cast<uint8_t>(h.type), h.partition, h.request_id,
                            InvalidArgument("request for partition ", h.partition,
                                            " sent to partition ", id));
        continue;
      }
      Result<wire::Request> req = wire::DecodeRequest(frame, limits);
      if (!req.ok()) {
        To(out, from).Error(static_cast<uint8_t>(h.type), h.partition, h.request_id,
                            req.status());
        continue;
      }
      ExecuteOne(from, frame, *req, now, out);
    }
    return Finish(out);
  }

  std::vector<OutgoingReply> Tick(Clock::time_point now) {
    partition.Gc(now);
    Outboxes out;
    LockTable::Expired expired = locks.ExpireOlderThan(now - options.lock_timeout, now);
    for (uint64_t txn : expired.txns) {
      auto it = waiting.find(txn);
      if (it == waiting.end()) continue;
      const WaitingLock& wl = it->second;
      To(out, wl.from).Error(static_cast<uint8_t>(wire::MsgType::kLock), wl.partition,
                             wl.request_id,
                             TimedOut("lock wait of txn ", txn, " broken after ",
                                      options.lock_timeout.count(), " ms without activity"));
      waiting.erase(it);
    }
    OnGrants(expired.grants, now, out);
    return Finish(out);
  }

  std::vector<OutgoingReply> ConnectionClosed(ConnectionId conn, Clock::time_point now) {
    Outboxes out;
    std::vector<uint64_t> dropped;
    for (const auto& [txn, wl] : waiting) {
      if (wl.from == conn) dropped.push_back(txn);
    }
    for (uint64_t txn : dropped) {
      waiting.erase(txn);
      OnGrants(locks.AbortWaiting(txn, now), now, out);
    }
    return Finish(out);
  }

  const uint32_t id;
  const ExecutorOptions options;
  wire::ProtocolLimits limits;
  Partition partition;
  LockTable locks;
  std::unordered_map<uint64_t, WaitingLock> waiting;  // txn -> its waiting LOCK request
  DescribeExtent describe;                            // empty: not exposed
  PartitionRedo* redo = nullptr;                      // nullptr: volatile
};

PartitionExecutor::PartitionExecutor(uint32_t partition, std::span<std::byte> arena,
                                     const ExecutorOptions& options)
    : impl_(std::make_unique<Impl>(partition, arena, options)) {}

PartitionExecutor::~PartitionExecutor() = default;

std::vector<OutgoingReply> PartitionExecutor::Execute(ConnectionId from,
                                                      std::span<const std::byte> message,
                                                      std::chrono::steady_clock::time_point now) {
  return impl_->Execute(from, message, now);
}

std::vector<OutgoingReply> PartitionExecutor::Tick(std::chrono::steady_clock::time_point now) {
  return impl_->Tick(now);
}

std::vector<OutgoingReply> PartitionExecutor::ConnectionClosed(
    ConnectionId id, std::chrono::steady_clock::time_point now) {
  return impl_->ConnectionClosed(id, now);
}

void PartitionExecutor::AttachRedo(PartitionRedo* redo) { impl_->redo = redo; }

Partition& PartitionExecutor::mutable_partition() { return impl_->partition; }

void PartitionExecutor::ExposeArena(DescribeExtent describe) {
  impl_->describe = std::move(describe);
}

const Partition& PartitionExecutor::partition() const { return impl_->partition; }

}  // namespace rampart::kv
