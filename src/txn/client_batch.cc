// Client::RunBatch: many independent transactions run round by round
// together (the proxy's aggregation, seed 003). Round 1 carries every read's
// first round and every write's PREPARE, round 2 the reads' repairs and the
// writes' COMMITs; with `coalesce` the requests for one partition share one
// message, and the reads of all transactions share one GET per partition.
#include <algorithm>
#include <list>
#include <map>
#include <set>
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

// Write sets that commit at one timestamp: one transaction, or with
// coalescing a group commit of many (each item keeps its own transaction's
// sibling metadata, so readers repair exactly as for the single ones; the
// group becomes visible at once, which read atomicity allows for concurrent
// transactions).
struct WriteUnit {
  std::vector<BatchTxn*> members;
  std::vector<internal::WriteOp> ops;
  std::vector<std::string> siblings;   // per op
  std::vector<uint32_t> partitions;    // per op
  size_t index = 0;  // in the batch's units: timestamps are drawn in this order
  std::vector<PartitionGroup> groups;
  uint64_t after_ts = 0;
  uint64_t ts = 0;
  bool two_rounds = false;  // PREPARE then COMMIT (else committed in round 1)
  bool if_absent = false;   // one BatchTxn::if_absent transaction, alone
  // Members with BatchTxn::if_unchanged (all or none of them): each on one
  // partition; a partition's PREPARE carries the conditions of the members
  // there, and its refusal fails exactly those (nothing of them is written;
  // the members on the other partitions are).
  bool checked = false;
  std::vector<wire::KeyTs> conditions;
  std::vector<uint32_t> condition_partitions;  // per condition
  uint64_t bytes = 0;       // of the ops' keys and values

  uint8_t flags() const {
    return (two_rounds ? 0 : wire::kFlagCommitNow) | (if_absent ? wire::kFlagIfAbsent : 0) |
           (checked ? wire::kFlagIfUnchanged : 0);
  }
  // The conditions of the members on each group's partition.
  std::vector<std::vector<wire::KeyTs>> ConditionsByGroup() const {
    std::vector<std::vector<wire::KeyTs>> out(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t c = 0; c < conditions.size(); ++c) {
        if (condition_partitions[c] == groups[g].partition) out[g].push_back(conditions[c]);
      }
    }
    return out;
  }
};

// Fails `txn` with `status` unless it already failed.
void Fail(BatchTxn& txn, const Status& status, uint32_t partition) {
  if (!txn.status.ok()) return;
  txn.status = status;
  if (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kTimedOut) {
    txn.failed_partition = static_cast<int>(partition);
  }
}

// Calls fn(unit, prepare, its call) for each PREPARE of a unit that committed
// on every partition, in the order of `prepares` (RunBatch builds them in
// timestamp order, so of two units writing a key the later one's call comes
// last). unit_of[r] is prepares[r]'s unit.
template <typename Fn>
void ForEachCommittedPrepare(std::span<const OutgoingRequest> prepares,
                             std::span<const Call> calls, std::span<WriteUnit* const> unit_of,
                             Fn&& fn) {
  for (size_t r = 0; r < prepares.size(); ++r) {
    const WriteUnit& unit = *unit_of[r];
    // A unit committed in round 1 commits partition by partition: the
    // call's own status tells.
    const bool committed = unit.two_rounds ? unit.members[0]->status.ok() : calls[r].status.ok();
    if (committed) fn(unit, prepares[r], calls[r]);
  }
}

// The write units of a batch, in timestamp order, and the last unit that
// writes each (key, partition).
using KeyOnPartition = std::pair<std::string_view, uint32_t>;

struct KeyOnPartitionHash {
  size_t operator()(const KeyOnPartition& kp) const {
    return std::hash<std::string_view>{}(kp.first) ^ (size_t{kp.second} * 0x9e3779b97f4a7c15u);
  }
};

struct WritePlan {
  // A unit takes more transactions only while its keys and values stay under
  // this (a quarter of the node's message bound), so that a group commit of
  // write sets that fit one by one fits as well.
  uint64_t max_unit_bytes = 0;
  std::list<WriteUnit> units;  // stable addresses: requests point at their unit
  std::unordered_map<KeyOnPartition, size_t, KeyOnPartitionHash> last_unit;
};

