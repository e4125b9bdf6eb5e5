#include "bench/txn_bench.h"

#include "bench/bench_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <iomanip>
#include <mutex>
#include <ostream>
#include <random>
#include <thread>
#include <unordered_set>

#include "common/histogram.h"

namespace rampart::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string KeyName(uint64_t i) { return StrCat("txnb-", i); }

double Zeta(uint64_t n, double theta) {
  double sum = 0;
  for (uint64_t i = 1; i <= n; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
  return sum;
}

txn::ClientOptions MakeClientOptions(const TxnBenchOptions& o, uint32_t client_id) {
  txn::ClientOptions c = o.client;
  c.client_id = client_id;
  return c;
}

// Loads keys [0, K) in transactions of txn_size keys (one MultiPut each), so
// the loaded versions carry the workload's sibling lists, not longer ones
// (a RAMP read checks every sibling of every version it returns). Bounded by
// options.load_timeout.
Status LoadKeys(const TxnBenchOptions& o) {
  auto client = txn::Client::Connect(MakeClientOptions(o, o.client_id_base + o.threads));
  if (!client.ok()) return client.status();
  const std::string value(o.value_size, 'L');
  const auto deadline = Clock::now() + o.load_timeout;
  const uint64_t batch = std::max<uint64_t>(o.txn_size, 1);
  for (uint64_t first = 0; first < o.keys; first += batch) {
    if (Clock::now() > deadline) return TimedOut("loading ", o.keys, " keys took too long");
    std::vector<std::pair<std::string, std::string>> pairs;
    for (uint64_t i = first; i < std::min<uint64_t>(o.keys, first + batch); ++i) {
      pairs.emplace_back(KeyName(i), value);
    }
    RAMPART_RETURN_IF_ERROR((*client)->MultiPut(pairs));
  }
  return Status();
}

}  // namespace

ZipfianGenerator::ZipfianGenerator(uint64_t n, double theta) : n_(n), theta_(theta) {
  const double zeta2 = Zeta(2, theta);
  zetan_ = Zeta(n, theta);
  alpha_ = 1.0 / (1.0 - theta);
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zetan_);
  half_pow_theta_ = 1.0 + std::pow(0.5, theta);
}

uint64_t ZipfianGenerator::Next(double u) const {
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < half_pow_theta_) return n_ > 1 ? 1 : 0;
  const auto v = static_cast<uint64_t>(static_cast<double>(n_) *
                                       std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return std::min(v, n_ - 1);
}

