// Volume: open, the IO plumbing over the shared fabric, and the stripe reads
// that reads, writes, verify and rebuild share (reads: volume_read.cc).
#include "storage/volume.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>
#include "storage/parity.h"
#include "storage/volume_impl.h"
#include "transport/config_options.h"

namespace rampart::storage {

// ---------------------------------------------------------------------------
// Open and close

Volume::Volume(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Volume::~Volume() = default;

Volume::Impl::~Impl() {
  // Clients close their endpoints before the pool's region and the fabric go;
  // callbacks never run (between calls there are none) release their buffers
  // while the pool exists.
  deferred.clear();
  for (Node& node : nodes) {
    node.in_flight.clear();
    node.client.reset();
  }
  graveyard.clear();
  pool.reset();
  fabric.reset();
}

Result<std::unique_ptr<Volume>> Volume::Open(const ClusterConfig& config, const std::string& name,
                                             const VolumeOptions& options) {
  const VolumeConfig* vc = config.FindVolume(name);
  if (vc == nullptr) return NotFound("no volume named '", name, "' in ", config.origin);
  RAMPART_ASSIGN_OR_RETURN(VolumeLayout layout, VolumeLayout::Create(*vc));
  auto impl = std::make_unique<Impl>(std::move(layout), options);
  RAMPART_RETURN_IF_ERROR(impl->Connect(config));
  RAMPART_RETURN_IF_ERROR(impl->LoadIntents());
  if (impl->failed_node != kNoFailedNode) {
    impl->MarkDown(impl->failed_node, FailedPrecondition("the intent log says it failed: rebuild it"));
  }
  // A node up without the volume's label (replaced, foreign) is failed too.
  RAMPART_RETURN_IF_ERROR(impl->CheckLabels(name));
  if (impl->nodes_down() >= 2) {
    return Unavailable("volume ", name, ": ", impl->nodes_down(), " of ",
                       impl->layout.node_count(), " nodes are down");
  }
  RAMPART_RETURN_IF_ERROR(impl->Resync());
  return std::unique_ptr<Volume>(new Volume(std::move(impl)));
}

// Volume::Impl::Connect: attempts per storage node, and the pause between.
constexpr int kConnectAttempts = 3;
constexpr std::chrono::milliseconds kConnectRetryPause{100};

Status Volume::Impl::Connect(const ClusterConfig& config) {
  geometry = IntentGeometryFor(layout);
  RAMPART_ASSIGN_OR_RETURN(transport::FabricOptions fo, transport::FabricOptionsFromConfig(config));
  if (fo.backend != transport::Backend::kUcx) {
    return InvalidArgument("volumes need transport.backend = \"ucx\" (the storage nodes move data "
                           "one-sidedly)");
  }
  // Half the pool must hold a stripe's two sets of cells (a write's old and
  // new) or the metadata area (Open reads it), the other half what the
  // intent records and a degraded retry need on top.
  const size_t need =
      2 * std::max<size_t>(kVolumeMetadataBytes, 2 * layout.node_count() * layout.cell_bytes());
  if (options.pool_bytes < need) {
    return InvalidArgument("pool_bytes ", options.pool_bytes, " is too small for this volume: at least ",
                           need);
  }
  RAMPART_ASSIGN_OR_RETURN(fabric, transport::Fabric::Create(fo));
  RAMPART_ASSIGN_OR_RETURN(pool, BufferPool::Create(*fabric, options.pool_bytes));
  fabric->SetDisconnectHandler([this](const std::shared_ptr<transport::Endpoint>& ep, Status why) {
    for (Node& node : nodes) {
      if (node.client && node.client->HandleDisconnect(*ep, why)) return;
    }
  });
  client_options.connections = options.connections_per_node;
  client_options.queue_depth = options.queue_depth;
  client_options.channel = transport::ChannelOptionsFromConfig(config.transport);
  client_options.hello_timeout = fo.connect_timeout;
  nodes.resize(layout.node_count());
  for (uint32_t n = 0; n < layout.node_count(); ++n) {
    const StorageNodeConfig* sn = config.FindStorageNode(layout.node_id(n));
    if (sn == nullptr) return NotFound("storage node ", layout.node_id(n), " is not configured");
    nodes[n].id = sn->id;
    nodes[n].host = sn->host;
    nodes[n].port = sn->port;
  }
  for (uint32_t n = 0; n < layout.node_count(); ++n) {
    Status st = ConnectNode(n);
    // A connection refused or reset at once can be a node still closing a
    // killed client's connections: tried again briefly before the node
    // counts as down, which would leave its dirty stripes unresynced.
    for (int attempt = 1; attempt < kConnectAttempts && st.code() == StatusCode::kUnavailable;
         ++attempt) {
      std::this_thread::sleep_for(kConnectRetryPause);
      st = ConnectNode(n);
    }
    if (st.code() == StatusCode::kFailedPrecondition) return st;
    if (!st.ok()) {
      spdlog::warn("volume: storage node {} ({}:{}) is down: {}", nodes[n].id, nodes[n].host,
                       nodes[n].port, st.ToString());
    }
  }
  last_clear_check = SteadyClock::now();
  return Status::Ok();
}

Status Volume::Impl::ConnectNode(uint32_t n) {
  Node& node = nodes[n];
  VolumeClientOptions o = client_options;
  o.host = node.host;
  o.port = node.port;
  RAMPART_ASSIGN_OR_RETURN(std::unique_ptr<VolumeClient> client,
                           VolumeClient::Connect(o, *fabric, *pool));
  const wire::DeviceInfo& dev = client->device();
  const std::string where = StrCat("storage node ", node.id, " (", node.host, ":", node.port, ")");
  if (dev.device_bytes < layout.area_offset() + layout.area_bytes()) {
    return FailedPrecondition(where, " serves ", dev.device_bytes, " bytes; the volume needs ",
                              layout.area_offset() + layout.area_bytes());
  }
  if (dev.max_io_bytes < layout.cell_bytes() || dev.alignment > kIntentBlockBytes ||
      (dev.alignment > 0 && layout.cell_bytes() % dev.alignment != 0)) {
    return FailedPrecondition(where, ": max_io_bytes ", dev.max_io_bytes, " and alignment ",
                              dev.alignment, " do not fit cells of ", layout.cell_bytes(),
                              " bytes (need max_io_bytes >= cell_bytes, alignment <= 4096)");
  }
  alignment = std::max(alignment, std::max<uint32_t>(dev.alignment, 1));
  max_io_bytes = max_io_bytes == 0 ? dev.max_io_bytes : std::min(max_io_bytes, dev.max_io_bytes);
  node.client = std::move(client);
  node.health = Health::kUp;
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// IO plumbing

void Volume::Impl::Issue(uint32_t n, IoKind kind, uint64_t node_offset, uint32_t length,
                         const BufferRef& buffer, IoDone done) {
  Node& node = nodes[n];
  ++pending;
  if (node.health == Health::kDown || !node.client) {
    deferred.emplace_back(std::move(done), Unavailable("storage node ", node.id, " is down"));
    return;
  }
  if (kind == IoKind::kRead && options.testing.fail_reads_on_node == static_cast<int32_t>(n)) {
    deferred.emplace_back(std::move(done), IoError("test hook: reads of storage node ", node.id, " fail"));
    return;
  }
  const uint64_t id = next_io_id++;
  auto cb = [this, n, id](const Status& s, uint64_t bytes) { Complete(n, id, s, bytes); };
  Status st;
  switch (kind) {
    case IoKind::kRead: st = node.client->Read(node_offset, length, buffer, cb); break;
    case IoKind::kWrite: st = node.client->Write(node_offset, length, buffer, cb); break;
    case IoKind::kFlush: st = node.client->Flush(cb); break;
  }
  if (!st.ok()) {
    deferred.emplace_back(std::move(done), st);
    if (st.code() == StatusCode::kUnavailable) MarkDown(n, st);
    return;
  }
  node.in_flight.emplace(id, Node::InFlight{std::move(done), SteadyClock::now(), kind, length,
                                            node.outstanding == 0});
  ++node.outstanding;
}

void Volume::Impl::Complete(uint32_t n, uint64_t id, const Status& status, uint64_t bytes) {
  Node& node = nodes[n];
  auto it = node.in_flight.find(id);
  if (it == node.in_flight.end()) return;  // failed already (node marked down)
  const auto now = SteadyClock::now();
  if (options.testing.slow_node == static_cast<int32_t>(n) &&
      now < it->second.start + options.testing.slow_node_delay) {
    held.push_back(HeldCompletion{it->second.start + options.testing.slow_node_delay, n, id, status, bytes});
    return;  // ReleaseHeld completes it when due
  }
  Node::InFlight io = std::move(it->second);
  node.in_flight.erase(it);
  --node.outstanding;
  --pending;
  const double us = std::chrono::duration<double, std::micro>(now - io.start).count();
  node.latency_us = node.ios == 0 ? us : node.latency_us + (us - node.latency_us) / 8;
  ++node.ios;
  if (io.kind == IoKind::kRead && io.unqueued) {
    node.read_latency_us =
        node.unqueued_reads == 0 ? us : node.read_latency_us + (us - node.read_latency_us) / 4;
    ++node.unqueued_reads;
  }
  Status st = status;
  if (st.ok() && io.kind != IoKind::kFlush && bytes != io.length) {
    st = IoError("storage node ", node.id, " transferred ", bytes, " of ", io.length, " bytes");
  }
  if (!st.ok()) {
    ++node.errors;
    // A failed write or flush leaves the cell unknown: the node is out until
    // rebuilt. A read error alone is read around.
    if (st.code() == StatusCode::kUnavailable || io.kind != IoKind::kRead) MarkDown(n, st);
  }
  io.done(st);
}

int Volume::Impl::ReleaseHeld() {
  if (held.empty()) return 0;
  const auto now = SteadyClock::now();
  std::vector<HeldCompletion> due;
  std::erase_if(held, [&](HeldCompletion& h) {
    if (h.due > now) return false;
    due.push_back(std::move(h));
    return true;
  });
  for (HeldCompletion& h : due) Complete(h.node, h.id, h.status, h.bytes);
  return static_cast<int>(due.size());
}

void Volume::Impl::MarkDown(uint32_t n, const Status& why) {
  Node& node = nodes[n];
  if (node.health == Health::kDown) return;
  spdlog::warn("volume: storage node {} ({}:{}) is down: {}", node.id, node.host, node.port,
                   why.ToString());
  node.health = Health::kDown;
  const Status failed = Unavailable("storage node ", node.id, " is down: ", why.ToString());
  for (auto& [id, io] : node.in_flight) deferred.emplace_back(std::move(io.done), failed);
  node.in_flight.clear();
  node.outstanding = 0;
  // Destroyed by Drain, outside this client's own callbacks.
  if (node.client) graveyard.push_back(std::move(node.client));
}

void Volume::Impl::Drain() {
  auto last_progress = SteadyClock::now();
  while (pending > 0) {
    fabric->Progress();
    int ran = 0;
    while (!deferred.empty()) {
      auto [done, st] = std::move(deferred.front());
      deferred.pop_front();
      --pending;
      ++ran;
      done(st);
    }
    for (Node& node : nodes) {
      if (node.client) ran += node.client->RunCompletions();
    }
    ran += ReleaseHeld();
    const auto now = SteadyClock::now();
    if (ran > 0) {
      last_progress = now;
      continue;
    }
    if (pending == 0) break;
    if (now - last_progress > options.io_timeout) {
      for (uint32_t n = 0; n < nodes.size(); ++n) {
        if (nodes[n].outstanding > 0) MarkDown(n, TimedOut("no IO completed for ", options.io_timeout.count(), " ms"));
      }
      last_progress = now;
      continue;
    }
    auto wait = std::chrono::milliseconds(50);
    for (const HeldCompletion& h : held) {
      wait = std::clamp(std::chrono::ceil<std::chrono::milliseconds>(h.due - now),
                        std::chrono::milliseconds(0), wait);
    }
    fabric->Wait(wait);
  }
  graveyard.clear();
}

bool Volume::Impl::Usable(uint32_t n, uint64_t stripe) const {
  const Node& node = nodes[n];
  return node.health == Health::kUp || (node.health == Health::kRebuilding && stripe < node.rebuilt_below);
}

Result<std::optional<uint32_t>> Volume::Impl::Missing(uint64_t stripe) const {
  std::optional<uint32_t> missing;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    if (Usable(n, stripe)) continue;
    if (missing) {
      return Unavailable("stripe ", stripe, ": storage nodes ", nodes[*missing].id, " and ",
                         nodes[n].id, " are both down");
    }
    missing = n;
  }
  return missing;
}

uint32_t Volume::Impl::nodes_down() const {
  uint32_t down = 0;
  for (const Node& node : nodes) down += node.health == Health::kDown ? 1 : 0;
  return down;
}

Result<Buffer> Volume::Impl::Get(size_t bytes) {
  RAMPART_ASSIGN_OR_RETURN(Buffer b, pool->Get(bytes));
  std::memset(b.data(), 0, b.size());
  return b;
}

ColumnRange Volume::Impl::Align(uint64_t lo, uint64_t hi) const {
  return ColumnRange{lo / alignment * alignment, (hi + alignment - 1) / alignment * alignment};
}

Status Volume::Impl::FlushNodes() {
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].health == Health::kDown) continue;
    Issue(n, IoKind::kFlush, 0, 0, BufferRef{}, [](const Status&) {});
  }
  Drain();
  RAMPART_RETURN_IF_ERROR(RecordFailedNode());
  if (nodes_down() >= 2) return Unavailable("flush: ", nodes_down(), " storage nodes are down");
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Stripe reads

