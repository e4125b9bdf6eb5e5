// Client reads: round 1 by GET (rpc), GET+ (ring) or GET* (one-sided reads
// through the address cache), then RAMP-Fast's repair round by timestamp.
#include <algorithm>
#include <cstring>

#include "txn/client_impl.h"

namespace rampart::txn {

namespace wire = kv::wire;
using internal::OutgoingRequest;
using internal::PartitionGroup;

// The one-sided reads of one GET* round. Shared with the read completions,
// which may run after the round gave up waiting (timeout): they only touch
// this state, never the caller's.
struct SlotReads {
  struct Read {
    size_t index = 0;  // into the round's keys
    uint32_t partition = 0;
    wire::SlotAddress slot;
    size_t at = 0;  // in `buffer`
    bool done = false;
    Status status;
  };
  std::vector<Read> reads;
  std::shared_ptr<std::vector<std::byte>> buffer = std::make_shared<std::vector<std::byte>>();
  size_t pending = 0;
};

const transport::RemoteRegion* Client::Impl::LiveExtent(uint32_t partition, uint32_t extent) {
  const Link& link = links_[partition];
  if (!link.endpoint || !link.endpoint->connected() || extent >= link.extents.size() ||
      !link.extents[extent].valid()) {
    return nullptr;
  }
  return &link.extents[extent];
}

Status Client::Impl::ImportExtents(std::span<const internal::ExtentId> wanted) {
  std::vector<internal::ExtentId> missing;
  for (const internal::ExtentId& e : wanted) {
    if (LiveExtent(e.partition, e.extent) == nullptr) missing.push_back(e);
  }
  if (missing.empty()) return Status::Ok();
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  auto reqs = internal::BuildDescribeRequests(missing, TakeIds(missing.size()));
  std::vector<Call> calls;
  RAMPART_RETURN_IF_ERROR(Exchange(reqs, calls, Route::kRing));
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    Link& link = links_[c.partition];
    if (c.epoch != link.epoch || !link.endpoint) continue;  // reconnected meanwhile: next round
    const std::string_view d = c.arena.descriptor;
    auto imported = link.endpoint->Import(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(d.data()), d.size()));
    if (!imported.ok()) {
      return imported.status().WithContext(
          StrCat(Where(c.partition), ": importing arena extent ", missing[i].extent));
    }
    if (link.extents.size() <= missing[i].extent) link.extents.resize(missing[i].extent + 1);
    link.extents[missing[i].extent] = std::move(*imported);
  }
  return Status::Ok();
}

void Client::Impl::TakeGetResults(std::span<const std::string_view> keys,
                                  std::span<const OutgoingRequest> gets, std::span<Call> calls,
                                  std::vector<wire::GetResult>& results, ReplyHolds& holds) {
  for (size_t r = 0; r < gets.size(); ++r) {
    if (!calls[r].status.ok()) continue;
    const bool cache = ReadsSlots(gets[r].partition);
    for (size_t j = 0; j < gets[r].indices.size(); ++j) {
      const size_t i = gets[r].indices[j];
      results[i] = calls[r].results[j];
      if (!cache) continue;
      addresses_.PrefetchAhead(j, gets[r].indices.size(), [&](size_t k) { return keys[gets[r].indices[k]]; });
      if (results[i].found) {
        addresses_.Put(keys[i], {gets[r].partition, calls[r].epoch, results[i].slot});
      } else {
        addresses_.Erase(keys[i]);
      }
    }
    holds.push_back(std::move(calls[r].hold));
  }
}

void Client::Impl::RememberWrittenSlots(std::span<const internal::WriteOp> writes,
                                       const OutgoingRequest& req, const Call& call) {
  if (!call.status.ok() || !ReadsSlots(req.partition)) return;
  if (call.slots.size() != req.indices.size()) return;  // the flag was not set
  for (size_t j = 0; j < req.indices.size(); ++j) {
    const std::string_view key = writes[req.indices[j]].key;
    addresses_.PrefetchAhead(j, req.indices.size(), [&](size_t k) { return writes[req.indices[k]].key; });
    if (call.slots[j].bytes == 0) {
      addresses_.Erase(key);
    } else {
      addresses_.Put(key, {req.partition, call.epoch, call.slots[j]});
    }
  }
}

void Client::Impl::RememberWrittenSlots(std::span<const internal::WriteOp> writes,
                                       std::span<const OutgoingRequest> reqs,
                                       std::span<const Call> calls) {
  for (size_t r = 0; r < reqs.size() && r < calls.size(); ++r) {
    RememberWrittenSlots(writes, reqs[r], calls[r]);
  }
}