Result<TxnBenchResult> RunTxnBench(const TxnBenchOptions& o) {
  if (o.txn_size == 0 || o.txn_size > o.keys) {
    return InvalidArgument("--txn-size must be 1..--keys (", o.keys, "), got ", o.txn_size);
  }
  if (o.threads == 0) return InvalidArgument("--threads must be at least 1");
  TxnBenchResult result;
  const auto load_start = Clock::now();
  if (Status st = LoadKeys(o); !st.ok()) {
    return Status(st.code(), StrCat("loading keys: ", st.message()));
  }
  result.load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();

  std::optional<ZipfianGenerator> zipf;
  if (o.zipfian) zipf.emplace(o.keys);

  std::atomic<uint64_t> claimed{0};
  std::atomic<bool> stop{false};
  std::mutex mu;  // guards the merge into `result` and the histograms below
  Histogram all, reads_h, writes_h;
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  const auto deadline = start + o.duration;
  for (uint32_t t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      Histogram h_all, h_read, h_write;
      TxnBenchResult local;
      auto client = txn::Client::Connect(MakeClientOptions(o, o.client_id_base + t));
      if (!client.ok()) {
        std::lock_guard lock(mu);
        ++result.errors;
        if (result.first_error.empty()) result.first_error = client.status().ToString();
        return;
      }
      std::mt19937_64 rng(0x5eed0000u + t);
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      std::uniform_int_distribution<uint64_t> uniform(0, o.keys - 1);
      const std::string value(o.value_size, static_cast<char>('a' + t % 26));
      std::vector<uint64_t> ids;
      std::unordered_set<uint64_t> seen;
      std::vector<std::string> keys;
      std::vector<std::pair<std::string, std::string>> pairs;
      std::string error;
      while (!stop.load(std::memory_order_relaxed)) {
        if (claimed.fetch_add(1) >= o.transactions || Clock::now() >= deadline) break;
        // Exactly txn_size distinct keys: draw until distinct; after many
        // collisions (tiny K with zipfian) take the next unused keys in order.
        ids.clear();
        seen.clear();
        for (uint32_t attempts = 0; ids.size() < o.txn_size && attempts < 100 * o.txn_size;
             ++attempts) {
          const uint64_t k = zipf ? zipf->Next(unit(rng)) : uniform(rng);
          if (seen.insert(k).second) ids.push_back(k);
        }
        for (uint64_t k = 0; ids.size() < o.txn_size; ++k) {
          if (seen.insert(k).second) ids.push_back(k);
        }
        const bool is_read = unit(rng) < o.read_ratio;
        // The request is built before the clock starts: only the
        // transaction itself is timed.
        if (is_read) {
          keys.clear();
          for (uint64_t k : ids) keys.push_back(KeyName(k));
        } else {
          pairs.clear();
          for (uint64_t k : ids) pairs.emplace_back(KeyName(k), value);
        }
        Status st;
        const auto t0 = Clock::now();
        if (is_read) {
          auto values = (*client)->MultiGet(keys);
          if (!values.ok()) st = values.status();
        } else {
          st = (*client)->MultiPut(pairs);
        }
        const auto elapsed = Clock::now() - t0;
        if (!st.ok()) {
          ++local.errors;
          if (error.empty()) error = st.ToString();
          continue;
        }
        h_all.Record(elapsed);
        ++local.transactions;
        if (is_read) {
          h_read.Record(elapsed);
          ++local.reads;
          local.read_ops += o.txn_size;
        } else {
          h_write.Record(elapsed);
          ++local.writes;
          local.write_ops += o.txn_size;
        }
      }
      std::lock_guard lock(mu);
      all.Merge(h_all);
      reads_h.Merge(h_read);
      writes_h.Merge(h_write);
      result.transactions += local.transactions;
      result.reads += local.reads;
      result.writes += local.writes;
      result.read_ops += local.read_ops;
      result.write_ops += local.write_ops;
      result.errors += local.errors;
      result.client += (*client)->stats();
      if (result.first_error.empty()) result.first_error = error;
    });
  }
  for (auto& th : threads) th.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.txn_per_sec = result.seconds > 0 ? result.transactions / result.seconds : 0;
  result.ops_per_sec = result.txn_per_sec * o.txn_size;
  result.p50_ns = all.Percentile(50);
  result.p99_ns = all.Percentile(99);
  result.read_p50_ns = reads_h.Percentile(50);
  result.read_p99_ns = reads_h.Percentile(99);
  result.write_p50_ns = writes_h.Percentile(50);
  result.write_p99_ns = writes_h.Percentile(99);
  return result;
}

