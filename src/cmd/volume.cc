// rampart volume info|verify|rebuild NAME: look at, check and repair an
// erasure-coded volume of the cluster file (docs/volume_format.md).
//
// Each command opens the volume itself (storage::Volume::Open, which resyncs
// stripes a crashed writer left dirty; `info` does not), so no other process
// may have it open meanwhile: stop `rampart nbd --volume NAME` first. Two
// writers of one volume would corrupt its parity and intent log; a lock file
// keeps them apart on one host (OpenVolume), nothing does across hosts.
//
// Exit codes: 0 done (verify: every stripe's parity is right); 1 failed
// (verify: bad or unverifiable stripes, listed on stdout); 2 usage errors
// (unknown volume or node, bad configuration).
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cmd/commands.h"
#include "cmd/volume_open.h"
#include "common/progress.h"
#include "common/tcp_probe.h"
#include "common/size.h"
#include "storage/volume.h"
#include "storage/volume_intent.h"

namespace rampart::cmd {
namespace {

using storage::Volume;
using storage::VolumeLayout;

// Takes an exclusive advisory lock (flock) on a file in $TMPDIR (or /tmp)
// named after where the volume lives (its nodes' addresses and node_offset),
// so that two processes on this host cannot open one volume at once; the
// file holds the owner's pid. The lock lasts until the process exits,
// however it exits (the descriptor is never closed: commands are one-shot
// processes). FailedPrecondition naming the holder's pid when taken.
Status LockVolume(const ClusterConfig& config, const VolumeConfig& vc) {
  std::string place = StrCat(vc.node_offset);
  for (uint32_t id : vc.nodes) {
    const StorageNodeConfig* sn = config.FindStorageNode(id);
    place += "," + (sn ? sn->address() : std::to_string(id));
  }
  uint64_t hash = 14695981039346656037ull;  // FNV-1a: stable across builds
  for (char c : place) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  const char* dir = std::getenv("TMPDIR");
  char name[64];
  std::snprintf(name, sizeof name, "/rampart-volume-%016llx.lock", static_cast<unsigned long long>(hash));
  const std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + name;
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot open the volume lock ", path, ": ", std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    close(fd);
    return FailedPrecondition("volume ", vc.name, " is open in another process on this host (pid ",
                              n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string("?"),
                              ", lock ", path, "): stop it first");
  }
  const std::string pid = std::to_string(getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    spdlog::debug("volume lock {}: cannot record the pid", path);
  }
  return Status::Ok();
}

std::string VolumeNames(const ClusterConfig& config) {
  std::string names;
  for (const VolumeConfig& v : config.volumes) names += (names.empty() ? "" : ", ") + v.name;
  return names;
}

// "storage node 2 (127.0.0.1:9002)"
std::string NodeName(const ClusterConfig& config, uint32_t id) {
  const StorageNodeConfig* sn = config.FindStorageNode(id);
  return sn == nullptr ? StrCat("storage node ", id)
                       : StrCat("storage node ", id, " (", sn->address(), ")");
}

// SIGINT and SIGTERM are blocked (before the volume's threads start) and
// polled between batches, so Ctrl-C stops a verify or rebuild cleanly.
void BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
}

bool StopRequested() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  const timespec zero{0, 0};
  return sigtimedwait(&stop, nullptr, &zero) > 0;
}

// The storage node ids of the volume's nodes that are down now.
std::vector<uint32_t> DownNodes(const Volume& volume) {
  std::vector<uint32_t> down;
  for (const storage::VolumeNodeStats& n : volume.stats().nodes) {
    if (!n.up) down.push_back(n.node_id);
  }
  return down;
}

// A Volume::Progress drawing `meter` and stopping on SIGINT/SIGTERM.
Volume::Progress MeterProgress(ProgressMeter& meter) {
  return [&meter](uint64_t done, uint64_t) {
    meter.Update(done);
    return !StopRequested();
  };
}

// ---- info ----