// A unit committed in round 1 commits partition by partition: a PREPARE's
// failure is that of the members with a write there (the others committed).
// A two-round unit's is every member's (nothing of it commits).
void FailUnit(const WriteUnit& unit, const Status& status, uint32_t partition) {
  for (BatchTxn* t : unit.members) {
    const bool there = std::any_of(t->writes.begin(), t->writes.end(),
                                   [&](const PlacedWrite& w) { return w.partition == partition; });
    if (unit.two_rounds || there) Fail(*t, status, partition);
  }
}

// Checks a write transaction and adds it to a unit: with coalescing to the
// first group of its kind (one round or two) that may hold it, else to a
// unit of its own.
void PlanWrite(BatchTxn& t, bool ramp, bool coalesce, WritePlan& plan) {
  // Sorted vectors, not sets: a turn plans thousands of small write sets, and
  // a node per key and partition cost more than the rest of the planning.
  std::vector<KeyOnPartition> placed;
  placed.reserve(t.writes.size());
  for (const PlacedWrite& w : t.writes) placed.emplace_back(w.key, w.partition);
  std::sort(placed.begin(), placed.end());
  if (auto twice = std::adjacent_find(placed.begin(), placed.end()); twice != placed.end()) {
    t.status = InvalidArgument("RunBatch: key \"", twice->first, "\" written twice on partition ",
                               twice->second);
    return;
  }
  const bool multi_partition = std::any_of(placed.begin(), placed.end(), [&](const KeyOnPartition& kp) {
    return kp.second != placed.front().second;
  });
  if (t.if_absent && multi_partition) {
    t.status = InvalidArgument("RunBatch: an if_absent write set spans partitions ",
                               placed.front().second, " and ", placed.back().second);
    return;
  }
  if (!t.if_unchanged.empty() && t.if_absent) {
    t.status = InvalidArgument("RunBatch: a write set is if_absent and if_unchanged");
    return;
  }
  if (!t.if_unchanged.empty() && multi_partition) {
    t.status = InvalidArgument("RunBatch: an if_unchanged write set spans partitions ",
                               placed.front().second, " and ", placed.back().second);
    return;
  }
  const bool checked = !t.if_unchanged.empty();
  const bool two_rounds = ramp && multi_partition;
  // A write of a (key, partition) an earlier transaction of the batch writes
  // too must get a later timestamp: it joins only a unit after the last one
  // holding any of its keys (units draw timestamps in order).
  size_t first_allowed = 0;
  for (const auto& kp : placed) {
    auto it = plan.last_unit.find(kp);
    if (it != plan.last_unit.end()) first_allowed = std::max(first_allowed, it->second + 1);
  }
  uint64_t bytes = 0;
  for (const PlacedWrite& w : t.writes) bytes += w.key.size() + w.value.size();
  WriteUnit* unit = nullptr;
  if (coalesce && !t.if_absent) {  // refused as a whole: alone
    for (WriteUnit& u : plan.units) {
      if (u.index >= first_allowed && u.two_rounds == two_rounds && !u.if_absent && u.checked == checked &&
          u.bytes + bytes <= plan.max_unit_bytes) {
        unit = &u;
        break;
      }
    }
  }
  if (unit == nullptr) {
    unit = &plan.units.emplace_back();
    unit->index = plan.units.size() - 1;
    unit->two_rounds = two_rounds;
    unit->if_absent = t.if_absent;
    unit->checked = checked;
  }
  for (const wire::KeyTs& k : t.if_unchanged) {
    unit->conditions.push_back(k);
    unit->condition_partitions.push_back(placed.front().second);
  }
  for (const auto& kp : placed) plan.last_unit[kp] = unit->index;
  std::vector<internal::WriteOp> ops;
  for (const PlacedWrite& w : t.writes) ops.push_back(internal::WriteOp{w.key, w.value, w.tombstone});
  std::vector<std::string> siblings = internal::WriteSetSiblings(ops);
  for (size_t i = 0; i < ops.size(); ++i) {
    unit->ops.push_back(ops[i]);
    unit->siblings.push_back(std::move(siblings[i]));
    unit->partitions.push_back(t.writes[i].partition);
  }
  unit->after_ts = std::max(unit->after_ts, t.after_ts);
  unit->bytes += bytes;
  unit->members.push_back(&t);
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

// Calls add(subset) with the combined indices (ascending) that share their
// requests: all of them when coalescing, else each read transaction's own.
template <typename Add>
void ForEachMessageSet(bool coalesce, std::span<const ReadPart> reads,
                       std::span<const size_t> indices, const Add& add) {
  if (coalesce) return add(indices);
  size_t at = 0;
  for (const ReadPart& part : reads) {
    const size_t begin = at;
    while (at < indices.size() && indices[at] < part.first + part.count) ++at;
    add(indices.subspan(begin, at - begin));
  }
}

// The values of the reads that succeeded, into their transactions.
void TakeReadValues(std::span<ReadPart> reads, std::span<const wire::GetResult> results) {
  for (ReadPart& part : reads) {
    if (!part.txn->status.ok()) continue;
    part.txn->values.reserve(part.position.size());
    part.txn->versions.reserve(part.position.size());
    for (size_t p : part.position) {
      const wire::GetResult& r = results[part.first + p];
      part.txn->values.push_back(internal::VisibleValue(r));
      part.txn->versions.push_back(r.found ? r.ts : 0);
      if (r.found) part.txn->read_ts = std::max(part.txn->read_ts, r.ts);
    }
  }
}

// Lays `t`'s distinct keys end to end after `keys` (and their partitions):
// the part of the combined list that is `t`'s.
ReadPart PlanReadPart(BatchTxn& t, std::vector<std::string_view>& keys,
                      std::vector<uint32_t>& partitions, std::vector<uint64_t>& expected) {
  ReadPart part;
  part.txn = &t;
  part.first = keys.size();
  // A repeated key is found by a scan of the part's keys so far when the
  // transaction reads few (a GET, a small MGET: no table to allocate per
  // read), in a table otherwise.
  constexpr size_t kScanUpTo = 16;
  const bool scan = t.reads.size() <= kScanUpTo;
  std::unordered_map<std::string_view, size_t> seen;
  for (const PlacedRead& r : t.reads) {
    size_t at = part.count;
    if (scan) {
      const auto mine = std::span(keys).subspan(part.first);
      at = static_cast<size_t>(std::find(mine.begin(), mine.end(), r.key) - mine.begin());
    } else {
      at = seen.emplace(r.key, part.count).first->second;
    }
    if (at == part.count) {
      keys.push_back(r.key);
      partitions.push_back(r.partition);
      expected.push_back(r.expected_bytes);
      ++part.count;
    }
    part.position.push_back(at);
  }
  return part;
}

// Results as before any round: OK, nothing read.
void ClearResults(BatchTxn& t) {
  t.status = Status::Ok();
  t.values.clear();
  t.versions.clear();
  t.failed_partition = -1;
  t.read_ts = 0;
}

}  // namespace

