// The transaction client library: multi-key reads and writes against the
// kv-nodes with isolation `ramp` (RAMP-Fast, read atomic), `s2pl` (strict
// two-phase locking) or `none` (plain reads and writes, the upper bound).
// docs/transactions.md describes the algorithm and the messages per mode.
//
//   ClientOptions options;
//   options.nodes = config.nodes;
//   options.partitions_per_node = config.kv.partitions_per_node;
//   options.client_id = 7;
//   auto client = Client::Connect(options);
//   if (!client.ok()) return client.status();
//   RAMPART_RETURN_IF_ERROR((*client)->MultiPut({{"a", "1"}, {"b", "2"}}));
//   auto values = (*client)->MultiGet({"a", "b"});   // never "a" new, "b" old
//
// Calls are synchronous for the caller and pipelined inside: each phase sends
// one message per involved partition, carrying all of that partition's keys,
// to every partition before it waits for any reply.
//
// Thread-safety: a Client is NOT thread-safe. It owns a transport::Fabric,
// which belongs to the thread that created it: create one Client per thread
// and call it only from that thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "common/timestamp.h"
#include "kv/placement.h"
#include "kv/protocol.h"
#include "transport/transport.h"

namespace rampart::txn {

enum class Isolation { kRamp, kS2pl, kNone };
std::string_view IsolationName(Isolation isolation);  // "ramp" | "s2pl" | "none"
Result<Isolation> ParseIsolation(std::string_view name);

// How the first GET round reaches a partition (seed 000 §3):
//   kRpc   GET as a two-sided message, the reply likewise.
//   kRing  GET+: the request and its reply over the partition's message
//          channel (one-sided writes into the peer's ring).
//   kRead  GET*: one-sided reads of the slots through the address cache
//          (txn/address_cache.h); keys not cached, or whose read does not
//          check out, fall back to GET+ and refresh the cache. The RAMP
//          repair round (GET_BY_TS) goes over the channel.
//   kAuto  kRead for the partitions on this host (their arenas are mapped
//          here: a one-sided read is a copy), kRpc for the others (between
//          hosts without RDMA a one-sided read is a request and a reply
//          anyway, docs/transactions.md). kRpc with the tcp backend.
// kRing and kRead need the ucx backend.
enum class GetMode { kRpc, kRing, kRead, kAuto };
std::string_view GetModeName(GetMode mode);  // "rpc" | "ring" | "read" | "auto"
// kRing and kRead (auto reads with rpc where there is no ucx).
inline bool GetModeNeedsUcx(GetMode mode) { return mode == GetMode::kRing || mode == GetMode::kRead; }
Result<GetMode> ParseGetMode(std::string_view name);

// How PREPARE and COMMIT (and S2PL's LOCK/UNLOCK) reach a partition:
// kRpc two-sided messages, kRing PUT+ over the message channel (ucx only).
enum class PutMode { kRpc, kRing };
std::string_view PutModeName(PutMode mode);  // "rpc" | "ring"
Result<PutMode> ParsePutMode(std::string_view name);

struct ClientOptions {
  // Where partitions live. When `placement` is set it is used as is;
  // otherwise it is computed from `nodes` and `partitions_per_node`, as every
  // process of the cluster does (kv/placement.h).
  std::optional<kv::Placement> placement;
  std::vector<NodeConfig> nodes;
  uint32_t partitions_per_node = 1;

  // The client's Fabric (backend tcp or ucx, spin, connect timeout).
  transport::FabricOptions fabric;

  // Default: kRamp.
  Isolation isolation = Isolation::kRamp;
  // Default: kRpc.
  GetMode get_mode = GetMode::kRpc;
  // Default: kRpc.
  PutMode put_mode = PutMode::kRpc;
  // The message channels of kRing/kRead modes (one per partition).
  transport::ChannelOptions channel;
  // kRead: slot addresses cached. Default: 2^20.
  size_t address_cache_entries = size_t{1} << 20;

  // Goes into the low bits of every timestamp this client issues; unique per
  // live client in the cluster. 0..8191 (common/timestamp.h).
  uint32_t client_id = 0;
  // When set, the client takes its timestamps from this source (and
  // client_id is unused): the proxy's workers share one, so a write of one
  // worker that follows another's in real time also has the later timestamp.
  std::shared_ptr<TimestampSource> timestamps;

  // How long one phase (all partitions' replies) may take before the missing
  // partitions fail the call with kTimedOut. Default: 5 s.
  std::chrono::milliseconds request_timeout = std::chrono::seconds(5);
  // A partition that answered nothing for this long while a phase waited for
  // it, or that could not be connected (within this long), is unreachable: its requests
  // fail at once with kUnavailable (naming it) while a TCP connection attempt
  // probes it every kProbeInterval; once one is accepted it is tried again.
  // Default: 1 s.
  std::chrono::milliseconds unreachable_after = std::chrono::seconds(1);

