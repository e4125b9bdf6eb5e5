// rampart bench volume NAME [--op read|write] [--pattern sequential|random]
//     [--block-size B] [--span S] [--seconds T] [--degraded NODE_ID]
//     [--steering on|off] [--start-at UNIX_S] [--json FILE]
//
// Seed 002's volume experiments: one client thread calls Read (or Write) of
// --block-size bytes on the erasure-coded volume NAME (storage::Volume, over
// its k + 1 storage nodes) back to back for --seconds; each call issues all
// its cell IO at once and waits for it (volume.h). --degraded takes a node
// out first (Volume::SetNodeDown: reads reconstruct its cells), --steering
// switches hot-node steering (VolumeOptions::steer_hot_reads). Prints MB/s,
// calls per second (the IOPS column), call latency p50/p99 and the volume's read counters
// (healthy, degraded, steered), and writes JSON.
//
// Several processes may read one volume at once (the load-concentration
// experiment, bench/volume.sh): readers open it without the exclusive lock
// of cmd/volume_open.h (and write nothing unless a crashed writer left
// stripes to resync); --op write takes the lock.
// Writes with --degraded record the node as failed in the intent log: it
// stays down until `rampart volume rebuild`. Registered under `bench`
// (bench_transport.cc).
#include <CLI/CLI.hpp>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/bench_json.h"
#include "cmd/bench_common.h"
#include "cmd/commands.h"
#include "cmd/volume_open.h"
#include "common/histogram.h"
#include "common/size.h"
#include "storage/volume.h"

namespace rampart::cmd {
namespace {

using Clock = std::chrono::steady_clock;

struct VolumeFlags {
  std::string name;
  std::string op = "read", pattern = "sequential";
  std::string block_size;  // empty: 16 stripes
  std::string span;        // empty: the whole volume
  double seconds = 5;
  int64_t degraded = -1;  // storage node id
  std::string steering = "on";
  double start_at = 0;  // unix seconds; 0: at once
  std::string json = "volume-bench.json";
};

// Calls `op` on consecutive or random blocks until `deadline`.
RunResult Drive(storage::Volume& volume, bool write, uint64_t block, uint64_t span, bool random,
                Clock::time_point deadline) {
  RunResult r;
  Histogram h;
  std::vector<std::byte> buffer(block);
  std::mt19937_64 rng(0x5eed002);
  for (auto& b : buffer) b = static_cast<std::byte>(rng());
  const uint64_t blocks = span / block;
  std::uniform_int_distribution<uint64_t> pick(0, blocks - 1);
  uint64_t cursor = 0;
  const auto start = Clock::now();
  for (auto now = start; now < deadline; now = Clock::now()) {
    const uint64_t offset = (random ? pick(rng) : cursor++ % blocks) * block;
    const Status st = write ? volume.Write(offset, buffer) : volume.Read(offset, buffer);
    if (!st.ok()) {
      ++r.errors;
      if (r.first_error.empty()) r.first_error = st.ToString();
      if (st.code() == StatusCode::kUnavailable) break;
      continue;
    }
    h.Record(Clock::now() - now);
    ++r.ops;
    r.bytes += block;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.p50_ns = h.Percentile(50);
  r.p99_ns = h.Percentile(99);
  return r;
}

// The run's row, then the volume's read counters and its nodes.
void PrintResult(const std::string& title, const RunResult& r, const storage::VolumeStats& s) {
  PrintRow(title, r);
  std::cout << "reads (cell pieces): healthy " << s.healthy_reads << ", degraded "
            << s.degraded_reads << ", steered " << s.steered_reads << "\n";
  std::cout << "nodes (id: IOs, read latency EWMA):" << std::fixed;
  for (const storage::VolumeNodeStats& n : s.nodes) {
    std::cout << "  " << n.node_id << (n.up ? "" : " (down)") << ": " << n.ios << ", "
              << std::setprecision(0) << n.read_latency_us << " us";
  }
  std::cout << "\n";
  std::cout.unsetf(std::ios::floatfield);
}

nlohmann::json VolumeResultJson(const RunResult& r, const storage::VolumeStats& s) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const storage::VolumeNodeStats& n : s.nodes) {
    nodes.push_back({{"id", n.node_id}, {"up", n.up}, {"ios", n.ios}, {"errors", n.errors},
                     {"latency_us", n.latency_us}, {"read_latency_us", n.read_latency_us}});
  }
  nlohmann::json out = ResultJson(r);
  out.update({{"healthy_reads", s.healthy_reads},
              {"degraded_reads", s.degraded_reads},
              {"steered_reads", s.steered_reads},
              {"reconstructions", s.reconstructions},
              {"nodes", nodes}});
  return out;
}

// Sleeps until wall-clock time `unix_seconds` (no-op when it passed).
void SleepUntil(double unix_seconds) {
  const auto target = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(unix_seconds)));
  std::this_thread::sleep_until(target);
}

