// rampart bench xor [--k K] [--block-size B] [--seconds T] [--json FILE]
//
// Seed 002's parity throughput: the XOR parity of K source blocks with ISA-L
// (storage::ComputeParity, xor_gen) against a plain loop over 8-byte words
// (storage::ComputeParityPlain) and against memcpy of the same sources, on
// one thread. The buffers are allocated once, 64-byte aligned, and reused, so
// they stay hot in cache as far as K x B fits. Throughput counts the source
// bytes read per second (K x B per operation), for memcpy too (K copies of B
// into one destination). Registered under `bench` (bench_transport.cc).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "bench/bench_json.h"
#include "cmd/commands.h"
#include "common/histogram.h"
#include "common/size.h"
#include "storage/parity.h"

namespace rampart::cmd {
namespace {

using Clock = std::chrono::steady_clock;

struct XorFlags {
  uint32_t k = 3;
  std::string block_size = "1MiB";
  double seconds = 1;
  std::string json = "xor-bench.json";
};

struct MethodResult {
  std::string method;
  uint64_t ops = 0;
  double seconds = 0;
  uint64_t source_bytes = 0;  // per op
  double gb_per_sec() const { return seconds > 0 ? ops * source_bytes / seconds / 1e9 : 0; }
  double ns_per_op() const { return ops > 0 ? seconds * 1e9 / ops : 0; }
};

using AlignedBuffer = std::unique_ptr<std::byte, decltype(&std::free)>;

AlignedBuffer Allocate(size_t bytes, std::mt19937_64& rng) {
  AlignedBuffer buf(static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)),
                    &std::free);
  for (size_t i = 0; i < bytes; ++i) buf.get()[i] = static_cast<std::byte>(rng());
  return buf;
}

// Runs `op` until `seconds` have passed (at least once, after one untimed
// warm-up call).
template <typename Op>
MethodResult Measure(std::string method, uint64_t source_bytes, double seconds, Op op) {
  MethodResult r{.method = std::move(method), .source_bytes = source_bytes};
  op();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  auto now = start;
  do {
    op();
    asm volatile("" ::: "memory");  // the stores of each op happen
    ++r.ops;
    now = Clock::now();
  } while (now < deadline);
  r.seconds = std::chrono::duration<double>(now - start).count();
  return r;
}

void PrintTable(const XorFlags& f, uint64_t block, const std::vector<MethodResult>& results) {
  std::cout << "xor bench: parity of k = " << f.k << " sources of " << FormatSize(block)
            << " (hot, 64-byte aligned), one thread, " << f.seconds << " s per method, "
            << std::thread::hardware_concurrency() << " cores\n"
            << std::left << std::setw(16) << "method" << std::right << std::setw(12) << "ops"
            << std::setw(10) << "GB/s" << std::setw(12) << "per op" << "\n";
  for (const MethodResult& r : results) {
    std::cout << std::left << std::setw(16) << r.method << std::right << std::setw(12) << r.ops
              << std::fixed << std::setprecision(2) << std::setw(10) << r.gb_per_sec()
              << std::setw(12) << FormatNanos(r.ns_per_op()) << "\n";
    std::cout.unsetf(std::ios::floatfield);
  }
}

nlohmann::json ResultsJson(const std::vector<MethodResult>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const MethodResult& r : results) {
    out.push_back({{"method", r.method},
                   {"ops", r.ops},
                   {"seconds", r.seconds},
                   {"source_bytes_per_op", r.source_bytes},
                   {"gb_per_sec", r.gb_per_sec()},
                   {"ns_per_op", r.ns_per_op()}});
  }
  return out;
}

int RunXorBench(const XorFlags& f) {
  Result<uint64_t> block = ParseSize(f.block_size);
  if (!block.ok() || *block == 0 || *block > kGiB) {
    return ReportUsageError(InvalidArgument("--block-size: expected a size from 1B to 1GiB"));
  }
  std::mt19937_64 rng(0x0b5e55ed);
  std::vector<AlignedBuffer> buffers;
  std::vector<storage::ConstBytes> sources;
  for (uint32_t i = 0; i < f.k; ++i) {
    buffers.push_back(Allocate(*block, rng));
    sources.emplace_back(buffers.back().get(), *block);
  }
  AlignedBuffer out_buffer = Allocate(*block, rng);
  const storage::MutableBytes out(out_buffer.get(), *block);

  const uint64_t source_bytes = f.k * *block;
  std::vector<MethodResult> results;
  Status failed;
  results.push_back(Measure("isa-l xor_gen", source_bytes, f.seconds, [&] {
    if (Status st = storage::ComputeParity(sources, out); !st.ok()) failed = st;
  }));
  if (Status st = storage::CheckParity(sources, out); !st.ok()) failed = st;
  results.push_back(Measure("plain loop", source_bytes, f.seconds, [&] {
    if (Status st = storage::ComputeParityPlain(sources, out); !st.ok()) failed = st;
  }));
  if (Status st = storage::CheckParity(sources, out); !st.ok()) failed = st;
  results.push_back(Measure("memcpy", source_bytes, f.seconds, [&] {
    for (const storage::ConstBytes& s : sources) std::memcpy(out.data(), s.data(), s.size());
  }));
  if (!failed.ok()) return ReportFailure(failed);

  PrintTable(f, *block, results);
  nlohmann::json doc;
  doc["benchmark"] = "xor";
  doc["configuration"] = {{"k", f.k},
                          {"block_bytes", *block},
                          {"seconds_per_method", f.seconds},
                          {"threads", 1},
                          {"buffers", "hot, 64-byte aligned, reused"},
                          {"cores", std::thread::hardware_concurrency()}};
  doc["results"] = ResultsJson(results);
  if (Status st = bench::WriteJsonFile(doc, f.json); !st.ok()) return ReportFailure(st);
  std::cerr << "rampart: results written to " << f.json << "\n";
  return kExitOk;
}

}  // namespace

void RegisterBenchXorCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* bench = app.get_subcommand("bench");  // throws if RegisterBenchCommands did not run
  auto f = std::make_shared<XorFlags>();
  CLI::App* xor_cmd = bench->add_subcommand(
      "xor",
      "Seed 002: XOR parity throughput of k sources, ISA-L xor_gen vs a plain loop vs memcpy, "
      "on one thread with hot buffers; prints GB/s of source data and writes JSON");
  xor_cmd->add_option("--k", f->k, "Source blocks (data cells) per parity")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  xor_cmd->add_option("--block-size", f->block_size, "Bytes per block (e.g. 16KiB, 1MiB)")
      ->capture_default_str();
  xor_cmd->add_option("--seconds", f->seconds, "How long each method runs")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  xor_cmd->add_option("--json", f->json, "Where to write the results as JSON")
      ->capture_default_str();
  OnRun(xor_cmd, ctx, [f] { return RunXorBench(*f); });
}

}  // namespace rampart::cmd
