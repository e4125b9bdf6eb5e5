// Client::RunBatch: many independent transactions run round by round
// together (the proxy's aggregation, seed 003). Round 1 carries every read's
// first round and every write's PREPARE, round 2 the reads' repairs and the
// writes' COMMITs; with `coalesce` the requests for one partition share one
// message, and the reads of all transactions share one GET per partition.
#include <algorithm>
#include <unordered_map>

#include "txn/client_impl.h"

namespace rampart::txn {

namespace wire = kv::wire;
using internal::OutgoingRequest;
using internal::PartitionGroup;

namespace {

// A read transaction's distinct keys, laid end to end with the other read
// transactions' in one combined key list.
struct ReadPart {
  BatchTxn* txn = nullptr;
  size_t first = 0;               // in the combined list
  size_t count = 0;               // distinct keys
  std::vector<size_t> position;   // reads[i] -> first + position[i]
};

// A write transaction's groups and timestamp.
struct WritePart {
  BatchTxn* txn = nullptr;
  std::vector<PartitionGroup> groups;
  uint64_t ts = 0;
  bool two_rounds = false;  // PREPARE then COMMIT (else committed in round 1)
};

// Fails `txn` with `status` unless it already failed.
void Fail(BatchTxn& txn, const Status& status, uint32_t partition) {
  if (!txn.status.ok()) return;
  txn.status = status;
  if (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kTimedOut) {
    txn.failed_partition = static_cast<int>(partition);
  }
}

// Moves the requests of `built` (over a sub-list whose index j is
// `to_combined[j]`) to `out`, renumbering their indices to the combined list.
void AppendRenumbered(std::vector<OutgoingRequest>&& built, std::span<const size_t> to_combined,
                      std::vector<OutgoingRequest>& out) {
  for (OutgoingRequest& req : built) {
    for (size_t& i : req.indices) i = to_combined[i];
    out.push_back(std::move(req));
  }
}

}  // namespace

void Client::Impl::RunBatch(std::span<BatchTxn> txns, bool coalesce) {
  for (BatchTxn& t : txns) {
    t.status = Status::Ok();
    t.values.clear();
    t.failed_partition = -1;
    t.read_ts = 0;
  }
  if (options_.isolation == Isolation::kS2pl) {
    for (BatchTxn& t : txns) t.status = InvalidArgument("RunBatch: isolation s2pl is not batched");
    return;
  }
  stats_.transactions += txns.size();
  const bool ramp = options_.isolation == Isolation::kRamp;

  // ---- Plan: the combined read keys and the write transactions.
  std::vector<std::string_view> keys;
  std::vector<uint32_t> partitions;
  std::vector<ReadPart*> owner;  // combined index -> its transaction
  std::vector<ReadPart> reads;
  std::vector<WritePart> writes;
  reads.reserve(txns.size());
  for (BatchTxn& t : txns) {
    if (!t.reads.empty() && !t.writes.empty()) {
      t.status = InvalidArgument("RunBatch: a transaction has reads and writes");
      continue;
    }
    if (!t.reads.empty()) {
      ReadPart& part = reads.emplace_back();
      part.txn = &t;
      part.first = keys.size();
      std::unordered_map<std::string_view, size_t> seen;
      for (const PlacedRead& r : t.reads) {
        auto [it, fresh] = seen.emplace(r.key, part.count);
        if (fresh) {
          keys.push_back(r.key);
          partitions.push_back(r.partition);
          ++part.count;
        }
        part.position.push_back(it->second);
      }
    } else if (!t.writes.empty()) {
      WritePart& part = writes.emplace_back();
      part.txn = &t;
      std::vector<uint32_t> where;
      where.reserve(t.writes.size());
      for (const PlacedWrite& w : t.writes) where.push_back(w.partition);
      part.groups = internal::GroupByPartition(where);
      for (const PartitionGroup& g : part.groups) {
        for (size_t a = 0; a < g.indices.size(); ++a) {
          for (size_t b = a + 1; b < g.indices.size(); ++b) {
            if (t.writes[g.indices[a]].key == t.writes[g.indices[b]].key) {
              t.status = InvalidArgument("RunBatch: key \"", t.writes[g.indices[a]].key,
                                         "\" written twice on partition ", g.partition);
            }
          }
        }
      }
      if (!t.status.ok()) writes.pop_back();
    }
  }
  for (ReadPart& part : reads) {
    for (size_t k = 0; k < part.count; ++k) owner.push_back(&part);
  }

  // ---- Round 1: reads' GET (after GET*'s one-sided reads), writes' PREPARE.
  std::vector<wire::GetResult> results(keys.size());
  ReplyHolds holds;
  std::vector<size_t> misses;  // combined indices left for a GET (ascending)
  bool slots_read = false;
  if (options_.get_mode == GetMode::kRead && !keys.empty()) {
    // A failure here (an arena not imported) leaves every key to its GET,
    // which fails only the transactions of an unreachable partition.
    auto slots = ReadSlots(keys, internal::GroupByPartition(partitions), results, holds);
    if (slots.ok()) {
      misses = std::move(*slots);
      slots_read = true;
    }
  }
  if (!slots_read) {
    misses.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) misses[i] = i;
  }
  std::vector<OutgoingRequest> round1;
  // GETs over the combined indices in `subset` (ascending).
  auto add_gets = [&](std::span<const size_t> subset) {
    if (subset.empty()) return;
    std::vector<std::string_view> sub_keys;
    std::vector<uint32_t> sub_partitions;
    for (size_t i : subset) {
      sub_keys.push_back(keys[i]);
      sub_partitions.push_back(partitions[i]);
    }
    auto groups = internal::GroupByPartition(sub_partitions);
    AppendRenumbered(internal::BuildGetRequests(sub_keys, groups, TakeIds(groups.size())), subset,
                     round1);
  };
  if (coalesce) {
    add_gets(misses);
  } else {
    size_t m = 0;
    for (const ReadPart& part : reads) {
      const size_t begin = m;
      while (m < misses.size() && misses[m] < part.first + part.count) ++m;
      add_gets(std::span<const size_t>(misses).subspan(begin, m - begin));
    }
  }
  const size_t get_count = round1.size();
  std::vector<std::vector<internal::WriteOp>> write_ops(writes.size());
  std::vector<WritePart*> request_writer;  // round-1 request (after the GETs) -> its write
  for (size_t w = 0; w < writes.size(); ++w) {
    WritePart& part = writes[w];
    for (const PlacedWrite& pw : part.txn->writes) {
      write_ops[w].push_back(internal::WriteOp{pw.key, pw.value, pw.tombstone});
    }
    part.ts = timestamps_->NextAfter(part.txn->after_ts);
    part.two_rounds = ramp && part.groups.size() > 1;
    auto prepares = internal::BuildPrepareRequests(
        write_ops[w], part.groups, part.ts, part.two_rounds ? 0 : wire::kFlagCommitNow,
        TakeIds(part.groups.size()));
    for (OutgoingRequest& req : prepares) {
      round1.push_back(std::move(req));
      request_writer.push_back(&part);
    }
  }
  std::vector<Route> routes(round1.size(), WriteRoute());
  std::fill(routes.begin(), routes.begin() + get_count, ReadRoute());
  std::vector<Call> calls;
  (void)Exchange(round1, calls, routes, coalesce);  // statuses are per call