void Volume::Impl::IssueStripeReads(uint64_t stripe, ColumnRange cols, std::optional<uint32_t> skip,
                                    const Buffer& buffer, std::vector<Status>& errors) {
  errors.assign(nodes.size(), Status::Ok());
  const uint64_t length = cols.size();
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    if (skip && *skip == n) continue;
    Status* slot = &errors[n];
    if (!Usable(n, stripe)) {
      *slot = Unavailable("storage node ", nodes[n].id, " is down");
      continue;
    }
    Issue(n, IoKind::kRead, layout.StripeOffset(stripe) + cols.lo, static_cast<uint32_t>(length),
          Slice(buffer, n * length, length), [slot](const Status& st) { *slot = st; });
  }
}

Status Volume::Impl::ReconstructSlot(uint64_t stripe, ColumnRange cols, uint32_t missing,
                                     const Buffer& buffer, const std::vector<Status>& errors) {
  std::vector<MutableBytes> cells;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    if (n != missing && !errors[n].ok()) {
      return errors[n].WithContext(StrCat("stripe ", stripe, ": cannot reconstruct node index ",
                                          missing, "'s cell"));
    }
    cells.emplace_back(buffer.data() + n * cols.size(), cols.size());
  }
  ++stats.reconstructions;
  return Reconstruct(cells, missing);
}