Status Client::Impl::GetRound(std::span<const std::string_view> keys,
                              std::span<const PartitionGroup> groups,
                              std::vector<wire::GetResult>& results, ReplyHolds& holds) {
  auto gets = internal::BuildGetRequests(keys, groups, TakeIds(groups.size()));
  std::vector<Call> round;
  std::vector<Route> routes = ReadRoutes(gets);
  RAMPART_RETURN_IF_ERROR(Exchange(gets, round, routes, /*coalesce=*/false));
  TakeGetResults(keys, gets, round, results, holds);
  return Status::Ok();
}

Result<std::vector<size_t>> Client::Impl::ReadSlots(std::span<const std::string_view> keys,
                                                    std::span<const PartitionGroup> groups,
                                                    std::vector<wire::GetResult>& results,
                                                    ReplyHolds& holds) {
  // Learn about connections that failed since the last call before trusting
  // any address: a dead node's memory may still read "fine" (docs/ucx_notes.md), and
  // reads through a direct pointer never pass through Progress() themselves.
  for (int i = 0; i < 16 && fabric_->Progress() > 0; ++i) {
  }
  // Plan: a read for every key with a usable address, GET+ for the rest.
  auto state = std::make_shared<SlotReads>();
  std::vector<size_t> misses;
  std::vector<internal::ExtentId> extents;
  size_t total = 0;
  for (const PartitionGroup& g : groups) {
    const bool live = links_[g.partition].endpoint && links_[g.partition].endpoint->connected();
    if (!ReadsSlots(g.partition)) {  // get mode auto, another host: GET
      misses.insert(misses.end(), g.indices.begin(), g.indices.end());
      continue;
    }
    for (size_t j = 0; j < g.indices.size(); ++j) {
      addresses_.PrefetchAhead(j, g.indices.size(), [&](size_t k) { return keys[g.indices[k]]; });
      const size_t i = g.indices[j];
      const internal::AddressCache::Entry* e = addresses_.Find(keys[i]);
      if (!live || e == nullptr || e->partition != g.partition ||
          e->epoch != links_[g.partition].epoch ||
          e->slot.bytes > options_.limits.max_message_bytes) {
        ++stats_.cache_misses;
        misses.push_back(i);
        continue;
      }
      state->reads.push_back({i, g.partition, e->slot, total});
      extents.push_back({g.partition, e->slot.extent()});
      total += (e->slot.bytes + 7) & ~size_t{7};
    }
  }
  RAMPART_RETURN_IF_ERROR(ImportExtents(extents));

  state->buffer->resize(total);
  IssueSlotReads(state);

  // Check: only slots that pass every check are accepted (Algorithm 3).
  for (const SlotReads::Read& read : state->reads) {
    const std::string_view key = keys[read.index];
    if (read.done && read.status.ok()) {
      auto got = internal::ParseSlotRead(
          std::span<const std::byte>(state->buffer->data() + read.at, read.slot.bytes), key,
          read.slot, options_.limits);
      if (got.ok()) {
        results[read.index] = *got;
        ++stats_.slot_reads;
        continue;
      }
    }
    ++stats_.slot_rejects;
    addresses_.Erase(key);
    misses.push_back(read.index);
  }
  if (!state->reads.empty()) holds.push_back(state->buffer);  // accepted results view it
  std::sort(misses.begin(), misses.end());
  return misses;
}

