// `rampart bench transport`: round-trip latency and throughput of every
// transport path against a peer process on this host, and seed 004's
// discrete-buffer experiment. Prints a table, writes JSON.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/transport.h"

namespace rampart::bench {

struct TransportBenchOptions {
  // Base fabric settings (from the cluster file); backend and UCX_TLS are set
  // per measured path.
  transport::FabricOptions fabric;
  // How long each measurement runs. Default: 1 s.
  std::chrono::milliseconds duration{1000};
  // Upper bound on operations per measurement (bounded even on a fast path).
  uint64_t max_ops = 50'000'000;
  // Paths to measure: any of "ucx-shm", "ucx-tcp", "tcp". Empty: all.
  std::vector<std::string> paths;
  // Path of this binary, exec'd as the peer ("rampart bench transport-peer").
  std::string self_exe = "/proc/self/exe";
};

struct TransportBenchResult {
  std::string path;       // "ucx-shm", "ucx-tcp", "tcp"
  std::string operation;  // "read", "write", "message", "ring", "seed004-a", ...
  size_t bytes = 0;       // payload per operation
  int in_flight = 1;
  uint64_t ops = 0;
  double seconds = 0;
  double ops_per_sec = 0;
  uint64_t p50_ns = 0, p99_ns = 0;
};

// Runs the measurements; progress lines go to stderr.
Result<std::vector<TransportBenchResult>> RunTransportBench(const TransportBenchOptions& options);

void PrintTransportTable(const std::vector<TransportBenchResult>& results, std::ostream& out);
// JSON: {"benchmark": "transport", "configuration": {...}, "results": [...]}.
Status WriteTransportJson(const std::vector<TransportBenchResult>& results,
                          const TransportBenchOptions& options, const std::string& path);

// The peer process: listens on 127.0.0.1, echoes messages and channel
// messages, answers "D" with the descriptor of a 1 MiB region, reports its
// port on `report_fd`, and exits after `seconds` or when its parent dies.
int RunTransportPeer(const transport::FabricOptions& options, int report_fd, int seconds);

}  // namespace rampart::bench