  // Limits for decoding replies; the node's defaults.
  kv::wire::ProtocolLimits limits;

  // Fault injection for tests (`rampart check fault-write`): a multi-partition
  // RAMP MultiPut stops after its PREPAREs, or after its COMMIT reached only
  // the first partition, and returns kAborted — leaving the cluster as a
  // client that died at that point would. Default: kNever.
  enum class StopWrite { kNever, kAfterPrepare, kAfterFirstCommit };
  StopWrite stop_write = StopWrite::kNever;
};

// A transaction of a batch (Client::RunBatch) whose partitions the caller
// chose: the proxy places keys on its consistent-hash ring, with replicas.
// Views: the caller keeps keys and values alive until RunBatch returns.
struct PlacedRead {
  std::string_view key;
  uint32_t partition = 0;  // the replica to read it from
  // The value's bytes, when the caller knows them (a long string's chunks);
  // 0: small. RunBatch cuts a partition's GET into several so that no reply
  // carries more than half the message bound of these.
  uint64_t expected_bytes = 0;
};
struct PlacedWrite {
  std::string_view key;
  std::string_view value;
  bool tombstone = false;  // a delete: the key reads as absent afterwards
  uint32_t partition = 0;  // one entry per replica of the key
};
struct BatchTxn {
  // A read transaction (keys may repeat) or a write transaction (a key at
  // most once per partition); not both. Neither: a no-op that succeeds.
  std::vector<PlacedRead> reads;
  std::vector<PlacedWrite> writes;

  // Writes: the timestamp is greater than this one (a read-modify-write
  // passes the read_ts of its read, so its write orders after what it read).
  uint64_t after_ts = 0;
  // Writes: commit only if none of the written keys has a live version
  // (kv::wire::kFlagIfAbsent), else fail with kAlreadyExists and write
  // nothing. REQUIRES: every write on one partition (kInvalidArgument
  // otherwise); such a write set commits in one round on its own.
  bool if_absent = false;
  // Writes: commit only if each of these keys' newest version on the
  // partition is still the one a read returned (KeyTs::ts as in `versions`;
  // 0: none) — nothing committed or prepared since — else fail with
  // kFailedPrecondition and write nothing (kv::wire::kFlagIfUnchanged): a
  // read-modify-write checked against every other writer of what it read.
  // REQUIRES: every write and every key here on one partition (writes on
  // several: kInvalidArgument; a key here placed elsewhere is checked on the
  // writes' partition, where it is not, so the caller must not), not with
  // if_absent. Such a write set commits in one round; with coalescing in a
  // group commit of the batch's checked write sets, whose PREPARE on a
  // partition carries all their conditions there, so one refused condition
  // fails every checked write set of that partition in the group (each then
  // wrote nothing; those on other partitions are unaffected). Views, as the
  // keys of `writes`.
  std::vector<kv::wire::KeyTs> if_unchanged;

  // Results, set by RunBatch.
  Status status;
  std::vector<std::optional<std::string>> values;  // reads: values[i] for reads[i]
  // reads: the timestamp of the version read for reads[i] (a tombstone's
  // too); 0 when the key had no version (WATCH compares these).
  std::vector<uint64_t> versions;
  uint64_t read_ts = 0;  // reads: the newest timestamp among the versions read (tombstones too)
  // When status is Unavailable or TimedOut: a partition whose failure caused
  // it (the proxy reads from another replica next time); -1 otherwise.
  int failed_partition = -1;
};

// The kv-nodes' STATS summed over every partition (kv::wire::PartitionStatsInfo).
struct StoreStats {
  uint64_t keys = 0;
  uint64_t versions = 0;
  uint64_t used_bytes = 0;      // arena pages in use
  uint64_t reserved_bytes = 0;  // arena extents registered
  uint64_t max_ts = 0;          // the largest timestamp any partition holds
  uint64_t internal_keys = 0;   // the proxy's collection pages (kv::wire::kInternalKeyPrefix)
};

class Client {
 public:
  // Creates the Fabric and checks the options. Connections to partitions are
  // opened lazily on first use (and again after one failed), so this
  // succeeds while nodes are still starting.
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Writes all pairs as one transaction at one new timestamp. Keys must be
  // distinct (kInvalidArgument). An empty list is a no-op.
  // On an error the outcome is unknown: under `ramp` the write may still
  // become visible, but only as a whole (docs/transactions.md).
  Status MultiPut(const std::vector<std::pair<std::string, std::string>>& pairs);

