// Commands over the whole keyspace — KEYS, SCAN, RANDOMKEY — and the
// sweeper that expires keys and deletes the pages of collections that are
// gone, all over the kv-nodes' SCAN (kv::wire::ScanRequest: live keys in
// the order of their hash, partition by partition).
//
// SCAN's cursor: the partition in its top 16 bits, the partition's hash
// position (in units of 2^16, the grain a kv SCAN never splits) below. A
// call lists about COUNT keys of one partition; the next cursor moves on to
// the next partition when one is done, and is 0 after the last. Every key
// that exists from the first call to the last is listed at least once (the
// kv SCAN's guarantee, partition by partition); a key is listed only by the
// partition that is its primary replica, so replicas add no duplicates.
#include <cstdlib>

#include "proxy/collection.h"
#include "proxy/collection_scan.h"
#include "proxy/commands_internal.h"
#include "proxy/glob.h"
#include "proxy/internal_keys.h"
#include "proxy/worker_job.h"

namespace rampart::proxy {
namespace {

constexpr int kPartitionShift = 48;
constexpr uint64_t kPositionMask = (uint64_t{1} << kPartitionShift) - 1;
constexpr int kGrainBits = 16;  // kv::Partition::kScanGrainBits
// The bytes of each value a listing needs: the type and the expiry.
constexpr uint32_t kHeadBytes = static_cast<uint32_t>(kStoredHeaderBytes);

// The sweeper's commands: not in the command table (clients cannot send
// them), run by the sweeper's session like any data command.
const CommandSpec kExpireSpec{"rampart-expire", 2, CommandKind::kWrite, 1, 1, 1, internal::DeleteIfExpired};
const CommandSpec kSweepPagesSpec{"rampart-sweep-pages", -4, CommandKind::kWrite, 0, 0, 1,
                                  internal::DeleteStalePages, nullptr, internal::SweepPagesKeys};

}  // namespace

// What KEYS / SCAN / RANDOMKEY list.
struct KeyFilter {
  std::optional<std::string_view> match;
  std::optional<std::string> type;  // Redis's type name, lower case (TYPE ignores case)
  uint64_t now_ms = 0;
};

bool Worker::Listed(const KeyFilter& f, uint32_t partition, std::string_view key, std::string_view head) const {
  if (IsInternalKey(key)) return false;
  if (shared_.ring.ReplicasOf(key).partition[0] != partition) return false;  // a replica's copy
  auto v = DecodeStored(head.size() >= kStoredHeaderBytes ? head : std::string_view());
  if (v.ok() && v->expire_at_ms != 0 && v->expire_at_ms <= f.now_ms) return false;
  if (f.type.has_value() && (!v.ok() || RedisTypeName(v->type) != *f.type)) return false;
  return !f.match.has_value() || GlobMatch(*f.match, key);
}

// KEYS pattern
void Worker::Keys(const Command& c, resp::Writer& out) {
  KeyFilter f{c.args[1] == "*" ? std::nullopt : std::optional<std::string_view>(c.args[1]), {}, NowMs()};
  std::vector<std::string> keys;
  const uint32_t partitions = client_->placement().partition_count();
  for (uint32_t p = 0; p < partitions; ++p) {
    std::optional<uint64_t> from = 0;
    while (from.has_value()) {
      auto page = client_->ScanKeys(p, *from, 4096, kHeadBytes);
      if (!page.ok()) return FailReply(out, page.status());
      for (auto& [key, head] : page->items) {
        if (Listed(f, p, key, head)) keys.push_back(std::move(key));
      }
      from = page->next;
    }
  }
  out.Array(keys.size());
  for (const std::string& k : keys) out.Bulk(k);
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
void Worker::Scan(const Command& c, resp::Writer& out) {
  auto cursor = ParseScanCursor(c.args[1]);
  if (!cursor.ok()) return out.Error(cursor.status().message());
  KeyFilter f{{}, {}, NowMs()};
  uint64_t count = 10;
  const std::vector<std::string_view> a = c.Views();
  for (size_t n = 2; n < a.size(); n += 2) {
    const std::string opt = Lower(a[n]);
    if (n + 1 >= a.size()) return out.Error("ERR syntax error");
    if (opt == "match") {
      f.match = a[n + 1] == "*" ? std::nullopt : std::optional<std::string_view>(a[n + 1]);
    } else if (opt == "count") {
      auto v = ParseInt64(a[n + 1]);
      if (!v.ok()) return out.Error(v.status().message());
      if (*v < 1) return out.Error("ERR syntax error");
      count = static_cast<uint64_t>(*v);
    } else if (opt == "type") {
      f.type = Lower(a[n + 1]);
    } else {
      return out.Error("ERR syntax error");
    }
  }
  const uint32_t partitions = client_->placement().partition_count();
  const auto p = static_cast<uint32_t>(*cursor >> kPartitionShift);
  std::vector<std::string> keys;
  uint64_t next = 0;
  if (p < partitions) {
    const uint64_t from = (*cursor & kPositionMask) << kGrainBits;
    auto page = client_->ScanKeys(p, from, static_cast<uint32_t>(std::min<uint64_t>(count, 4096)), kHeadBytes);
    if (!page.ok()) return FailReply(out, page.status());
    for (auto& [key, head] : page->items) {
      if (Listed(f, p, key, head)) keys.push_back(std::move(key));
    }
    if (page->next.has_value()) {
      next = uint64_t{p} << kPartitionShift | *page->next >> kGrainBits;
    } else if (p + 1 < partitions) {
      next = uint64_t{p + 1} << kPartitionShift;
    }
  }
  out.Array(2);
  out.Bulk(std::to_string(next));
  out.Array(keys.size());
  for (const std::string& k : keys) out.Bulk(k);
}

// RANDOMKEY: from a random position of a random partition, the first key
// listed there or after (wrapping over every partition once).
void Worker::RandomKey(resp::Writer& out) {
  const uint32_t partitions = client_->placement().partition_count();
  const KeyFilter f{{}, {}, NowMs()};
  const uint32_t first = static_cast<uint32_t>(random_() % partitions);
  for (uint32_t i = 0; i <= partitions; ++i) {
    const uint32_t p = (first + i) % partitions;
    std::optional<uint64_t> from = i == 0 ? (random_() & ~((uint64_t{1} << kGrainBits) - 1)) : 0;
    while (from.has_value()) {
      auto page = client_->ScanKeys(p, *from, 64, kHeadBytes);
      if (!page.ok()) return FailReply(out, page.status());
      for (const auto& [key, head] : page->items) {
        if (Listed(f, p, key, head)) return out.Bulk(key);
      }
      from = page->next;
    }
  }
  out.Null();
}

void Worker::Sweep(uint64_t now) {
  if (sweeper_ == nullptr || now < next_sweep_ms_ || !sweeper_->queue.empty()) return;
  const uint32_t partitions = client_->placement().partition_count();
  auto page = client_->ScanKeys(sweep_partition_, sweep_from_, kSweepKeys, kHeadBytes);
  if (!page.ok()) {
    next_sweep_ms_ = now + 1000;  // a node down: try later
    return;
  }
  // Expired keys, and the pages listed here grouped by collection.
  std::map<std::pair<std::string, uint64_t>, std::vector<std::string>> pages;
  for (const auto& [key, head] : page->items) {
    if (IsInternalKey(key)) {
      const PageKeyParts parts = ParsePageKey(key);
      pages[{std::string(parts.user_key), parts.collection}].push_back(key);
      continue;
    }
    auto v = DecodeStored(head);
    if (v.ok() && v->expire_at_ms != 0 && v->expire_at_ms <= now) {
      sweeper_->queue.push_back(Command{{std::string(kExpireSpec.name), key}, &kExpireSpec, ""});
    }
  }
  for (auto& [owner, keys] : pages) {
    Command c{{std::string(kSweepPagesSpec.name), owner.first, std::to_string(owner.second)}, &kSweepPagesSpec, ""};
    c.args.insert(c.args.end(), keys.begin(), keys.end());
    sweeper_->queue.push_back(std::move(c));
  }
  if (page->next.has_value()) {
    sweep_from_ = *page->next;
  } else {
    sweep_partition_ = (sweep_partition_ + 1) % partitions;
    sweep_from_ = 0;
  }
  next_sweep_ms_ = now + (sweeper_->queue.empty() ? kSweepIdleMs : kSweepBusyMs);
}

}  // namespace rampart::proxy
