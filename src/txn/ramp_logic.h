// The pure, network-free steps of the transaction client (private to src/txn).
//
//   GroupByPartition       keys -> one group per partition (ascending partition)
//   Build*Requests         groups -> one wire message per partition per phase
//   ComputeRepairTimestamps  RAMP-Fast: round-1 results -> the ts each key must
//                          be read at in round 2 (seed 000, Algorithm 3 l.27-40)
//   VisibleValue           a GET result -> the value a caller sees
//
// Factored out of client.cc so the RAMP logic is tested without a kv-node
// (client_test.cc). No I/O, no state: plain functions over values.
//
// Thread-safety: none needed; every function only touches its arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kv/lock_table.h"
#include "kv/protocol.h"

namespace rampart::txn::internal {

// Maps a key to its partition (kv::Placement::PartitionOf in the client).
using PartitionOf = std::function<uint32_t(std::string_view)>;

// The indices (into the caller's key list) of the keys one partition holds.
struct PartitionGroup {
  uint32_t partition = 0;
  std::vector<size_t> indices;  // ascending, i.e. in the caller's key order
  friend bool operator==(const PartitionGroup&, const PartitionGroup&) = default;
};

// `groups` with each cut into consecutive groups of its partition whose
// keys' expected bytes (bytes[index]) add up to at most `budget` — a key
// over it alone gets a group of its own —, so that a GET per group gets a
// reply one message carries. Groups under the budget stay as they are.
std::vector<PartitionGroup> CutBySize(std::vector<PartitionGroup> groups,
                                      std::span<const uint64_t> bytes, uint64_t budget);

// One group per partition that holds at least one key, in ascending partition
// order. REQUIRES: every partition_of(key) < 65536 (the wire's u16).
std::vector<PartitionGroup> GroupByPartition(std::span<const std::string_view> keys,
                                             const PartitionOf& partition_of);
// The same for items whose partitions the caller chose: item i goes to
// partitions[i] (the proxy's ring and replicas).
std::vector<PartitionGroup> GroupByPartition(std::span<const uint32_t> partitions);

// One request message for one partition: what the client sends and then
// matches the reply to (by request_id).
struct OutgoingRequest {
  uint32_t partition = 0;
  uint64_t request_id = 0;
  kv::wire::MsgType type = kv::wire::MsgType::kGet;
  std::vector<std::byte> message;  // a whole wire message holding one request
  std::vector<size_t> indices;     // which keys (caller's list) it carries, in order
};

// One write of a transaction. Views: the caller keeps the bytes alive.
struct WriteOp {
  std::string_view key;
  std::string_view value;
  bool tombstone = false;
};

// Request ids: the i-th request built gets first_request_id + i.

// GET of every key of each group.
std::vector<OutgoingRequest> BuildGetRequests(std::span<const std::string_view> keys,
                                              std::span<const PartitionGroup> groups,
                                              uint64_t first_request_id);

// RAMP-Fast round 2: GET_BY_TS(key, repair_ts[i]) for the keys whose
// repair_ts[i] != kNoTimestamp, one request per partition that has any; the
// other partitions get nothing. REQUIRES: repair_ts.size() == keys.size().
std::vector<OutgoingRequest> BuildRepairRequests(std::span<const std::string_view> keys,
                                                 std::span<const uint64_t> repair_ts,
                                                 std::span<const PartitionGroup> groups,
                                                 uint64_t first_request_id);

// PREPARE(ts) of each group's writes; every item carries as siblings the other
// keys of the whole write set (all partitions), as RAMP-Fast's metadata.
// `flags`: kv::wire::kFlagCommitNow and kFlagReturnSlots, or 0.
// A key may appear once per partition (replicas of one write); siblings name
// each other key once. REQUIRES: no key twice in one group.
std::vector<OutgoingRequest> BuildPrepareRequests(std::span<const WriteOp> writes,
                                                  std::span<const PartitionGroup> groups,
                                                  uint64_t ts, uint8_t flags,
                                                  uint64_t first_request_id);

// The RAMP-Fast metadata of a write set: for item i the KeyList encoding of
// every other distinct key (replicas repeat a key; it is named once).
std::vector<std::string> WriteSetSiblings(std::span<const WriteOp> writes);

// BuildPrepareRequests with the siblings of every item given: a group commit
// of several write sets at one timestamp keeps each set's own metadata.
// `unchanged[g]`: kFlagIfUnchanged's read versions for group g's PREPARE,
// sent when flags has it (then one per group).
// REQUIRES: siblings.size() == writes.size(); no key twice in one group.
std::vector<OutgoingRequest> BuildPrepareRequests(
    std::span<const WriteOp> writes, std::span<const std::string> siblings,
    std::span<const PartitionGroup> groups, uint64_t ts, uint8_t flags, uint64_t first_request_id,
    std::span<const std::vector<kv::wire::KeyTs>> unchanged = {});

// COMMIT(ts) to each group's partition (indices copied for error reporting).
std::vector<OutgoingRequest> BuildCommitRequests(std::span<const PartitionGroup> groups,
                                                 uint64_t ts, uint64_t first_request_id);

// S2PL: LOCK(txn) of one group's keys, sorted by key (the global lock order is
// (partition, key): the client locks one partition after the other in
// ascending partition order, so waits cannot form a cycle).
OutgoingRequest BuildLockRequest(std::span<const std::string_view> keys,
                                 const PartitionGroup& group, kv::LockMode mode, uint64_t txn,
                                 uint64_t request_id);

// S2PL: UNLOCK(txn) to each partition.
std::vector<OutgoingRequest> BuildUnlockRequests(std::span<const uint32_t> partitions,
                                                 uint64_t txn, uint64_t first_request_id);

// GET*: one DESCRIBE per (partition, extent): the descriptor of that extent
// of the partition's arena, for one-sided reads.
struct ExtentId {
  uint32_t partition = 0;
  uint32_t extent = 0;
  friend auto operator<=>(const ExtentId&, const ExtentId&) = default;
};
std::vector<OutgoingRequest> BuildDescribeRequests(std::span<const ExtentId> extents,
                                                   uint64_t first_request_id);

// RAMP-Fast repair rule. round1[i] is the round-1 (GET) result for keys[i].
// For every found version r (tombstones included: a delete is a write too)
// and every sibling s of r that is a requested key, s must be read at least
// at r.ts. Returns, per key, the ts to fetch in round 2 when that is newer
// than what round 1 returned for it (or round 1 found nothing), else
// kNoTimestamp. Siblings that were not requested are ignored; a sibling equal
// to the key itself never forces a repair (ties are not "behind").
// REQUIRES: round1.size() == keys.size(); keys distinct.
std::vector<uint64_t> ComputeRepairTimestamps(std::span<const std::string_view> keys,
                                              std::span<const kv::wire::GetResult> round1);

// Appends the requests of the complete wire message `message` to the
// complete message `*into` (an empty vector is the empty message): one
// message per partition carries the requests of several transactions.
void AppendMessage(std::vector<std::byte>* into, std::span<const std::byte> message);

// What the caller sees: nullopt for "not found" and for tombstones.
std::optional<std::string> VisibleValue(const kv::wire::GetResult& result);

// The distinct keys of `keys` in first-seen order, and for each input key the
// index of its distinct key (MultiGet accepts duplicates; the wire does not
// need them twice).
struct DistinctKeys {
  std::vector<std::string_view> keys;
  std::vector<size_t> position;  // position[i]: index in `keys` of input key i
};
DistinctKeys Deduplicate(std::span<const std::string> keys);

}  // namespace rampart::txn::internal
