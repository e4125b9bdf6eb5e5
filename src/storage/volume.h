// Volume: an erasure-coded volume (docs/design.md §8, seed 002) as a BlockDevice:
// k data cells + 1 XOR parity cell per stripe over k + 1 storage nodes, laid
// out by VolumeLayout (docs/volume_format.md).
//
//   auto volume = Volume::Open(config, "data", VolumeOptions{});
//   if (!volume.ok()) return volume.status();
//   Status st = (*volume)->Write(offset, bytes);    // any offset and length
//   st = (*volume)->Read(offset, out);
//   st = (*volume)->Flush();
//
// One Fabric and one BufferPool serve a VolumeClient per node; every call
// issues its cell IO to the nodes at once (many in flight) and waits for all
// of it on the one fabric before it returns. Calls copy between the caller's
// spans and the registered pool: the caller's buffers are used only during
// the call.
//
// Reads. A healthy read reads the data cells. When a cell's node is down, or
// its read fails, the read is degraded: the other k cells of the stripe (data
// and parity) are read over the same range and XORed; cells the same call
// reads anyway (the stripe's other data cells of a whole-stripe read) are
// used as they are, so a degraded whole-stripe read reads the parity instead
// of the lost cell and nothing more. The caller sees the same bytes either way.
//
// Hot-node steering (seed 002 §5; VolumeOptions::steer_hot_reads). When one
// node is markedly busier than the others (its read latency or outstanding
// IO well above their median: the rule and its hysteresis are in
// volume_steering.h), a healthy read of its cell is served by reconstruction
// from the stripe's other cells instead, when that costs one extra read (the
// parity) at most: whole-stripe reads steer, a read of one cell does not (it
// would cost k reads instead of one). One read of the hot node in
// SteeringRule::probe_every still goes to it, to notice when it cools.
//
// Writes. Per stripe (and per run of cell columns it touches) the cheaper of
// read-modify-write (old data + old parity) and reconstruct-write (the data
// cells not written) computes the new parity; a full-stripe write reads
// nothing. With one node down writes still succeed: the down node's cell is
// not written, and its content follows from the others.
//
// Failures. A node whose IO fails with Unavailable (or whose write or flush
// fails at all) is marked down; a read error alone (IoError) is read around
// without marking it down. A node unreachable at Open starts down. Before
// the first write that leaves a down node out, the intent log records it as
// failed, so it stays down, across reopens too, until Rebuild restores it
// (its cells are stale). A node that answers at Open without the volume's
// label (docs/volume_format.md, "Volume label": its device was replaced, even
// while nothing was written, or is another volume's) is recorded failed the
// same way; a new volume (no node has a label) labels every node. Rebuild
// writes the label last. With two nodes down the volume is Unavailable.
//
// The write hole. Before any cell of a stripe is written, the stripe's group
// is recorded dirty in the write-intent log (the 1 MiB metadata area of each
// node; docs/volume_format.md, "Write-intent log"), durably on two nodes.
// Groups are cleared lazily, once their writes were flushed and they were
// idle for `clear_delay` (checked at the start of calls and in Flush: a call
// may then pay a flush of the nodes). Open resyncs every dirty group's stripes (parity
// recomputed from the data cells), so a writer killed between the data and
// the parity write of a partial-stripe write cannot corrupt the stripe's
// other cells.
//
// Thread-safety: none. A Volume belongs to the thread that opened it; every
// call, including the callbacks it makes (progress), runs on that thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "storage/block_device.h"
#include "storage/volume_layout.h"
#include "storage/volume_steering.h"