void PrintInfo(const ClusterConfig& config, const std::string& name, const Volume& volume) {
  const VolumeLayout& l = volume.layout();
  const storage::VolumeStats stats = volume.stats();
  const storage::IntentGeometry geometry = storage::IntentGeometryFor(l);
  std::printf("volume %s (%s)\n", name.c_str(), config.origin.c_str());
  std::printf("  size          %s (%llu bytes)\n", FormatSize(l.size()).c_str(),
              static_cast<unsigned long long>(l.size()));
  std::printf("  stripes       %llu of k = %u data cells + 1 XOR parity cell, cell %s (%s of data)\n",
              static_cast<unsigned long long>(l.stripes()), l.data_cells(),
              FormatSize(l.cell_bytes()).c_str(), FormatSize(l.stripe_data_bytes()).c_str());
  std::printf("  area          node bytes [%llu, %llu) on each node: 1MiB metadata, then the cells\n",
              static_cast<unsigned long long>(l.area_offset()),
              static_cast<unsigned long long>(l.area_offset() + l.area_bytes()));
  std::printf("  parity        rotating (left-symmetric): stripe s on node index %u - (s mod %u)\n",
              l.data_cells(), l.node_count());
  for (uint64_t s = 0; s < std::min<uint64_t>(l.node_count(), l.stripes()); ++s) {
    std::string row;
    for (uint32_t n = 0; n < l.node_count(); ++n) {
      const auto cell = l.DataCellOnNode(s, n);
      row += cell ? StrCat(" D", *cell) : std::string("  P");
    }
    std::printf("                stripe %llu:%s\n", static_cast<unsigned long long>(s), row.c_str());
  }
  std::printf("  nodes         index  id     address                 health\n");
  for (uint32_t n = 0; n < stats.nodes.size(); ++n) {
    const storage::VolumeNodeStats& ns = stats.nodes[n];
    const StorageNodeConfig* sn = config.FindStorageNode(ns.node_id);
    // A node down yet reachable is one the intent log records as failed.
    const char* health = ns.up ? "up"
                         : (sn != nullptr && AcceptsTcp(sn->host, sn->port, /*timeout_ms=*/500))
                             ? "DOWN: recorded failed, stale until rebuilt"
                             : "DOWN: unreachable";
    std::printf("                %-6u %-6u %-23s %s\n", n, ns.node_id,
                sn ? sn->address().c_str() : "?", health);
  }
  std::printf("  intent log    %llu dirty groups (of %llu stripes each, %llu in all)%s\n",
              static_cast<unsigned long long>(stats.dirty_groups),
              static_cast<unsigned long long>(geometry.group_stripes),
              static_cast<unsigned long long>(geometry.groups),
              stats.dirty_groups > 0 ? ": the next open resyncs them" : "");
}

int RunInfo(const ClusterConfig& config, const std::string& name) {
  storage::VolumeOptions options;
  // Look, do not touch: leave the stripes the intent log marks dirty as they
  // are (Open would otherwise resync and clear them) so they can be shown.
  // Open writes nothing else unless something is written.
  options.testing.skip_resync = true;
  auto volume = OpenVolume(config, name, options, /*exclusive=*/false);
  if (!volume.ok()) return ReportOpenError(volume.status());
  PrintInfo(config, name, **volume);
  return kExitOk;
}

// ---- verify ----