// What the flags ask of the volume: the node index to take down, the block
// and span sizes. InvalidArgument/NotFound for flags that do not fit it.
struct VolumePlan {
  std::optional<uint32_t> down;
  uint64_t block = 0;
  uint64_t span = 0;
};

Result<VolumePlan> PlanVolumeBench(const ClusterConfig& config, const VolumeFlags& f) {
  const VolumeConfig* vc = config.FindVolume(f.name);
  if (vc == nullptr) return NotFound("no volume named '", f.name, "' in ", config.origin);
  VolumePlan plan;
  if (f.degraded >= 0) {
    for (uint32_t i = 0; i < vc->nodes.size(); ++i) {
      if (vc->nodes[i] == f.degraded) plan.down = i;
    }
    if (!plan.down) {
      return InvalidArgument("--degraded ", f.degraded, ": volume ", f.name,
                             " has no storage node with that id");
    }
  }
  RAMPART_ASSIGN_OR_RETURN(storage::VolumeLayout layout, storage::VolumeLayout::Create(*vc));
  plan.block = 16 * layout.stripe_data_bytes();
  if (!f.block_size.empty()) {
    auto b = ParseSize(f.block_size);
    if (!b.ok() || *b == 0 || *b > (uint64_t{256} << 20)) {
      return InvalidArgument("--block-size: expected a size from 1 B to 256 MiB");
    }
    plan.block = *b;
  }
  plan.span = layout.size();
  if (!f.span.empty()) {
    auto s = ParseSize(f.span);
    if (!s.ok()) return InvalidArgument("--span: ", s.status().message());
    plan.span = std::min(*s, plan.span);
  }
  if (plan.span / plan.block == 0) {
    return InvalidArgument("--span (", plan.span, " bytes) holds no block of ", plan.block);
  }
  return plan;
}

// The counters of `after` less those of `before`.
storage::VolumeStats StatsSince(const storage::VolumeStats& before, storage::VolumeStats after) {
  after.healthy_reads -= before.healthy_reads;
  after.degraded_reads -= before.degraded_reads;
  after.steered_reads -= before.steered_reads;
  after.reconstructions -= before.reconstructions;
  for (size_t i = 0; i < after.nodes.size() && i < before.nodes.size(); ++i) {
    after.nodes[i].ios -= before.nodes[i].ios;
    after.nodes[i].errors -= before.nodes[i].errors;
  }
  return after;
}

nlohmann::json VolumeConfigJson(const VolumeFlags& f, const VolumePlan& plan,
                                const storage::Volume& volume,
                                const storage::VolumeOptions& options) {
  const storage::VolumeLayout& layout = volume.layout();
  nlohmann::json node_ids = nlohmann::json::array();
  for (uint32_t i = 0; i < layout.node_count(); ++i) node_ids.push_back(layout.node_id(i));
  return {{"volume", f.name},
          {"nodes", node_ids},
          {"data_cells", layout.data_cells()},
          {"cell_bytes", layout.cell_bytes()},
          {"volume_bytes", volume.size()},
          {"op", f.op},
          {"pattern", f.pattern},
          {"block_bytes", plan.block},
          {"span_bytes", plan.span},
          {"duration_bound_s", f.seconds},
          {"degraded_node", f.degraded},
          {"steering", f.steering},
          {"queue_depth", options.queue_depth},
          {"connections_per_node", options.connections_per_node},
          {"start_at", f.start_at},
          {"cores", std::thread::hardware_concurrency()}};
}