// One RunBatch: its plan and what its rounds pass on.
struct BatchRun {
  bool coalesce = false;
  bool ramp = false;
  // Plan: the read transactions' distinct keys laid end to end.
  std::vector<std::string_view> keys;
  std::vector<uint32_t> partitions;  // per combined key
  std::vector<uint64_t> expected;    // per combined key: PlacedRead::expected_bytes
  std::vector<ReadPart*> owner;      // combined index -> its transaction
  std::vector<ReadPart> reads;
  WritePlan plan;
  // Round 1: the reads' GETs (the first get_count requests), then the PREPAREs.
  std::vector<wire::GetResult> results;  // per combined key
  ReplyHolds holds;                      // what `results` view into
  std::vector<OutgoingRequest> round1;
  size_t get_count = 0;
  std::vector<WriteUnit*> request_unit;  // round-1 request (after the GETs) -> its write unit
  std::vector<Call> calls;               // round 1's
  // Round 2: per combined key, the timestamp its repair read asks for
  // (kNoTimestamp: none).
  std::vector<uint64_t> need;
};

void Client::Impl::RunBatch(std::span<BatchTxn> txns, bool coalesce) {
  for (BatchTxn& t : txns) ClearResults(t);
  if (options_.isolation == Isolation::kS2pl) {
    for (BatchTxn& t : txns) t.status = InvalidArgument("RunBatch: isolation s2pl is not batched");
    return;
  }
  stats_.transactions += txns.size();
  BatchRun run;
  run.coalesce = coalesce;
  run.ramp = options_.isolation == Isolation::kRamp;
  run.plan.max_unit_bytes = options_.limits.max_message_bytes / 4;
  PlanBatch(txns, run);
  BatchFirstRound(run);
  BatchSecondRound(run);
  ForEachCommittedPrepare(std::span<const OutgoingRequest>(run.round1).subspan(run.get_count),
                          std::span<const Call>(run.calls).subspan(run.get_count),
                          run.request_unit,
                          [&](const WriteUnit& unit, const OutgoingRequest& req, const Call& c) {
                            RememberWrittenSlots(unit.ops, req, c);
                          });
  TakeReadValues(run.reads, run.results);
}