int RunVerify(const ClusterConfig& config, const std::string& name) {
  BlockStopSignals();
  auto opened = OpenVolume(config, name);
  if (!opened.ok()) return ReportOpenError(opened.status());
  Volume& volume = **opened;
  const VolumeLayout& l = volume.layout();
  const std::vector<uint32_t> down = DownNodes(volume);
  if (!down.empty()) {
    // Every stripe has a cell on every node: none can be checked.
    std::printf("volume %s: stripes 0-%llu not verified: FailedPrecondition: %s is down; verifying "
                "needs every node (rebuild it: rampart volume rebuild %s --node %u)\n",
                name.c_str(), static_cast<unsigned long long>(l.stripes() - 1),
                NodeName(config, down.front()).c_str(), name.c_str(), down.front());
    return kExitFailure;
  }
  ProgressMeter meter({.label = StrCat("verify ", name), .unit = "stripes", .total = l.stripes(),
                       .bytes_per_unit = l.node_count() * l.cell_bytes()});
  Result<uint64_t> bad = volume.Verify(MeterProgress(meter));
  meter.Finish();
  if (!bad.ok()) return ReportFailure(bad.status().WithContext(StrCat("verify ", name)));
  if (*bad == 0) {
    std::printf("volume %s: %llu stripes verified, parity consistent\n", name.c_str(),
                static_cast<unsigned long long>(l.stripes()));
    return kExitOk;
  }
  // Verify only counts them: find them one by one (the failure path only).
  for (uint64_t s = 0; s < l.stripes(); ++s) {
    const Status st = volume.VerifyStripe(s);
    if (!st.ok()) std::printf("stripe %llu: %s\n", static_cast<unsigned long long>(s), st.ToString().c_str());
  }
  std::printf("volume %s: %llu of %llu stripes have bad parity\n", name.c_str(),
              static_cast<unsigned long long>(*bad), static_cast<unsigned long long>(l.stripes()));
  return kExitFailure;
}

// ---- rebuild ----

int RunRebuild(const ClusterConfig& config, const std::string& name, int64_t node_id) {
  Result<uint32_t> index = VolumeNodeIndex(config, name, node_id);
  if (!index.ok()) return ReportUsageError(index.status());
  BlockStopSignals();
  auto opened = OpenVolume(config, name);
  if (!opened.ok()) return ReportOpenError(opened.status());
  Volume& volume = **opened;
  Status st = RebuildNode(config, name, volume, *index, [] { return !StopRequested(); });
  if (st.ok()) st = volume.Close();
  if (st.code() == StatusCode::kAborted) {
    std::fprintf(stderr, "rampart: rebuild of %s stopped; the node stays down until a rebuild completes\n",
                 NodeName(config, static_cast<uint32_t>(node_id)).c_str());
    return kExitFailure;
  }
  if (!st.ok()) return ReportFailure(st.WithContext(StrCat("rebuild ", name)));
  std::printf("volume %s: %s rebuilt, %llu stripes\n", name.c_str(),
              NodeName(config, static_cast<uint32_t>(node_id)).c_str(),
              static_cast<unsigned long long>(volume.layout().stripes()));
  return kExitOk;
}

}  // namespace

Result<std::unique_ptr<Volume>> OpenVolume(const ClusterConfig& config, const std::string& name,
                                           const storage::VolumeOptions& options, bool exclusive) {
  const VolumeConfig* vc = config.FindVolume(name);
  if (vc == nullptr) {
    return NotFound("no volume named \"", name, "\" in ", config.origin,
                    config.volumes.empty() ? std::string(" (it has no [[volumes]])")
                                           : StrCat(" (its volumes: ", VolumeNames(config), ")"));
  }
  if (exclusive) RAMPART_RETURN_IF_ERROR(LockVolume(config, *vc));
  Result<std::unique_ptr<Volume>> volume = Volume::Open(config, name, options);
  if (!volume.ok()) {
    if (volume.status().code() != StatusCode::kUnavailable) return volume.status();
    std::string unreachable;
    for (uint32_t id : vc->nodes) {
      const StorageNodeConfig* sn = config.FindStorageNode(id);
      if (sn != nullptr && !AcceptsTcp(sn->host, sn->port, /*timeout_ms=*/500)) {
        unreachable += (unreachable.empty() ? "" : ", ") + NodeName(config, id);
      }
    }
    return volume.status().WithContext(
        unreachable.empty() ? std::string("opening the volume")
                            : StrCat("not accepting connections: ", unreachable));
  }
  const storage::VolumeStats stats = (*volume)->stats();
  if (stats.resynced_stripes > 0) {
    spdlog::info("volume {}: resynced {} stripes a previous writer left dirty", name,
                 stats.resynced_stripes);
  }
  if (stats.unsafe_stripes > 0) {
    spdlog::warn("volume {}: {} dirty stripes could not be resynced (a data node is down)", name,
                 stats.unsafe_stripes);
  }
  for (uint32_t id : DownNodes(**volume)) {
    spdlog::warn("volume {}: {} is down: reads reconstruct its cells; once it serves (empty or "
                 "not), restore it with `rampart volume rebuild {} --node {}`",
                 name, NodeName(config, id), name, id);
  }
  return volume;
}

