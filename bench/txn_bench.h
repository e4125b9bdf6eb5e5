// `rampart bench txn` (seed 000's micro-benchmark): transactions of exactly S
// distinct keys, a fraction R of them reads (MultiGet) and the rest writes
// (MultiPut), over K keys chosen uniformly or zipfian (YCSB, theta 0.99), by T
// client threads (one txn::Client each) against a running cluster. Loads the K
// keys first so reads find values. Prints a table, writes JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/status.h"
#include "txn/client.h"

namespace rampart::bench {

struct TxnBenchOptions {
  // Where partitions live and how to reach them: nodes, fabric, isolation,
  // get and put modes. Each thread's client gets its own client_id.
  txn::ClientOptions client;
  std::string cluster_name;       // for the JSON configuration

  uint64_t transactions = 100'000;            // upper bound over all threads
  std::chrono::milliseconds duration{10'000};  // upper bound
  uint32_t txn_size = 4;                      // exactly this many distinct keys
  double read_ratio = 0.5;                    // 0..1
  uint64_t keys = 10'000;                     // K
  uint64_t value_size = 64;                   // V bytes
  uint32_t threads = 1;                       // T
  bool zipfian = false;                       // else uniform
  uint32_t client_id_base = 1000;             // thread i uses client id base + i
  std::chrono::milliseconds load_timeout{120'000};  // bound on loading the K keys
};

struct TxnBenchResult {
  uint64_t transactions = 0, reads = 0, writes = 0, errors = 0;
  uint64_t read_ops = 0, write_ops = 0;
  double seconds = 0, load_seconds = 0;
  double txn_per_sec = 0, ops_per_sec = 0;
  uint64_t p50_ns = 0, p99_ns = 0;             // all transactions
  uint64_t read_p50_ns = 0, read_p99_ns = 0;
  uint64_t write_p50_ns = 0, write_p99_ns = 0;
  txn::Client::Stats client;  // summed over the threads' clients (repairs, GET* counters)
  std::string first_error;
};

// YCSB's zipfian generator over [0, n) with constant theta (Gray et al.).
class ZipfianGenerator {
 public:
  explicit ZipfianGenerator(uint64_t n, double theta = 0.99);
  // `u` uniform in [0, 1).
  uint64_t Next(double u) const;

 private:
  uint64_t n_;
  double theta_, alpha_, zetan_, eta_, half_pow_theta_;
};

Result<TxnBenchResult> RunTxnBench(const TxnBenchOptions& options);
void PrintTxnTable(const TxnBenchResult& result, const TxnBenchOptions& options,
                   std::ostream& out);
// JSON: {"benchmark": "txn", "configuration": {...}, "results": {...}}.
Status WriteTxnJson(const TxnBenchResult& result, const TxnBenchOptions& options,
                    const std::string& path);

}  // namespace rampart::bench