int RunVolumeBench(const ClusterConfig& config, const VolumeFlags& f) {
  auto plan = PlanVolumeBench(config, f);
  if (!plan.ok()) return ReportUsageError(plan.status());
  storage::VolumeOptions options;
  options.steer_hot_reads = f.steering == "on";
  // Writes lock the volume against other processes (a `rampart nbd` serving
  // it); readers share it, as the load-concentration experiment needs.
  auto opened = OpenVolume(config, f.name, options, /*exclusive=*/f.op == "write");
  if (!opened.ok()) return ReportOpenError(opened.status());
  storage::Volume& volume = **opened;
  const storage::VolumeLayout& layout = volume.layout();
  if (plan->down) volume.SetNodeDown(*plan->down);
  if (f.start_at > 0) SleepUntil(f.start_at);
  const storage::VolumeStats before = volume.stats();
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(f.seconds * 1000));
  const RunResult r = Drive(volume, f.op == "write", plan->block, plan->span,
                            f.pattern == "random", deadline);
  const storage::VolumeStats s = StatsSince(before, volume.stats());
  if (f.op == "write") {
    if (Status st = volume.Close(); !st.ok()) return ReportFailure(st);
  }

  std::ostringstream title;
  title << "volume bench: " << f.name << " (" << layout.node_count() << " nodes, k "
        << layout.data_cells() << ", cell " << layout.cell_bytes() << " B), " << f.op << " "
        << f.pattern << ", block " << plan->block << " B, span " << plan->span << " B, steering "
        << f.steering << (plan->down ? StrCat(", node ", f.degraded, " down") : std::string())
        << ", " << std::fixed << std::setprecision(2) << r.seconds << " s";
  PrintResult(title.str(), r, s);

  nlohmann::json doc;
  doc["benchmark"] = "volume";
  doc["configuration"] = VolumeConfigJson(f, *plan, volume, options);
  doc["results"] = VolumeResultJson(r, s);
  if (Status st = bench::WriteJsonFile(doc, f.json); !st.ok()) return ReportFailure(st);
  std::cerr << "rampart: results written to " << f.json << "\n";
  return r.errors == 0 ? kExitOk : kExitFailure;
}

}  // namespace

void RegisterBenchVolumeCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* bench = app.get_subcommand("bench");  // throws if RegisterBenchCommands did not run
  auto f = std::make_shared<VolumeFlags>();
  CLI::App* cmd = bench->add_subcommand(
      "volume",
      "Seed 002: reads (or writes) of one block size over an erasure-coded volume of the "
      "configuration for --seconds, healthy, degraded (--degraded NODE_ID) or with hot-node "
      "steering off; prints MB/s, calls/s, latency p50/p99 and the healthy/degraded/steered "
      "read counts and writes JSON");
  cmd->add_option("NAME", f->name, "The volume ([[volumes]] name)")->required();
  cmd->add_option("--op", f->op, "read or write")
      ->check(CLI::IsMember({"read", "write"}))
      ->capture_default_str();
  cmd->add_option("--pattern", f->pattern, "sequential or random block offsets")
      ->check(CLI::IsMember({"sequential", "random"}))
      ->capture_default_str();
  cmd->add_option("--block-size", f->block_size,
                  "Bytes per call (e.g. 64KiB, 1MiB). Default: 16 whole stripes "
                  "(16 x k x cell_bytes); offsets are multiples of it");
  cmd->add_option("--span", f->span, "Bytes of the volume addressed, from 0. Default: all of it");
  cmd->add_option("--seconds", f->seconds, "How long to run")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  cmd->add_option("--degraded", f->degraded,
                  "Take this storage node (by id) out of service before measuring: its cells "
                  "are read by reconstruction")
      ->check(CLI::Range(0, 65535))
      ->type_name("NODE_ID");
  cmd->add_option("--steering", f->steering, "Hot-node steering, on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--start-at", f->start_at,
                  "Start measuring at this wall-clock time (Unix seconds), after opening the "
                  "volume, so that several processes measure the same interval")
      ->check(CLI::Range(0.0, 1e11))
      ->type_name("UNIX_S");
  cmd->add_option("--json", f->json, "Where to write the results as JSON")->capture_default_str();
  OnRunWithConfig(cmd, ctx,
                  [f](const ClusterConfig& config) { return RunVolumeBench(config, *f); });
}

}  // namespace rampart::cmd