  TakeGetResults(keys, std::span<const OutgoingRequest>(round1).first(get_count),
                 std::span<Call>(calls).first(get_count), results, holds);
  for (size_t r = 0; r < round1.size(); ++r) {
    if (calls[r].status.ok()) continue;
    if (r < get_count) {
      for (size_t i : round1[r].indices) Fail(*owner[i]->txn, calls[r].status, calls[r].partition);
    } else {
      Fail(*request_writer[r - get_count]->txn, calls[r].status, calls[r].partition);
    }
  }

  // ---- Round 2: reads' repairs (ramp), writes' COMMITs.
  std::vector<OutgoingRequest> round2;
  std::vector<uint64_t> need(keys.size(), kNoTimestamp);
  if (ramp) {
    std::vector<size_t> behind;  // combined indices needing a repair read
    for (const ReadPart& part : reads) {
      if (!part.txn->status.ok()) continue;
      auto part_keys = std::span<const std::string_view>(keys).subspan(part.first, part.count);
      auto part_results = std::span<const wire::GetResult>(results).subspan(part.first, part.count);
      std::vector<uint64_t> ts = internal::ComputeRepairTimestamps(part_keys, part_results);
      bool any = false;
      for (size_t k = 0; k < part.count; ++k) {
        if (ts[k] == kNoTimestamp) continue;
        need[part.first + k] = ts[k];
        behind.push_back(part.first + k);
        any = true;
      }
      if (any) ++stats_.repair_rounds;
    }
    auto add_repairs = [&](std::span<const size_t> subset) {
      if (subset.empty()) return;
      std::vector<std::string_view> sub_keys;
      std::vector<uint32_t> sub_partitions;
      std::vector<uint64_t> sub_need;
      for (size_t i : subset) {
        sub_keys.push_back(keys[i]);
        sub_partitions.push_back(partitions[i]);
        sub_need.push_back(need[i]);
      }
      auto groups = internal::GroupByPartition(sub_partitions);
      AppendRenumbered(
          internal::BuildRepairRequests(sub_keys, sub_need, groups, TakeIds(groups.size())),
          subset, round2);
    };
    if (coalesce) {
      add_repairs(behind);
    } else {
      size_t b = 0;
      for (const ReadPart& part : reads) {
        const size_t begin = b;
        while (b < behind.size() && behind[b] < part.first + part.count) ++b;
        add_repairs(std::span<const size_t>(behind).subspan(begin, b - begin));
      }
    }
  }
  const size_t repair_count = round2.size();
  std::vector<WritePart*> commit_writer;
  for (WritePart& part : writes) {
    if (!part.two_rounds || !part.txn->status.ok()) continue;  // a failed PREPARE never commits
    for (OutgoingRequest& req :
         internal::BuildCommitRequests(part.groups, part.ts, TakeIds(part.groups.size()))) {
      round2.push_back(std::move(req));
      commit_writer.push_back(&part);
    }
  }
  if (!round2.empty()) {
    routes.assign(round2.size(), WriteRoute());
    std::fill(routes.begin(), routes.begin() + repair_count, ReadRoute());
    (void)Exchange(round2, calls, routes, coalesce);
    for (size_t r = 0; r < round2.size(); ++r) {
      const Call& call = calls[r];
      if (r >= repair_count) {
        // Committed on some partitions at most: readers repair the rest.
        if (!call.status.ok()) Fail(*commit_writer[r - repair_count]->txn, call.status, call.partition);
        continue;
      }
      for (size_t j = 0; j < round2[r].indices.size(); ++j) {
        const size_t i = round2[r].indices[j];
        if (!call.status.ok()) {
          Fail(*owner[i]->txn, call.status, call.partition);
          continue;
        }
        const wire::GetResult& got = call.results[j];
        if (!got.found) {
          // Reclaimed before the repair read (see ReadVersions): retry.
          Fail(*owner[i]->txn,
               Aborted("key \"", keys[i], "\" at ts ", need[i], " on ", Where(call.partition),
                       " is gone (reclaimed before the repair read); retry the read"),
               call.partition);
          continue;
        }
        results[i] = got;
        ++stats_.repaired_keys;
      }
      holds.push_back(call.hold);
    }
  }