// The plan: the read transactions' keys combined, the write transactions in
// units.
void Client::Impl::PlanBatch(std::span<BatchTxn> txns, BatchRun& run) {
  auto [keys, partitions, owner, reads, plan] = std::tie(run.keys, run.partitions, run.owner,
                                                          run.reads, run.plan);
  reads.reserve(txns.size());
  for (BatchTxn& t : txns) {
    if (!t.reads.empty() && !t.writes.empty()) {
      t.status = InvalidArgument("RunBatch: a transaction has reads and writes");
      continue;
    }
    if (!t.reads.empty()) {
      reads.push_back(PlanReadPart(t, keys, partitions, run.expected));
    } else if (!t.writes.empty()) {
      PlanWrite(t, run.ramp, run.coalesce, plan);
    }
  }
  for (ReadPart& part : reads) {
    for (size_t k = 0; k < part.count; ++k) owner.push_back(&part);
  }
}

// Round 1: the reads' GET (after GET*'s one-sided reads), the writes' PREPARE.
void Client::Impl::BatchFirstRound(BatchRun& run) {
  auto [keys, partitions, owner, reads, results, holds] =
      std::tie(run.keys, run.partitions, run.owner, run.reads, run.results, run.holds);
  auto [round1, request_unit, calls] = std::tie(run.round1, run.request_unit, run.calls);
  const bool coalesce = run.coalesce;
  results.resize(keys.size());
  std::vector<size_t> misses;  // combined indices left for a GET (ascending)
  bool slots_read = false;
  if (AnySlotReads() && !keys.empty()) {
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
  // GETs over the combined indices in `subset` (ascending).
  auto add_gets = [&](std::span<const size_t> subset) {
    if (subset.empty()) return;
    std::vector<std::string_view> sub_keys;
    std::vector<uint32_t> sub_partitions;
    std::vector<uint64_t> sub_expected;
    for (size_t i : subset) {
      sub_keys.push_back(keys[i]);
      sub_partitions.push_back(partitions[i]);
      sub_expected.push_back(run.expected[i]);
    }
    auto groups = internal::CutBySize(internal::GroupByPartition(sub_partitions), sub_expected,
                                      options_.limits.max_message_bytes / 2);
    AppendRenumbered(internal::BuildGetRequests(sub_keys, groups, TakeIds(groups.size())), subset,
                     round1);
  };
  ForEachMessageSet(coalesce, reads, misses, add_gets);
  const size_t get_count = run.get_count = round1.size();
  for (WriteUnit& unit : run.plan.units) {
    unit.groups = internal::GroupByPartition(unit.partitions);
    unit.ts = timestamps_->NextAfter(unit.after_ts);
    auto prepares = internal::BuildPrepareRequests(
        unit.ops, unit.siblings, unit.groups, unit.ts, unit.flags() | SlotsFlag(),
        TakeIds(unit.groups.size()), unit.ConditionsByGroup());
    for (OutgoingRequest& req : prepares) {
      round1.push_back(std::move(req));
      request_unit.push_back(&unit);
    }
  }
  std::vector<Route> routes(round1.size(), WriteRoute());
  for (size_t r = 0; r < get_count; ++r) routes[r] = ReadRoute(round1[r].partition);
  (void)Exchange(round1, calls, routes, coalesce);  // statuses are per call

  TakeGetResults(keys, std::span<const OutgoingRequest>(round1).first(get_count),
                 std::span<Call>(calls).first(get_count), results, holds);
  for (size_t r = 0; r < round1.size(); ++r) {
    if (calls[r].status.ok()) continue;
    if (r < get_count) {
      for (size_t i : round1[r].indices) Fail(*owner[i]->txn, calls[r].status, calls[r].partition);
    } else {
      FailUnit(*request_unit[r - get_count], calls[r].status, calls[r].partition);
    }
  }

}

// Round 2's repair reads (ramp): every key read at a version older than one
// the metadata of the transaction's other keys names (RAMP-Fast's second
// round). Sets run.need.
std::vector<OutgoingRequest> Client::Impl::PlanRepairs(BatchRun& run) {
  auto [keys, partitions, reads, results] =
      std::tie(run.keys, run.partitions, run.reads, run.results);
  run.need.assign(keys.size(), kNoTimestamp);
  std::vector<size_t> behind;  // combined indices needing a repair read
  for (const ReadPart& part : reads) {
    if (!part.txn->status.ok()) continue;
    auto part_keys = std::span<const std::string_view>(keys).subspan(part.first, part.count);
    auto part_results = std::span<const wire::GetResult>(results).subspan(part.first, part.count);
    std::vector<uint64_t> ts = internal::ComputeRepairTimestamps(part_keys, part_results);
    bool any = false;
    for (size_t k = 0; k < part.count; ++k) {
      if (ts[k] == kNoTimestamp) continue;
      run.need[part.first + k] = ts[k];
      behind.push_back(part.first + k);
      any = true;
    }
    if (any) ++stats_.repair_rounds;
  }
  std::vector<OutgoingRequest> repairs;
  auto add_repairs = [&](std::span<const size_t> subset) {
    if (subset.empty()) return;
    std::vector<std::string_view> sub_keys;
    std::vector<uint32_t> sub_partitions;
    std::vector<uint64_t> sub_need;
    for (size_t i : subset) {
      sub_keys.push_back(keys[i]);
      sub_partitions.push_back(partitions[i]);
      sub_need.push_back(run.need[i]);
    }
    auto groups = internal::GroupByPartition(sub_partitions);
    AppendRenumbered(internal::BuildRepairRequests(sub_keys, sub_need, groups, TakeIds(groups.size())),
                     subset, repairs);
  };
  ForEachMessageSet(run.coalesce, reads, behind, add_repairs);
  return repairs;
}

// One repair read's answer: the versions it found replace round 1's.
void Client::Impl::TakeRepair(BatchRun& run, const OutgoingRequest& req, const Call& call) {
  for (size_t j = 0; j < req.indices.size(); ++j) {
    const size_t i = req.indices[j];
    if (!call.status.ok()) {
      Fail(*run.owner[i]->txn, call.status, call.partition);
      continue;
    }
    const wire::GetResult& got = call.results[j];
    if (!got.found) {
      // Reclaimed before the repair read (see ReadVersions): retry.
      Fail(*run.owner[i]->txn,
           Aborted("key \"", run.keys[i], "\" at ts ", run.need[i], " on ", Where(call.partition),
                   " is gone (reclaimed before the repair read); retry the read"),
           call.partition);
      continue;
    }
    run.results[i] = got;
    ++stats_.repaired_keys;
  }
  run.holds.push_back(call.hold);
}

// Round 2: the reads' repairs (ramp), the two-round writes' COMMITs.
void Client::Impl::BatchSecondRound(BatchRun& run) {
  std::vector<OutgoingRequest> round2;
  if (run.ramp) round2 = PlanRepairs(run);
  const size_t repair_count = round2.size();
  std::vector<WriteUnit*> commit_unit;
  for (WriteUnit& unit : run.plan.units) {
    // A failed PREPARE never commits (the unit's members failed together).
    if (!unit.two_rounds || !unit.members[0]->status.ok()) continue;
    for (OutgoingRequest& req :
         internal::BuildCommitRequests(unit.groups, unit.ts, TakeIds(unit.groups.size()))) {
      round2.push_back(std::move(req));
      commit_unit.push_back(&unit);
    }
  }
  if (round2.empty()) return;
  std::vector<Route> routes(round2.size(), WriteRoute());
  for (size_t r = 0; r < repair_count; ++r) routes[r] = ReadRoute(round2[r].partition);
  std::vector<Call> calls;
  (void)Exchange(round2, calls, routes, run.coalesce);
  for (size_t r = 0; r < round2.size(); ++r) {
    if (r < repair_count) {
      TakeRepair(run, round2[r], calls[r]);
    } else if (!calls[r].status.ok()) {
      // Committed on some partitions at most: readers repair the rest.
      FailUnit(*commit_unit[r - repair_count], calls[r].status, calls[r].partition);
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
    switch (type) {
      case wire::MsgType::kCount: writer.Count(static_cast<uint16_t>(p), req.request_id); break;
      case wire::MsgType::kStats: writer.Stats(static_cast<uint16_t>(p), req.request_id); break;
      default: writer.Flush(static_cast<uint16_t>(p), req.request_id); break;
    }
  }
  return Exchange(reqs, calls, WriteRoute());
}

Result<Client::KeyPage> Client::Impl::ScanKeys(uint32_t partition, const wire::ScanRequest& scan) {
  if (partition >= placement_.partition_count()) {
    return InvalidArgument("SCAN of partition ", partition, "; the cluster has ", placement_.partition_count());
  }
  std::vector<OutgoingRequest> reqs(1);
  OutgoingRequest& req = reqs[0];
  req.partition = partition;
  req.request_id = TakeIds(1);
  req.type = wire::MsgType::kScan;
  wire::RequestWriter(&req.message).Scan(static_cast<uint16_t>(partition), req.request_id, scan);
  std::vector<Call> calls;
  RAMPART_RETURN_IF_ERROR(Exchange(reqs, calls, WriteRoute()));
  const wire::ScanResult& got = calls[0].scan;
  Client::KeyPage page;
  if (!got.done) page.next = got.next;
  page.items.reserve(got.items.size());
  for (const wire::ScanItem& item : got.items) page.items.emplace_back(item.key, item.head);
  return page;
}

Result<Client::KeyPage> Client::ScanKeys(uint32_t partition, uint64_t from, uint32_t max_keys,
                                         uint32_t head_bytes) {
  return impl_->ScanKeys(partition, wire::ScanRequest{from, max_keys, head_bytes});
}

void Client::RunBatch(std::span<BatchTxn> txns, bool coalesce) { impl_->RunBatch(txns, coalesce); }

bool Client::ReadOneSided(BatchTxn& txn) { return impl_->ReadOneSided(txn); }

bool Client::Impl::CopiesSlot(std::string_view key, uint32_t partition) {
  if (!ReadsSlots(partition)) return false;
  const internal::AddressCache::Entry* e = addresses_.Find(key);
  if (e == nullptr || e->partition != partition || e->epoch != links_[partition].epoch) return false;
  const transport::RemoteRegion* extent = LiveExtent(partition, e->slot.extent());
  return extent != nullptr && e->slot.extent_offset() + e->slot.bytes <= extent->size() &&
         extent->DirectPointer(e->slot.extent_offset(), e->slot.bytes) != nullptr;
}

bool Client::Impl::ReadOneSided(BatchTxn& txn) {
  if (!AnySlotReads() || txn.reads.empty() || !txn.writes.empty()) return false;
  // Distinct keys, as RunBatch plans them; every one must be a plain copy
  // away (checked first: a key that is not would cost the others' reads for
  // nothing).
  std::vector<std::string_view> keys;
  std::vector<uint32_t> partitions;
  std::vector<uint64_t> expected;  // not used: nothing is sent
  ReadPart part = PlanReadPart(txn, keys, partitions, expected);
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!CopiesSlot(keys[k], partitions[k])) return false;
  }
  std::vector<wire::GetResult> results(keys.size());
  ReplyHolds holds;
  // A read given up leaves the counters to RunBatch's read of the same keys.
  const Client::Stats before = stats_;
  auto give_up = [&] {
    stats_.slot_reads = before.slot_reads;
    stats_.slot_rejects = before.slot_rejects;
    stats_.cache_misses = before.cache_misses;
    return false;
  };
  Result<std::vector<size_t>> misses =
      ReadSlots(keys, internal::GroupByPartition(partitions), results, holds);
  if (!misses.ok() || !misses->empty()) return give_up();
  if (options_.isolation == Isolation::kRamp) {
    const std::vector<uint64_t> need = internal::ComputeRepairTimestamps(keys, results);
    if (std::any_of(need.begin(), need.end(), [](uint64_t ts) { return ts != kNoTimestamp; })) {
      return give_up();
    }
  }
  ++stats_.transactions;
  ClearResults(txn);
  TakeReadValues(std::span<ReadPart>(&part, 1), results);
  return true;
}

Result<uint64_t> Client::CountKeys() {
  std::vector<Call> calls;
  RAMPART_RETURN_IF_ERROR(impl_->ToEveryPartition(wire::MsgType::kCount, calls));
  uint64_t keys = 0;
  for (const Call& c : calls) keys += c.count;
  return keys;
}

Result<StoreStats> Client::QueryStoreStats() {
  std::vector<Call> calls;
  RAMPART_RETURN_IF_ERROR(impl_->ToEveryPartition(wire::MsgType::kStats, calls));
  StoreStats total;
  for (const Call& c : calls) {
    total.keys += c.stats.keys;
    total.versions += c.stats.versions;
    total.used_bytes += c.stats.used_bytes;
    total.reserved_bytes += c.stats.reserved_bytes;
    total.max_ts = std::max(total.max_ts, c.stats.max_ts);
    total.internal_keys += c.stats.internal_keys;
  }
  return total;
}

void Client::ObserveTimestamp(uint64_t ts) { impl_->ObserveTimestamp(ts); }

Status Client::FlushAll() {
  std::vector<Call> calls;
  return impl_->ToEveryPartition(wire::MsgType::kFlush, calls);
}

}  // namespace rampart::txn
