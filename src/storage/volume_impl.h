// Volume's private state and the plumbing shared by volume.cc (open, IO
// issue and wait, reads), volume_write.cc (writes) and volume_intent_log.cc
// (the write-intent log, resync, verify, rebuild). Not a public header.
//
// Thread-safety: as Volume, none: the owner thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "storage/buffer_pool.h"
#include "storage/volume.h"
#include "storage/volume_client.h"
#include "storage/volume_intent.h"
#include "storage/volume_steering.h"
#include "transport/transport.h"

namespace rampart::storage {

using SteadyClock = std::chrono::steady_clock;

// Called once per IO with its outcome, from Volume::Impl::Drain.
using IoDone = std::function<void(const Status&)>;
enum class IoKind { kRead, kWrite, kFlush };

// A column range of a stripe: cell bytes [lo, hi), the same on every node.
struct ColumnRange {
  uint64_t lo = 0;
  uint64_t hi = 0;
  uint64_t size() const { return hi - lo; }
};

// `length` bytes at `offset` of a pooled buffer, as an IO target.
inline BufferRef Slice(const Buffer& buffer, size_t offset, size_t length) {
  return BufferRef{buffer.ref().offset + offset, length, buffer.data() + offset};
}

struct Volume::Impl {
  enum class Health { kUp, kDown, kRebuilding };
  struct Node {
    uint32_t id = 0;
    std::string host;
    uint16_t port = 0;
    std::unique_ptr<VolumeClient> client;
    Health health = Health::kDown;
    uint64_t rebuilt_below = 0;  // kRebuilding: stripes [0, this) are rebuilt
    uint64_t outstanding = 0;
    double latency_us = 0;
    // EWMA (weight 1/4) of the latency of reads issued while nothing else of
    // this volume was in flight on the node: its own delay (its other
    // clients' load), not this volume's queue. What steering compares.
    double read_latency_us = 0;
    uint64_t unqueued_reads = 0;
    uint64_t ios = 0;
    uint64_t errors = 0;
    struct InFlight {
      IoDone done;
      SteadyClock::time_point start;
      IoKind kind;
      uint32_t length;
      bool unqueued;  // issued while nothing else was in flight on the node
    };
    std::unordered_map<uint64_t, InFlight> in_flight;  // by Impl's io id
  };

  // A completion held back by VolumeTestHooks::slow_node until `due`.
  struct HeldCompletion {
    SteadyClock::time_point due;
    uint32_t node;
    uint64_t id;
    Status status;
    uint64_t bytes;
  };

  Impl(VolumeLayout layout, const VolumeOptions& options)
      : layout(std::move(layout)), options(options), steering(options.steering) {}
  ~Impl();

  // ---- volume.cc: plumbing ----
  Status Connect(const ClusterConfig& config);
  Status ConnectNode(uint32_t n);
  // Issues one IO to node n; `done` runs exactly once from Drain (also when
  // the node is down or the IO could not start: with that error).
  // REQUIRES: buffer stays alive until `done` ran.
  void Issue(uint32_t n, IoKind kind, uint64_t node_offset, uint32_t length,
             const BufferRef& buffer, IoDone done);
  // Runs until every issued IO completed (and its `done` ran).
  void Drain();
  void Complete(uint32_t n, uint64_t id, const Status& status, uint64_t bytes);
  // Completes the held completions that are due; returns how many.
  int ReleaseHeld();
  void MarkDown(uint32_t n, const Status& why);
  // Whether node n's cell of `stripe` may be read (and must be written).
  bool Usable(uint32_t n, uint64_t stripe) const;
  // The one node index not usable for `stripe`, nullopt when all are;
  // Unavailable when two or more are not.
  Result<std::optional<uint32_t>> Missing(uint64_t stripe) const;
  uint32_t nodes_down() const;
  // A zero-filled pool buffer of `bytes` (rounded up to the pool alignment).
  Result<Buffer> Get(size_t bytes);
  // Round a cell-byte range out to the nodes' alignment.
  ColumnRange Align(uint64_t lo, uint64_t hi) const;
  Status FlushNodes();

  // ---- volume_read.cc: reads (healthy, degraded, steered) ----
  Status Read(uint64_t offset, std::span<std::byte> out);
  Status ReadMany(std::span<const BlockDevice::ReadRange> reads);
  // Reads `pieces` (Map's, buffer_offset into `out`) in windows.
  Status ReadPieces(const std::vector<Piece>& pieces, std::span<std::byte> out);
  // One window of ReadPieces (volume_read.cc).
  class ReadWindow;
  // Feeds the nodes' loads to `steering` (once per read window).
  void UpdateSteering();

  // ---- volume.cc: stripe reads shared by writes, verify and rebuild ----
  // Reads the cells of `stripe` over `cols` from every usable node except
  // `skip` into buffer slot node * cols.size(); `errors[node]` gets each
  // outcome. Issue only: Drain collects.
  void IssueStripeReads(uint64_t stripe, ColumnRange cols, std::optional<uint32_t> skip,
                        const Buffer& buffer, std::vector<Status>& errors);
  // Rebuilds slot `missing` of a buffer filled by IssueStripeReads(skip =
  // missing) from the others. IoError/Unavailable when a read failed.
  Status ReconstructSlot(uint64_t stripe, ColumnRange cols, uint32_t missing,
                         const Buffer& buffer, const std::vector<Status>& errors);

  // ---- volume_write.cc ----
  Status Write(uint64_t offset, std::span<const std::byte> data);
  // One window of Write (volume_write.cc).
  class WriteWindow;