  // ---- Values of the reads that succeeded.
  for (ReadPart& part : reads) {
    if (!part.txn->status.ok()) continue;
    part.txn->values.reserve(part.position.size());
    for (size_t p : part.position) {
      const wire::GetResult& r = results[part.first + p];
      part.txn->values.push_back(internal::VisibleValue(r));
      if (r.found) part.txn->read_ts = std::max(part.txn->read_ts, r.ts);
    }
  }
}

Status Client::Impl::ToEveryPartition(wire::MsgType type, std::vector<Call>& calls) {
  std::vector<OutgoingRequest> reqs(placement_.partition_count());
  uint64_t id = TakeIds(reqs.size());
  for (uint32_t p = 0; p < reqs.size(); ++p) {
    OutgoingRequest& req = reqs[p];
    req.partition = p;
    req.request_id = id++;
    req.type = type;
    wire::RequestWriter writer(&req.message);
    if (type == wire::MsgType::kCount) {
      writer.Count(static_cast<uint16_t>(p), req.request_id);
    } else {
      writer.Flush(static_cast<uint16_t>(p), req.request_id);
    }
  }
  return Exchange(reqs, calls, WriteRoute());
}

void Client::RunBatch(std::span<BatchTxn> txns, bool coalesce) { impl_->RunBatch(txns, coalesce); }

Result<uint64_t> Client::CountKeys() {
  std::vector<Call> calls;
  RAMPART_RETURN_IF_ERROR(impl_->ToEveryPartition(wire::MsgType::kCount, calls));
  uint64_t keys = 0;
  for (const Call& c : calls) keys += c.count;
  return keys;
}

Status Client::FlushAll() {
  std::vector<Call> calls;
  return impl_->ToEveryPartition(wire::MsgType::kFlush, calls);
}

}  // namespace rampart::txn