  // Reads all keys as one transaction; result i is keys[i]'s value, nullopt
  // when absent or deleted. Keys may repeat.
  Result<std::vector<std::optional<std::string>>> MultiGet(const std::vector<std::string>& keys);

  // One-key MultiPut / MultiGet.
  Status Put(std::string_view key, std::string_view value);
  Result<std::optional<std::string>> Get(std::string_view key);
  // Writes a tombstone: the key reads as absent afterwards.
  Status Del(std::string_view key);

  // Runs independent transactions together, round by round: round 1 has
  // every read's GET (or GET*/GET+) and every write's PREPARE, round 2 the
  // reads' repairs and the writes' COMMITs. Each transaction succeeds or
  // fails on its own (txn.status); they are concurrent to each other, so
  // there is no order among them (callers put dependent ones in different
  // batches). Writes each get their own timestamp, in txns order.
  // coalesce: the requests of all transactions for one partition travel in
  // one message per round (reads of all transactions share one GET request);
  // otherwise every transaction's request is a message of its own.
  // Isolation ramp or none (s2pl: every txn fails with InvalidArgument).
  void RunBatch(std::span<BatchTxn> txns, bool coalesce);

  // A read transaction of a batch served by GET*'s one-sided reads alone:
  // every key has a cached address on its partition whose arena is mapped
  // here (a plain copy, no wait), every slot passes its checks, and (ramp)
  // no key needs a repair read. True: txn's results are set as RunBatch
  // (ramp or none) would set them. False: txn's results are untouched, for
  // RunBatch (an address a check refused is forgotten, as in any read).
  // No message is sent either way, so a caller can finish its reads before
  // a round trip and put what depends on them into that round trip.
  bool ReadOneSided(BatchTxn& txn);

  // Whole-store requests to every partition (the proxy's DBSIZE, INFO and
  // FLUSHALL). CountKeys: the live keys summed over the partitions (a key
  // with R replicas counts R times). QueryStoreStats: keys, versions and
  // arena memory summed the same way. FlushAll: removes every version; not
  // isolated from transactions running meanwhile.
  Result<uint64_t> CountKeys();
  Result<StoreStats> QueryStoreStats();
  // One SCAN request to `partition` (kv::wire::ScanRequest): up to about
  // `max_keys` live keys from hash position `from`, each with the first
  // `head_bytes` of its value; `next` nullopt when the partition has no more.
  struct KeyPage {
    std::optional<uint64_t> next;
    std::vector<std::pair<std::string, std::string>> items;  // key, value head
  };
  Result<KeyPage> ScanKeys(uint32_t partition, uint64_t from, uint32_t max_keys, uint32_t head_bytes);
  // Every timestamp this client (its TimestampSource) issues from now on is
  // above `ts`: a process that starts with a clock behind the cluster's data
  // (after a restart) observes QueryStoreStats().max_ts first.
  void ObserveTimestamp(uint64_t ts);
  Status FlushAll();

  // Progress without blocking, for callers with an event loop of their own
  // (the proxy's workers, every turn): takes late replies and probes the
  // partitions that are unreachable (ClientOptions::unreachable_after). Cheap
  // when every partition answers.
  void Tick();
  // Partitions unreachable now; while non-zero, call Tick() at least every
  // kProbeInterval for them to be found again.
  uint32_t unreachable_partitions() const;
  static constexpr std::chrono::milliseconds kProbeInterval{100};

  const ClientOptions& options() const;
  const kv::Placement& placement() const;

  // False when GET* reads `partition` one-sidedly and its address cache has
  // no address of `key` there: the key was not read or written through this
  // client lately, so it is likely new. Only a hint; true where the client
  // keeps no addresses (nothing is known).
  bool MayExist(std::string_view key, uint32_t partition) const;

  // Counters since Connect, for tests and benchmarks.
  struct Stats {
    uint64_t transactions = 0;
    uint64_t repair_rounds = 0;  // RAMP reads that needed round 2
    uint64_t repaired_keys = 0;  // keys fetched by timestamp in round 2
    uint64_t reconnects = 0;     // connections opened after a failed one
    uint64_t unreachable = 0;    // times a partition became unreachable
    // GET* (kRead), per key of a first round:
    uint64_t slot_reads = 0;      // one-sided reads accepted
    uint64_t slot_rejects = 0;    // one-sided reads refused by the checks (stale, torn)
    uint64_t cache_misses = 0;    // no usable address: straight to GET+

    Stats& operator+=(const Stats& other);
    // GET*: the share of first-round keys not served by a one-sided read,
    // (slot_rejects + cache_misses) / (slot_reads + slot_rejects + cache_misses);
    // 0 when there were none.
    double slot_fallback_rate() const;
  };
  Stats stats() const;

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rampart::txn