  // ---- volume_intent_log.cc ----
  // Reads every reachable node's log; loads the dirty groups and the
  // generation to continue from.
  Status LoadIntents();
  // A record LoadIntents found on node `node`.
  struct FoundIntent {
    uint32_t node;
    IntentRecord record;
  };
  // Node n's intent area (records and label), read whole; nullopt when a
  // read failed (the node is then marked down).
  Result<std::optional<Buffer>> ReadIntentArea(uint32_t n);
  // labels[n] and label_why[n] from node n's label block.
  void ReadLabel(uint32_t n, std::span<const std::byte> block);
  // Node n's valid records of this layout.
  std::vector<FoundIntent> DecodeIntents(uint32_t n, const Buffer& area);
  // From the records of labelled nodes: the epoch to continue from, the
  // failed node, the dirty groups (loaded_dirty, dirty).
  void ApplyIntents(std::vector<FoundIntent> found);
  // Recomputes the parity of the stripes of the dirty groups loaded.
  Status Resync();
  // After LoadIntents (which reads the labels too): a volume no node has a
  // label of gets labels on every node up; a node up without a valid label
  // while others have one (replaced or foreign) is marked down and recorded
  // failed in the intent log. Unavailable when two nodes are out.
  Status CheckLabels(const std::string& volume);
  // Writes and flushes node n's label (`valid`) or zeros over it. Issue only.
  void IssueLabelWrite(uint32_t n, bool valid, Status& status);
  uint64_t label_offset() const {
    return layout.metadata_offset() + uint64_t{kVolumeLabelBlock} * kIntentBlockBytes;
  }
  // Marks the groups of `stripes` dirty; the records are durable (written
  // and flushed on two nodes) once Drain returned and `status` is OK.
  // Issue only, like IssueStripeReads. Returns the groups newly marked (to
  // unmark if the records could not be written).
  std::vector<uint64_t> IssueMarkDirty(const std::set<uint64_t>& stripes, Status& status);
  // The blocks holding `groups`.
  std::set<uint32_t> BlocksOf(const std::vector<uint64_t>& groups) const;
  // Clears idle groups (see VolumeOptions::clear_delay); `force` clears every
  // group not tainted. Flushes the nodes first. Call between operations only.
  Status ClearIdleIntents(bool force);
  // Writes records `blocks` (the current dirty set and failed node) to two
  // live nodes, flushing them when `durable`. Issue only.
  void IssueRecordWrites(const std::set<uint32_t>& blocks, bool durable, Status& status);
  // IssueRecordWrites + Drain, retried on another pair while two nodes are up.
  Status PersistRecords(const std::set<uint32_t>& blocks, bool durable);
  // Makes the node marked down (if any) durably known as failed, so that a
  // later Open keeps it out until it is rebuilt. Cheap when nothing changed.
  Status RecordFailedNode();
  // Reads stripes [first, first + count) whole and checks their parity: one
  // status per stripe (OK or Corruption); IO errors fail the whole call.
  Result<std::vector<Status>> CheckStripes(uint64_t first, uint64_t count);
  // How many stripes of C bytes per node fit half the pool at once (>= 1).
  uint64_t StripeWindow() const;
  Status VerifyStripe(uint64_t stripe);
  Result<uint64_t> Verify(const Progress& progress);
  Status Rebuild(uint32_t node_index, const Progress& progress);
  // Rebuild's steps: node n's label written (valid) or cleared, the node
  // marked down when that fails; stripes [first, first + count) of node
  // `node_index` reconstructed from the others and written.
  Status WriteLabelOrFail(uint32_t n, bool valid);
  Status RebuildStripes(uint32_t node_index, uint64_t first, uint64_t count);

  const VolumeLayout layout;
  VolumeOptions options;
  IntentGeometry geometry;
  uint32_t alignment = 1;        // the largest node alignment (<= 4096)
  uint32_t max_io_bytes = 0;     // the smallest node max_io_bytes
  std::unique_ptr<transport::Fabric> fabric;
  std::unique_ptr<BufferPool> pool;  // destroyed before fabric
  VolumeClientOptions client_options;
  std::vector<Node> nodes;
  // Clients of nodes marked down, destroyed outside their own callbacks.
  std::vector<std::unique_ptr<VolumeClient>> graveyard;
  std::deque<std::pair<IoDone, Status>> deferred;  // failures to report from Drain
  std::vector<HeldCompletion> held;                // test hook slow_node
  HotNodeTracker steering;
  uint64_t next_io_id = 1;
  uint64_t pending = 0;

  // The intent log: dirty group -> time of its last write.
  std::map<uint64_t, SteadyClock::time_point> dirty;
  // Groups whose stripes may be inconsistent now (a write failed half-way,
  // or Open could not resync them): never cleared this session.
  std::set<uint64_t> tainted;
  // Groups found dirty by LoadIntents, to resync.
  std::set<uint64_t> loaded_dirty;
  uint64_t generation = 0;     // of the last record written (epoch << 32 | count)
  uint32_t failed_node = kNoFailedNode;  // as the records on disk say
  // Per node, what LoadIntents found in its label slot.
  enum class Label { kUnread, kValid, kNone, kForeign };
  std::vector<Label> labels;
  std::vector<std::string> label_why;  // kNone / kForeign: why, for messages
  uint32_t record_cursor = 0;  // rotates the pair of nodes records go to
  SteadyClock::time_point last_clear_check;

  VolumeStats stats;
};

}  // namespace rampart::storage