namespace rampart::storage {

// Hooks for tests that simulate a crashing writer or a bad device. Default:
// all off.
struct VolumeTestHooks {
  // Writes issue their data cell writes but not the parity writes, and
  // return Aborted: as if the process died between the two. Their intent
  // records stay set.
  bool drop_parity_writes = false;
  // Open leaves the stripes the intent log marks dirty as they are (to show
  // what the resync prevents). They stay marked.
  bool skip_resync = false;
  // Reads of this node index fail with IoError, as from a bad device; the
  // node stays up and is still written. -1: none.
  int32_t fail_reads_on_node = -1;
  // Every IO of this node index completes no earlier than
  // `slow_node_delay` after it was issued, as on a slow or loaded node. -1:
  // none.
  int32_t slow_node = -1;
  std::chrono::microseconds slow_node_delay{0};
};

struct VolumeOptions {
  // Connections per storage node. Default: 1.
  uint32_t connections_per_node = 1;
  // Requests in flight per connection. Default: 32.
  uint32_t queue_depth = 32;
  // Registered buffer pool shared by all nodes; bounds the bytes one call
  // keeps in flight (larger calls run in windows). At least
  // 2 * max(1 MiB, 2 * nodes * cell_bytes). Default: 64 MiB.
  size_t pool_bytes = 64u << 20;
  // How long a group of stripes stays marked dirty after its last write
  // before it is cleared (flush the nodes, then rewrite the log). Longer
  // means fewer log writes for repeated writes nearby, more to resync after
  // a crash. Default: 1 s.
  std::chrono::milliseconds clear_delay = std::chrono::seconds(1);
  // Dirty groups beyond which all idle ones are cleared at once. Default: 1024.
  uint32_t max_dirty_groups = 1024;
  // With no IO completing for this long, the nodes with IO in flight are
  // marked down. Default: 10 s.
  std::chrono::milliseconds io_timeout = std::chrono::seconds(10);
  // Stripes that Verify, Rebuild and the resync at Open read at once (also
  // bounded by half the pool); Rebuild's progress runs between batches.
  // Default: 64.
  uint32_t stripes_per_batch = 64;
  // Hot-node steering: read around a node markedly busier than the others
  // (see above and volume_steering.h). Default: on.
  bool steer_hot_reads = true;
  // The thresholds of the steering rule. Default: volume_steering.h's.
  SteeringRule steering;
  VolumeTestHooks testing;
};

// One node of the volume, for tests and benchmarks.
struct VolumeNodeStats {
  uint32_t node_id = 0;      // storage node id
  bool up = false;           // serving (not down, not being rebuilt)
  uint64_t outstanding = 0;  // IO in flight now
  double latency_us = 0;     // EWMA of recent IO latency (weight 1/8)
  // EWMA (weight 1/4) of the latency of reads issued while no other IO of
  // this volume was in flight on the node: the node's own delay, not this
  // volume's queue (what steering compares).
  double read_latency_us = 0;
  uint64_t ios = 0;          // IO completed
  uint64_t errors = 0;       // IO completed with an error
};

struct VolumeStats {
  uint64_t healthy_reads = 0;       // cell pieces read from their own node
  uint64_t degraded_reads = 0;      // cell pieces read by reconstruction (node down or failing)
  uint64_t steered_reads = 0;       // ... around a hot node (steering; not in degraded_reads)
  uint64_t reconstructions = 0;     // XOR rebuilds of a cell (reads, writes, resync, rebuild)
  uint64_t full_stripe_writes = 0;  // stripe column runs written without reads
  uint64_t rmw_writes = 0;          // ... by read-modify-write
  uint64_t rcw_writes = 0;          // ... by reconstruct-write (incl. degraded)
  uint64_t intent_writes = 0;       // write-intent log blocks written (per node)
  uint64_t resynced_stripes = 0;    // stripes whose parity Open recomputed
  uint64_t unsafe_stripes = 0;      // dirty stripes Open could not resync (a data node down)
  uint64_t dirty_groups = 0;        // groups marked in the intent log now
  uint32_t nodes_down = 0;
  std::vector<VolumeNodeStats> nodes;  // by node index
};

class Volume final : public BlockDevice {
 public:
  // (done, total): stripes so far and in all. Called between batches, with
  // none of the operation's IO in flight; it may call Read/Write/Flush/Trim
  // of this volume (that is how a server interleaves its requests). Return
  // false to stop (the operation then returns Aborted).
  using Progress = std::function<bool(uint64_t done, uint64_t total)>;

  // Connects to the volume `name` of `config` ([[volumes]]), reads the
  // write-intent log of every reachable node and resyncs the stripes it marks
  // dirty. A node that cannot be reached is down from the start. NotFound for
  // an unknown volume; Unavailable when two or more nodes are unreachable;
  // FailedPrecondition when a node's device cannot hold the volume's area or
  // its IO limits (max_io_bytes < cell_bytes, alignment > 4 KiB) do not fit.
  static Result<std::unique_ptr<Volume>> Open(const ClusterConfig& config,
                                              const std::string& name,
                                              const VolumeOptions& options = {});
  // Closes the connections. Does not flush: call Close() (or Flush()) first
  // for durability. Intent records left marked are resynced by the next Open.
  ~Volume() override;

  Volume(const Volume&) = delete;
  Volume& operator=(const Volume&) = delete;

  // BlockDevice. Errors: InvalidArgument for a range outside the volume,
  // Unavailable when a stripe needs two nodes that are down, IoError /
  // Corruption as the nodes report them when no reconstruction helps.
  uint64_t size() const override;
  uint32_t preferred_block_size() const override;  // cell_bytes
  Status Read(uint64_t offset, std::span<std::byte> out) override;
  // The pieces of every read in the same windows: a batch of small random
  // reads costs about one storage round trip, not one each.
  Status ReadMany(std::span<const ReadRange> reads) override;
  Status Write(uint64_t offset, std::span<const std::byte> data) override;
  // Flushes every live node (fdatasync), then clears intent records that have
  // been idle for clear_delay.
  Status Flush() override;
  // Flush(), then clears every intent record that a completed write left
  // marked, so that the next Open has nothing to resync. The volume stays
  // usable.
  Status Close();
  // A no-op (the range keeps its bytes, which BlockDevice allows): zeroing
  // would cost a full write of the range, and parity stays consistent.
  Status Trim(uint64_t offset, uint64_t length) override;

  // Checks stripe `stripe`'s parity against its data cells: OK, Corruption
  // (naming the stripe), FailedPrecondition when one of its nodes is down,
  // InvalidArgument past the last stripe.
  Status VerifyStripe(uint64_t stripe);
  // VerifyStripe for every stripe, many at once; returns how many stripes
  // have bad parity (0: the volume is consistent). `progress` may be empty.
  Result<uint64_t> Verify(const Progress& progress = {});
  // Restores node `node_index` (replaced and empty, at its configured
  // address) from the other nodes: connects to it and writes every cell of
  // it, stripe by stripe. While it runs (from inside `progress`), reads of
  // stripes not yet rebuilt go around the node and writes to them leave it
  // out; the node is up again when Rebuild returns OK. REQUIRES: no other
  // node down. `progress` may be empty.
  Status Rebuild(uint32_t node_index, const Progress& progress = {});

  // Takes node `node_index` out of service as if it had failed: its IO in
  // flight fails, it is read around and not written, until it is rebuilt (or
  // the volume reopened before a write or flush recorded it as failed).
  void SetNodeDown(uint32_t node_index);
  // Changes the test hooks (see VolumeTestHooks).
  void SetTestHooks(const VolumeTestHooks& hooks);

  const VolumeLayout& layout() const;
  VolumeStats stats() const;

 private:
  struct Impl;
  explicit Volume(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rampart::storage