void PrintTxnTable(const TxnBenchResult& r, const TxnBenchOptions& o, std::ostream& out) {
  out << "txn bench: cluster " << o.cluster_name << ", " << o.client.nodes.size()
      << " nodes x " << o.client.partitions_per_node << " partitions, isolation "
      << txn::IsolationName(o.client.isolation) << ", transport "
      << transport::BackendName(o.client.fabric.backend) << ", get "
      << txn::GetModeName(o.client.get_mode) << ", put " << txn::PutModeName(o.client.put_mode)
      << ", " << o.threads << " threads, txn size "
      << o.txn_size << ", read ratio " << o.read_ratio << ", " << o.keys << " keys ("
      << (o.zipfian ? "zipfian 0.99" : "uniform") << "), value " << o.value_size << " B\n";
  out << std::left << std::setw(8) << "type" << std::right << std::setw(12) << "txns"
      << std::setw(12) << "p50" << std::setw(12) << "p99" << "\n";
  auto row = [&](const char* type, uint64_t n, uint64_t p50, uint64_t p99) {
    out << std::left << std::setw(8) << type << std::right << std::setw(12) << n << std::setw(12)
        << FormatNanos(static_cast<double>(p50)) << std::setw(12)
        << FormatNanos(static_cast<double>(p99)) << "\n";
  };
  row("read", r.reads, r.read_p50_ns, r.read_p99_ns);
  row("write", r.writes, r.write_p50_ns, r.write_p99_ns);
  row("all", r.transactions, r.p50_ns, r.p99_ns);
  out << std::fixed << std::setprecision(0) << "txn/s " << r.txn_per_sec << "  ops/s "
      << r.ops_per_sec << std::setprecision(2) << "  over " << r.seconds << " s  (load "
      << r.load_seconds << " s)  errors " << r.errors << "  repair rounds " << r.client.repair_rounds
      << "\n";
  if (o.client.get_mode == txn::GetMode::kRead) {
    const txn::Client::Stats& c = r.client;
    out << "GET*: " << c.slot_reads << " slot reads accepted, " << c.slot_rejects
        << " refused, " << c.cache_misses << " cache misses (fallback rate "
        << std::setprecision(4) << c.slot_fallback_rate() << ")\n";
  }
  out.unsetf(std::ios::floatfield);
  if (!r.first_error.empty()) out << "first error: " << r.first_error << "\n";
}

Status WriteTxnJson(const TxnBenchResult& r, const TxnBenchOptions& o, const std::string& path) {
  nlohmann::json doc;
  doc["benchmark"] = "txn";
  doc["configuration"] = {
      {"cluster", o.cluster_name},
      {"nodes", o.client.nodes.size()},
      {"partitions_per_node", o.client.partitions_per_node},
      {"isolation", std::string(txn::IsolationName(o.client.isolation))},
      {"transport", std::string(transport::BackendName(o.client.fabric.backend))},
      {"ucx_tls", o.client.fabric.ucx_transports},
      {"get", std::string(txn::GetModeName(o.client.get_mode))},
      {"put", std::string(txn::PutModeName(o.client.put_mode))},
      {"transactions_bound", o.transactions},
      {"duration_bound_ms", o.duration.count()},
      {"txn_size", o.txn_size},
      {"read_ratio", o.read_ratio},
      {"keys", o.keys},
      {"value_size", o.value_size},
      {"client_threads", o.threads},
      {"distribution", o.zipfian ? "zipfian" : "uniform"},
      {"zipf_theta", o.zipfian ? 0.99 : 0.0},
      {"spin_us", o.client.fabric.spin.count()},
      {"cores", std::thread::hardware_concurrency()},
  };
  doc["results"] = {
      {"transactions", r.transactions}, {"reads", r.reads},
      {"writes", r.writes},             {"errors", r.errors},
      {"read_ops", r.read_ops},         {"write_ops", r.write_ops},
      {"seconds", r.seconds},           {"load_seconds", r.load_seconds},
      {"txn_per_sec", r.txn_per_sec},   {"ops_per_sec", r.ops_per_sec},
      {"p50_ns", r.p50_ns},             {"p99_ns", r.p99_ns},
      {"read_p50_ns", r.read_p50_ns},   {"read_p99_ns", r.read_p99_ns},
      {"write_p50_ns", r.write_p50_ns}, {"write_p99_ns", r.write_p99_ns},
      {"repair_rounds", r.client.repair_rounds},
      {"slot_reads", r.client.slot_reads},     {"slot_rejects", r.client.slot_rejects},
      {"cache_misses", r.client.cache_misses},
      {"first_error", r.first_error},
  };
  return WriteJsonFile(doc, path);
}

}  // namespace rampart::bench