Result<uint32_t> VolumeNodeIndex(const ClusterConfig& config, const std::string& name,
                                 int64_t node_id) {
  const VolumeConfig* vc = config.FindVolume(name);
  if (vc == nullptr) return 0u;  // OpenVolume reports it
  for (uint32_t i = 0; i < vc->nodes.size(); ++i) {
    if (vc->nodes[i] == node_id) return i;
  }
  std::string ids;
  for (uint32_t id : vc->nodes) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  return InvalidArgument("node ", node_id, ": not a node of volume ", name, " (its storage nodes: ", ids,
                         ")");
}

Status RebuildNode(const ClusterConfig& config, const std::string& name, Volume& volume,
                   uint32_t node_index, const std::function<bool()>& between) {
  const VolumeLayout& l = volume.layout();
  const uint32_t node_id = l.node_id(node_index);
  spdlog::info("volume {}: rebuilding {} (node index {}) from the other {} nodes, {} stripes", name,
               NodeName(config, node_id), node_index, l.data_cells(), l.stripes());
  ProgressMeter meter({.label = StrCat("rebuild ", name), .unit = "stripes", .total = l.stripes(),
                       .bytes_per_unit = l.cell_bytes()});
  Status st = volume.Rebuild(node_index, [&](uint64_t done, uint64_t) {
    meter.Update(done);
    return between();
  });
  meter.Finish();
  if (st.ok()) spdlog::info("volume {}: {} rebuilt", name, NodeName(config, node_id));
  return st;
}

int ReportOpenError(const Status& status) {
  return status.code() == StatusCode::kNotFound ? ReportUsageError(status) : ReportFailure(status);
}

void RegisterVolumeCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* volume = app.add_subcommand(
      "volume",
      "Look at, check and repair an erasure-coded volume ([[volumes]] of the cluster file). "
      "Stop `rampart nbd --volume NAME` first: one process at a time may open a volume");
  volume->require_subcommand(1);

  auto name = std::make_shared<std::string>();
  auto node = std::make_shared<int64_t>(-1);

  CLI::App* info = volume->add_subcommand(
      "info",
      "Print the layout (k, cell size, stripes, parity rotation), each node's address and "
      "health, and the dirty groups of the write-intent log. Changes nothing");
  info->add_option("NAME", *name, "The volume's name in [[volumes]]")->required();
  OnRunWithConfig(info, ctx, [name](const ClusterConfig& config) { return RunInfo(config, *name); });

  CLI::App* verify = volume->add_subcommand(
      "verify",
      "Check every stripe's parity against its data cells. Exit 0 when all are consistent; 1 "
      "when some are not (listed on stdout) or cannot be checked (a node is down: every stripe "
      "has a cell on it, so none is verified). Progress on stderr; Ctrl-C stops it");
  verify->add_option("NAME", *name, "The volume's name in [[volumes]]")->required();
  OnRunWithConfig(verify, ctx, [name](const ClusterConfig& config) { return RunVerify(config, *name); });

  CLI::App* rebuild = volume->add_subcommand(
      "rebuild",
      "Restore a replaced storage node (serving again at its configured address, empty or "
      "stale) by writing all its cells, reconstructed from the other nodes. Every other node must "
      "be up. Progress on stderr: a bar on a terminal, otherwise a line every 5 s (stripes "
      "done/total, MB/s rebuilt, ETA). Ctrl-C stops it; the node stays down until a rebuild "
      "completes");
  rebuild->add_option("NAME", *name, "The volume's name in [[volumes]]")->required();
  rebuild->add_option("--node", *node, "The storage node id (in [[storage_nodes]]) to rebuild")
      ->required();
  OnRunWithConfig(rebuild, ctx,
                  [name, node](const ClusterConfig& config) { return RunRebuild(config, *name, *node); });
}

}  // namespace rampart::cmd
