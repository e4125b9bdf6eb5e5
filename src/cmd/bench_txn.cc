// rampart bench txn [--transactions N] [--seconds T] [--txn-size S] [--read-ratio R]
//     [--keys K] [--value-size V] [--threads T] [--distribution uniform|zipfian]
//     [--isolation ramp|s2pl|none] [--transport tcp|ucx] [--get rpc|ring|read|auto]
//     [--put rpc|ring] [--json FILE]
//
// Seed 000's micro-benchmark against a running cluster (bench/txn_bench.h).
// Registered under the `bench` command that bench_transport.cc creates.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "bench/txn_bench.h"
#include "cmd/commands.h"

namespace rampart::cmd {

namespace {

struct TxnFlags {
  uint64_t transactions = 100'000;
  double seconds = 10;
  uint32_t txn_size = 4;
  double read_ratio = 0.5;
  uint64_t keys = 10'000;
  uint64_t value_size = 64;
  uint32_t threads = 1;
  std::string distribution = "uniform";
  ClientFlags client;
  uint32_t client_id_base = 1000;
  std::string json = "txn-bench.json";
};

void AddTxnFlags(CLI::App* cmd, TxnFlags& f) {
  cmd->add_option("--transactions", f.transactions, "Stop after this many transactions")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000'000}))
      ->capture_default_str();
  cmd->add_option("--seconds", f.seconds, "Stop after this long")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  cmd->add_option("--txn-size", f.txn_size, "Distinct keys per transaction")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  cmd->add_option("--read-ratio", f.read_ratio, "Fraction of read-only transactions")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--keys", f.keys, "Keys (loaded before the run)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}))
      ->capture_default_str();
  cmd->add_option("--value-size", f.value_size, "Bytes per written value")
      ->check(CLI::Range(uint64_t{0}, uint64_t{64} << 20))
      ->capture_default_str();
  cmd->add_option("--threads", f.threads, "Client threads, one txn::Client each")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  cmd->add_option("--distribution", f.distribution, "uniform or zipfian (theta 0.99)")
      ->check(CLI::IsMember({"uniform", "zipfian"}))
      ->capture_default_str();
  AddClientFlags(cmd, f.client);
  cmd->add_option("--client-id-base", f.client_id_base,
                  "Thread i uses client id base + i; the loader base + threads")
      ->check(CLI::Range(0u, 7000u))
      ->capture_default_str();
  cmd->add_option("--json", f.json, "Where to write the results as JSON")->capture_default_str();
}

int RunTxnBenchCommand(const ClusterConfig& config, const TxnFlags& f) {
  bench::TxnBenchOptions o;
  auto client = ClusterClientOptions(config, f.client);
  if (!client.ok()) return ReportUsageError(client.status());
  o.client = *client;
  o.cluster_name = config.name;
  o.transactions = f.transactions;
  o.duration = std::chrono::milliseconds(static_cast<int64_t>(f.seconds * 1000));
  o.txn_size = f.txn_size;
  o.read_ratio = f.read_ratio;
  o.keys = f.keys;
  o.value_size = f.value_size;
  o.threads = f.threads;
  o.zipfian = f.distribution == "zipfian";
  o.client_id_base = f.client_id_base;
  if (o.txn_size > o.keys) {
    return ReportUsageError(InvalidArgument("--txn-size (", o.txn_size,
                                            ") must not exceed --keys (", o.keys, ")"));
  }
  if (o.value_size > config.kv.max_value_bytes) {
    return ReportUsageError(InvalidArgument("--value-size exceeds kv.max_value_bytes (",
                                            config.kv.max_value_bytes, ")"));
  }
  auto result = bench::RunTxnBench(o);
  if (!result.ok()) return ReportFailure(result.status());
  bench::PrintTxnTable(*result, o, std::cout);
  if (Status st = bench::WriteTxnJson(*result, o, f.json); !st.ok()) return ReportFailure(st);
  std::cerr << "rampart: results written to " << f.json << "\n";
  return result->errors == 0 ? kExitOk : kExitFailure;
}

}  // namespace

void RegisterBenchTxnCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* bench = app.get_subcommand("bench");  // throws if RegisterBenchCommands did not run
  auto f = std::make_shared<TxnFlags>();
  CLI::App* cmd = bench->add_subcommand(
      "txn",
      "Seed 000's micro-benchmark against a running cluster: transactions of exactly S distinct "
      "keys, a fraction R reads, over K keys (uniform or zipfian 0.99), T client threads; "
      "prints txn/s, ops/s, latency p50/p99 and writes JSON");
  AddTxnFlags(cmd, *f);
  OnRunWithConfig(cmd, ctx, [f](const ClusterConfig& config) { return RunTxnBenchCommand(config, *f); });
}

}  // namespace rampart::cmd