// ---------------------------------------------------------------------------
// The rest of BlockDevice, and accessors

uint64_t Volume::size() const { return impl_->layout.size(); }
uint32_t Volume::preferred_block_size() const {
  return static_cast<uint32_t>(impl_->layout.cell_bytes());
}
Status Volume::Read(uint64_t offset, std::span<std::byte> out) { return impl_->Read(offset, out); }
Status Volume::ReadMany(std::span<const ReadRange> reads) { return impl_->ReadMany(reads); }
Status Volume::Write(uint64_t offset, std::span<const std::byte> data) {
  return impl_->Write(offset, data);
}

Status Volume::Flush() {
  RAMPART_RETURN_IF_ERROR(impl_->FlushNodes());
  (void)impl_->ClearIdleIntents(false);
  return Status::Ok();
}

Status Volume::Close() {
  RAMPART_RETURN_IF_ERROR(impl_->FlushNodes());
  return impl_->ClearIdleIntents(/*force=*/true);
}

Status Volume::Trim(uint64_t offset, uint64_t length) {
  if (offset > size() || length > size() - offset) {
    return InvalidArgument("trim [", offset, ", +", length, ") is outside the volume of ", size(),
                           " bytes");
  }
  return Status::Ok();
}

Status Volume::VerifyStripe(uint64_t stripe) { return impl_->VerifyStripe(stripe); }
Result<uint64_t> Volume::Verify(const Progress& progress) { return impl_->Verify(progress); }
Status Volume::Rebuild(uint32_t node_index, const Progress& progress) {
  return impl_->Rebuild(node_index, progress);
}

void Volume::SetNodeDown(uint32_t node_index) {
  if (node_index >= impl_->nodes.size()) return;
  impl_->MarkDown(node_index, Aborted("taken out of service (SetNodeDown)"));
  impl_->Drain();  // fails its IO in flight; none is, between calls
}

void Volume::SetTestHooks(const VolumeTestHooks& hooks) { impl_->options.testing = hooks; }

const VolumeLayout& Volume::layout() const { return impl_->layout; }

VolumeStats Volume::stats() const {
  VolumeStats s = impl_->stats;
  s.nodes_down = impl_->nodes_down();
  s.dirty_groups = impl_->dirty.size();
  for (const Impl::Node& node : impl_->nodes) {
    s.nodes.push_back(VolumeNodeStats{node.id, node.health == Impl::Health::kUp, node.outstanding,
                                      node.latency_us, node.read_latency_us, node.ios,
                                      node.errors});
  }
  return s;
}

}  // namespace rampart::storage