void Client::Impl::IssueSlotReads(const std::shared_ptr<SlotReads>& state) {
  // A plain copy where the arena is mapped here (shared memory), a one-sided
  // read through the endpoint otherwise.
  for (SlotReads::Read& read : state->reads) {
    const transport::RemoteRegion* extent = LiveExtent(read.partition, read.slot.extent());
    std::byte* into = state->buffer->data() + read.at;
    if (extent == nullptr) {
      read.done = true;
      read.status = Unavailable(Where(read.partition), ": connection lost");
      continue;
    }
    const uint64_t offset = read.slot.extent_offset();
    if (offset + read.slot.bytes > extent->size()) {
      read.done = true;
      read.status = Corruption(Where(read.partition), ": slot beyond its arena extent");
      continue;
    }
    if (const std::byte* direct = extent->DirectPointer(offset, read.slot.bytes)) {
      std::memcpy(into, direct, read.slot.bytes);
      read.done = true;
      continue;
    }
    transport::IoSlice slice{into, read.slot.bytes};
    ++state->pending;
    Status st = links_[read.partition].endpoint->Read(
        *extent, offset, std::span<const transport::IoSlice>(&slice, 1),
        [state, &read](Status s) {
          read.done = true;
          read.status = std::move(s);
          --state->pending;
        });
    if (!st.ok()) {
      --state->pending;
      read.done = true;
      read.status = st;
    }
  }
  // A partition that does not answer holds the reads up no longer than it
  // takes to call it unreachable; what is still out falls back to GET+, whose
  // exchange finds out.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::min(options_.request_timeout, options_.unreachable_after);
  while (state->pending > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;  // the reads still out fall back to GET+
    fabric_->Wait(std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
  }
}

Status Client::Impl::ReadRound(std::span<const std::string_view> keys,
                               std::span<const PartitionGroup> groups,
                               std::vector<wire::GetResult>& results, ReplyHolds& holds) {
  RAMPART_ASSIGN_OR_RETURN(std::vector<size_t> misses, ReadSlots(keys, groups, results, holds));
  if (misses.empty()) return Status::Ok();

  // Fallback: GET+ for the misses, which refreshes their addresses.
  std::vector<uint32_t> partition_of(keys.size());
  for (const PartitionGroup& g : groups) {
    for (size_t i : g.indices) partition_of[i] = g.partition;
  }
  std::vector<std::string_view> miss_keys;
  std::vector<uint32_t> miss_partitions;
  miss_keys.reserve(misses.size());
  for (size_t i : misses) {
    miss_keys.push_back(keys[i]);
    miss_partitions.push_back(partition_of[i]);
  }
  std::vector<PartitionGroup> miss_groups = internal::GroupByPartition(miss_partitions);
  std::vector<wire::GetResult> miss_results(miss_keys.size());
  RAMPART_RETURN_IF_ERROR(GetRound(miss_keys, miss_groups, miss_results, holds));
  for (size_t k = 0; k < misses.size(); ++k) results[misses[k]] = miss_results[k];
  return Status::Ok();
}

Status Client::Impl::ReadVersions(std::span<const std::string_view> keys,
                                  std::span<const PartitionGroup> groups, bool repair,
                                  std::vector<wire::GetResult>& results,
                                  ReplyHolds& holds) {
  results.assign(keys.size(), wire::GetResult());
  holds.clear();
  if (AnySlotReads()) {
    RAMPART_RETURN_IF_ERROR(ReadRound(keys, groups, results, holds));
  } else {
    RAMPART_RETURN_IF_ERROR(GetRound(keys, groups, results, holds));
  }
  if (!repair) return Status::Ok();

  std::vector<uint64_t> need = internal::ComputeRepairTimestamps(keys, results);
  auto by_ts = internal::BuildRepairRequests(keys, need, groups, next_request_id_);
  if (by_ts.empty()) return Status::Ok();
  TakeIds(by_ts.size());
  ++stats_.repair_rounds;
  std::vector<Call> round2;
  std::vector<Route> routes = ReadRoutes(by_ts);
  RAMPART_RETURN_IF_ERROR(Exchange(by_ts, round2, routes, /*coalesce=*/false));
  for (size_t r = 0; r < by_ts.size(); ++r) {
    for (size_t j = 0; j < by_ts[r].indices.size(); ++j) {
      size_t i = by_ts[r].indices[j];
      const wire::GetResult& got = round2[r].results[j];
      if (!got.found) {
        // Only GC removes a version a sibling names (the writer prepared
        // every partition before committing any): the read took longer than
        // the grace period. The caller may retry.
        return Aborted("key \"", keys[i], "\" at ts ", need[i], " on ",
                       Where(by_ts[r].partition),
                       " is gone (reclaimed before the repair read); retry the read");
      }
      results[i] = got;
      ++stats_.repaired_keys;
    }
  }
  for (Call& c : round2) holds.push_back(std::move(c.hold));
  return Status::Ok();
}

Result<std::vector<std::optional<std::string>>> Client::Impl::Read(
    const std::vector<std::string>& keys) {
  std::vector<std::optional<std::string>> out(keys.size());
  if (keys.empty()) return out;
  internal::DistinctKeys distinct = internal::Deduplicate(keys);
  std::vector<PartitionGroup> groups = internal::GroupByPartition(distinct.keys, PartitionFn());
  ++stats_.transactions;

  std::vector<wire::GetResult> results;
  ReplyHolds holds;  // the reply bytes `results` views
  Status s;
  switch (options_.isolation) {
    case Isolation::kRamp:
      s = ReadVersions(distinct.keys, groups, /*repair=*/true, results, holds);
      break;
    case Isolation::kNone:
      s = ReadVersions(distinct.keys, groups, /*repair=*/false, results, holds);
      break;
    case Isolation::kS2pl: {
      uint64_t txn = timestamps_->Next();
      std::vector<uint32_t> touched;
      s = LockAll(distinct.keys, groups, kv::LockMode::kShared, txn, &touched);
      if (s.ok()) s = ReadVersions(distinct.keys, groups, /*repair=*/false, results, holds);
      UnlockAll(touched, txn);
      break;
    }
  }
  RAMPART_RETURN_IF_ERROR(s);
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i] = internal::VisibleValue(results[distinct.position[i]]);
  }
  return out;
}

}  // namespace rampart::txn
