#include "txn/ramp_logic.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <absl/container/flat_hash_map.h>

#include "common/timestamp.h"

namespace rampart::txn::internal {

namespace wire = kv::wire;

std::vector<PartitionGroup> GroupByPartition(std::span<const std::string_view> keys,
                                             const PartitionOf& partition_of) {
  std::map<uint32_t, std::vector<size_t>> by_partition;
  for (size_t i = 0; i < keys.size(); ++i) by_partition[partition_of(keys[i])].push_back(i);
  std::vector<PartitionGroup> groups;
  groups.reserve(by_partition.size());
  for (auto& [partition, indices] : by_partition) {
    groups.push_back(PartitionGroup{partition, std::move(indices)});
  }
  return groups;
}

std::vector<PartitionGroup> GroupByPartition(std::span<const uint32_t> partitions) {
  std::map<uint32_t, std::vector<size_t>> by_partition;
  for (size_t i = 0; i < partitions.size(); ++i) by_partition[partitions[i]].push_back(i);
  std::vector<PartitionGroup> groups;
  groups.reserve(by_partition.size());
  for (auto& [partition, indices] : by_partition) {
    groups.push_back(PartitionGroup{partition, std::move(indices)});
  }
  return groups;
}

std::vector<PartitionGroup> CutBySize(std::vector<PartitionGroup> groups,
                                      std::span<const uint64_t> bytes, uint64_t budget) {
  std::vector<PartitionGroup> out;
  out.reserve(groups.size());
  for (PartitionGroup& g : groups) {
    uint64_t total = 0;
    for (size_t i : g.indices) total += bytes[i];
    if (total <= budget) {
      out.push_back(std::move(g));
      continue;
    }
    PartitionGroup cut{g.partition, {}};
    uint64_t in_cut = 0;
    for (size_t i : g.indices) {
      if (!cut.indices.empty() && in_cut + bytes[i] > budget) {
        out.push_back(std::move(cut));
        cut = PartitionGroup{g.partition, {}};
        in_cut = 0;
      }
      cut.indices.push_back(i);
      in_cut += bytes[i];
    }
    out.push_back(std::move(cut));
  }
  return out;
}

namespace {

OutgoingRequest Start(uint32_t partition, uint64_t request_id, wire::MsgType type,
                      std::vector<size_t> indices) {
  OutgoingRequest req;
  req.partition = partition;
  req.request_id = request_id;
  req.type = type;
  req.indices = std::move(indices);
  return req;
}

}  // namespace

std::vector<OutgoingRequest> BuildGetRequests(std::span<const std::string_view> keys,
                                              std::span<const PartitionGroup> groups,
                                              uint64_t first_request_id) {
  std::vector<OutgoingRequest> out;
  out.reserve(groups.size());
  std::vector<std::string_view> part_keys;
  for (const PartitionGroup& g : groups) {
    OutgoingRequest req = Start(g.partition, first_request_id + out.size(), wire::MsgType::kGet,
                                g.indices);
    part_keys.clear();
    for (size_t i : g.indices) part_keys.push_back(keys[i]);
    wire::RequestWriter(&req.message)
        .Get(static_cast<uint16_t>(g.partition), req.request_id, part_keys);
    out.push_back(std::move(req));
  }
  return out;
}

std::vector<OutgoingRequest> BuildRepairRequests(std::span<const std::string_view> keys,
                                                 std::span<const uint64_t> repair_ts,
                                                 std::span<const PartitionGroup> groups,
                                                 uint64_t first_request_id) {
  std::vector<OutgoingRequest> out;
  std::vector<wire::KeyTs> items;
  for (const PartitionGroup& g : groups) {
    std::vector<size_t> behind;
    items.clear();
    for (size_t i : g.indices) {
      if (repair_ts[i] == kNoTimestamp) continue;
      behind.push_back(i);
      items.push_back(wire::KeyTs{keys[i], repair_ts[i]});
    }
    if (behind.empty()) continue;
    OutgoingRequest req = Start(g.partition, first_request_id + out.size(),
                                wire::MsgType::kGetByTs, std::move(behind));
    wire::RequestWriter(&req.message)
        .GetByTs(static_cast<uint16_t>(g.partition), req.request_id, items);
    out.push_back(std::move(req));
  }
  return out;
}

std::vector<std::string> WriteSetSiblings(std::span<const WriteOp> writes) {
  // Siblings of item i = every other key of the write set (Algorithm 1, l.7:
  // metadata = K_tx - {k}), each once although replicas repeat it. Quadratic
  // in the write-set size, which is small (a transaction, not a bulk load);
  // each encoding is copied into the slot.
  std::vector<std::string_view> distinct;
  distinct.reserve(writes.size());
  for (const WriteOp& w : writes) {
    if (std::find(distinct.begin(), distinct.end(), w.key) == distinct.end()) {
      distinct.push_back(w.key);
    }
  }
  std::vector<std::string> siblings(writes.size());
  {
    std::vector<std::string_view> others;
    others.reserve(distinct.size());
    for (size_t i = 0; i < writes.size(); ++i) {
      if (i > 0 && writes[i].key == writes[i - 1].key) {
        siblings[i] = siblings[i - 1];
        continue;
      }
      others.clear();
      for (std::string_view k : distinct) {
        if (k != writes[i].key) others.push_back(k);
      }
      siblings[i] = wire::EncodeKeyList(others);
    }
  }
  return siblings;
}

std::vector<OutgoingRequest> BuildPrepareRequests(std::span<const WriteOp> writes,
                                                  std::span<const PartitionGroup> groups,
                                                  uint64_t ts, uint8_t flags,
                                                  uint64_t first_request_id) {
  const std::vector<std::string> siblings = WriteSetSiblings(writes);
  return BuildPrepareRequests(writes, siblings, groups, ts, flags, first_request_id);
}

std::vector<OutgoingRequest> BuildPrepareRequests(std::span<const WriteOp> writes,
                                                  std::span<const std::string> siblings,
                                                  std::span<const PartitionGroup> groups,
                                                  uint64_t ts, uint8_t flags,
                                                  uint64_t first_request_id,
                                                  std::span<const std::vector<kv::wire::KeyTs>> unchanged) {
  std::vector<OutgoingRequest> out;
  out.reserve(groups.size());
  std::vector<wire::PrepareItemIn> items;
  for (const PartitionGroup& g : groups) {
    OutgoingRequest req = Start(g.partition, first_request_id + out.size(),
                                wire::MsgType::kPrepare, g.indices);
    items.clear();
    for (size_t i : g.indices) {
      items.push_back(wire::PrepareItemIn{writes[i].key,
                                          writes[i].tombstone ? std::string_view() : writes[i].value,
                                          siblings[i], writes[i].tombstone});
    }
    wire::RequestWriter(&req.message)
        .Prepare(static_cast<uint16_t>(g.partition), req.request_id, ts, items, flags,
                 unchanged.empty() ? std::span<const kv::wire::KeyTs>() : unchanged[out.size()]);
    out.push_back(std::move(req));
  }
  return out;
}

std::vector<OutgoingRequest> BuildCommitRequests(std::span<const PartitionGroup> groups,
                                                 uint64_t ts, uint64_t first_request_id) {
  std::vector<OutgoingRequest> out;
  out.reserve(groups.size());
  for (const PartitionGroup& g : groups) {
    OutgoingRequest req = Start(g.partition, first_request_id + out.size(),
                                wire::MsgType::kCommit, g.indices);
    wire::RequestWriter(&req.message)
        .Commit(static_cast<uint16_t>(g.partition), req.request_id, ts);
    out.push_back(std::move(req));
  }
  return out;
}

OutgoingRequest BuildLockRequest(std::span<const std::string_view> keys,
                                 const PartitionGroup& group, kv::LockMode mode, uint64_t txn,
                                 uint64_t request_id) {
  std::vector<size_t> sorted = group.indices;
  std::sort(sorted.begin(), sorted.end(),
            [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  std::vector<wire::LockKey> lock_keys;
  lock_keys.reserve(sorted.size());
  for (size_t i : sorted) lock_keys.push_back(wire::LockKey{keys[i], mode});
  OutgoingRequest req = Start(group.partition, request_id, wire::MsgType::kLock, std::move(sorted));
  wire::RequestWriter(&req.message)
      .Lock(static_cast<uint16_t>(group.partition), request_id, txn, lock_keys);
  return req;
}

std::vector<OutgoingRequest> BuildUnlockRequests(std::span<const uint32_t> partitions,
                                                 uint64_t txn, uint64_t first_request_id) {
  std::vector<OutgoingRequest> out;
  out.reserve(partitions.size());
  for (uint32_t p : partitions) {
    OutgoingRequest req = Start(p, first_request_id + out.size(), wire::MsgType::kUnlock, {});
    wire::RequestWriter(&req.message).Unlock(static_cast<uint16_t>(p), req.request_id, txn);
    out.push_back(std::move(req));
  }
  return out;
}

std::vector<OutgoingRequest> BuildDescribeRequests(std::span<const ExtentId> extents,
                                                   uint64_t first_request_id) {
  std::vector<OutgoingRequest> out;
  out.reserve(extents.size());
  for (const ExtentId& e : extents) {
    OutgoingRequest req =
        Start(e.partition, first_request_id + out.size(), wire::MsgType::kDescribe, {});
    wire::RequestWriter(&req.message)
        .Describe(static_cast<uint16_t>(e.partition), req.request_id, e.extent);
    out.push_back(std::move(req));
  }
  return out;
}

std::vector<uint64_t> ComputeRepairTimestamps(std::span<const std::string_view> keys,
                                              std::span<const wire::GetResult> round1) {
  // Looked up once per sibling of every version read: a read of a large
  // collection's pages goes through thousands of siblings (pages written by
  // one bulk GEOADD or ZADD list hundreds each), where std::unordered_map's
  // hashing and chains were a third of a proxy worker (ZSCORE at -P 16).
  absl::flat_hash_map<std::string_view, size_t> index;
  index.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) index.emplace(keys[i], i);

  // latest[i]: the newest ts some returned version says keys[i] was written at.
  std::vector<uint64_t> latest(keys.size(), kNoTimestamp);
  // seen[i]: the version returned for keys[i] was written by the transaction
  // of a version whose siblings were gone through already. A key has one
  // version per ts, so a sibling s of r (at r.ts) whose returned version is
  // at r.ts too is r's transaction's: its siblings are r's, less s, plus
  // r's own key — whose returned version is at r.ts, so no claim of that ts
  // puts it behind. Skipping it changes nothing and saves the quadratic
  // walk of a large write set's versions (a proxy's group of ZADDs reads
  // dozens of pages written together).
  std::vector<bool> seen(keys.size(), false);
  for (size_t i = 0; i < round1.size(); ++i) {
    const wire::GetResult& r = round1[i];
    if (!r.found || seen[i]) continue;
    for (std::string_view sibling : r.siblings) {
      auto it = index.find(sibling);
      if (it == index.end()) continue;
      const size_t j = it->second;
      latest[j] = std::max(latest[j], r.ts);
      if (round1[j].found && round1[j].ts == r.ts) seen[j] = true;
    }
  }
  std::vector<uint64_t> repair(keys.size(), kNoTimestamp);
  for (size_t i = 0; i < keys.size(); ++i) {
    uint64_t have = round1[i].found ? round1[i].ts : kNoTimestamp;
    if (latest[i] > have) repair[i] = latest[i];
  }
  return repair;
}

void AppendMessage(std::vector<std::byte>* into, std::span<const std::byte> message) {
  // Both are `u32 count (little-endian), frames`: add the counts, append the frames.
  auto count_of = [](std::span<const std::byte> m) {
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= uint32_t{std::to_integer<uint8_t>(m[i])} << (8 * i);
    return n;
  };
  if (into->empty()) {
    into->assign(message.begin(), message.end());
    return;
  }
  const uint32_t total = count_of(*into) + count_of(message);
  for (int i = 0; i < 4; ++i) (*into)[i] = static_cast<std::byte>(total >> (8 * i));
  into->insert(into->end(), message.begin() + wire::kMessageHeaderBytes, message.end());
}

std::optional<std::string> VisibleValue(const wire::GetResult& result) {
  if (!result.found || result.tombstone) return std::nullopt;
  return std::string(result.value);
}

DistinctKeys Deduplicate(std::span<const std::string> keys) {
  DistinctKeys out;
  out.position.reserve(keys.size());
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(keys.size());
  for (const std::string& k : keys) {
    auto [it, inserted] = seen.emplace(k, out.keys.size());
    if (inserted) out.keys.push_back(k);
    out.position.push_back(it->second);
  }
  return out;
}

}  // namespace rampart::txn::internal
