// rampart check read-atomic [--isolation ramp|s2pl|none] [--transport tcp|ucx] [--writers W]
//     [--readers R] [--mixed M] [--keys K] [--set-size S] [--transactions N] [--seconds T]
//     [--expect-fractures]
//
// The read-atomic checker against a running cluster (docs/design.md §9). W writer
// threads each repeatedly pick S distinct keys out of K and MultiPut one
// transaction id ("w<thread>-<n>") to all of them; R reader threads MultiGet S
// random distinct keys and look for fractured reads; M mixed threads alternate
// the two with one client, each read being of the set it has just written
// (GET* then reads at addresses learnt from its own PREPAREs, while the other
// threads overwrite some of those keys). Every thread owns its own
// txn::Client (distinct client ids). Keys carry a per-run prefix, so a key
// never written in this run reads as absent ("initial").
//
// Fractured read. Writers publish, under one mutex, per transaction id its key
// set, `start` = the wall-clock millisecond (system_clock, the clock of the
// timestamps, common/timestamp.h) read before the MultiPut, and `end` = the
// millisecond read after it returned successfully. Y *precedes* X when
// end(Y) < start(X): Y's timestamp has a millisecond field <= end(Y) and X's
// one >= start(X), so ts(Y) < ts(X), and Y also finished before X began (the
// S2PL order); "initial" (absent) precedes everything. A read that returns
// key a = X and key b = Y != X is fractured when b is in keyset(X) and Y
// precedes X: the reader saw X at a but missed X's write of b, reading an
// older value instead (checked for every ordered pair, so symmetric).
// Ordering by a counter taken before the write would flag legal reads of two
// overlapping writes whose timestamps order the other way (two clients within
// one millisecond); this precedence never does, and still catches the
// fractures of `none`. (Assumes no client issues over 1024 timestamps per ms,
// so no timestamp runs ahead of the clock, and no backward clock step.)
//
// Exit: 0 when fractured == 0 and errors == 0 (with --expect-fractures: when
// fractured > 0 and errors == 0), 1 otherwise, 2 on bad flags.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cmd/commands.h"
#include "txn/client.h"

namespace rampart::cmd {
namespace {

using Clock = std::chrono::steady_clock;

struct CheckFlags {
  ClientFlags client;
  uint32_t writers = 2, readers = 2, mixed = 0;
  uint32_t keys = 16, set_size = 4;
  uint64_t transactions = 100'000;
  double seconds = 10;
  bool expect_fractures = false;
  uint32_t client_id_base = 100;
};

constexpr uint64_t kNotFinished = UINT64_MAX;

struct TxnInfo {
  uint64_t start = 0;
  uint64_t end = kNotFinished;  // kNotFinished until the MultiPut returned OK
  std::vector<uint32_t> keys;   // sorted key indices
};

// id → TxnInfo.
class TxnRegistry {
 public:
  void Begin(const std::string& id, std::vector<uint32_t> keys) {
    std::lock_guard lock(mu_);
    TxnInfo& info = txns_[id];
    info.start = NowMs();
    info.keys = std::move(keys);
  }
  void End(const std::string& id) {
    std::lock_guard lock(mu_);
    txns_[id].end = NowMs();
  }
  // Whether a read of `keys` (indices) returning `values` is fractured.
  bool Fractured(const std::vector<uint32_t>& keys,
                 const std::vector<std::optional<std::string>>& values, std::string* why) {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!values[i]) continue;
      auto x = txns_.find(*values[i]);
      if (x == txns_.end()) {
        *why = "unknown value \"" + *values[i] + "\"";
        return true;
      }
      for (size_t j = 0; j < keys.size(); ++j) {
        if (j == i || values[j] == values[i]) continue;
        if (!std::binary_search(x->second.keys.begin(), x->second.keys.end(), keys[j])) continue;
        uint64_t y_end = 0;  // initial: precedes everything
        if (values[j]) {
          auto y = txns_.find(*values[j]);
          if (y == txns_.end()) continue;  // reported when i reaches j
          y_end = y->second.end;
        }
        if (y_end != kNotFinished && (!values[j] || y_end < x->second.start)) {
          *why = "key " + std::to_string(keys[i]) + " = " + *values[i] + " but key " +
                 std::to_string(keys[j]) + " (in its write set) = " +
                 (values[j] ? *values[j] : std::string("<initial>")) + ", which finished in an earlier ms than " +
                 *values[i] + " began";
          return true;
        }
      }
    }
    return false;
  }

 private:
  static uint64_t NowMs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  }
  std::mutex mu_;
  std::unordered_map<std::string, TxnInfo> txns_;
};

// Draws s distinct keys out of k, uniformly: a partial Fisher-Yates shuffle
// of a permutation kept between draws (any permutation works as the start),
// so a draw costs O(s), not O(k). One per thread.
class KeyPicker {
 public:
  explicit KeyPicker(uint32_t k) : all_(k) { std::iota(all_.begin(), all_.end(), 0u); }
  std::vector<uint32_t> Pick(std::mt19937_64& rng, uint32_t s) {
    const uint32_t k = static_cast<uint32_t>(all_.size());
    for (uint32_t i = 0; i < s; ++i) {
      std::uniform_int_distribution<uint32_t> d(i, k - 1);
      std::swap(all_[i], all_[d(rng)]);
    }
    return std::vector<uint32_t>(all_.begin(), all_.begin() + s);
  }

 private:
  std::vector<uint32_t> all_;
};

// One run of the check: what its threads share, and their bodies. Writers,
// readers and mixed threads (a write, then a read, with one client: the way
// a proxy worker reads keys it has just written) each own a txn::Client.
// Thread-safety: the thread bodies run concurrently; counters are atomics,
// the registry and the notes take their own mutexes.
class ReadAtomicRun {
 public:
  ReadAtomicRun(const CheckFlags& f, txn::ClientOptions base)
      : f_(f),
        base_(std::move(base)),
        prefix_(StrCat("ra-", std::to_string(std::random_device{}()), "-")),
        start_(Clock::now()),
        deadline_(start_ + std::chrono::milliseconds(static_cast<int64_t>(f.seconds * 1000))) {}

  // Runs every thread to the end (transactions or seconds).
  void Run() {
    std::vector<std::thread> threads;
    uint32_t index = 0;
    for (uint32_t w = 0; w < f_.writers; ++w, ++index) {
      threads.emplace_back([this, index] { Thread(index, /*write=*/true, /*read=*/false); });
    }
    for (uint32_t r = 0; r < f_.readers; ++r, ++index) {
      threads.emplace_back([this, index] { Thread(index, /*write=*/false, /*read=*/true); });
    }
    for (uint32_t m = 0; m < f_.mixed; ++m, ++index) {
      threads.emplace_back([this, index] { Thread(index, /*write=*/true, /*read=*/true); });
    }
    for (auto& t : threads) t.join();
  }

  // Prints the summary; returns the exit code.
  int Report(const ClusterConfig& config) const;

 private:
  // Thread `index` (client id base + index): writes, reads, or alternates.
  void Thread(uint32_t index, bool write, bool read) {
    txn::ClientOptions options = base_;
    options.client_id = f_.client_id_base + index;
    auto client = txn::Client::Connect(options);
    if (!client.ok()) {
      ++errors_;
      Note(first_error_, client.status().ToString());
      return;
    }
    std::random_device seed;
    std::mt19937_64 rng(seed() ^ (uint64_t{index} << 32));
    KeyPicker picker(f_.keys);
    std::vector<uint32_t> written;  // a mixed thread's last write set
    for (uint64_t n = 0; Claim(); ++n) {
      if (write && (!read || n % 2 == 0)) {
        written = picker.Pick(rng, f_.set_size);
        WriteOnce(**client, StrCat("w", index, "-", n), written);
      } else {
        ReadOnce(**client, write ? written : picker.Pick(rng, f_.set_size));
      }
    }
    if (!read) return;
    std::lock_guard lock(report_mu_);
    readers_stats_ += (*client)->stats();
  }

  // MultiPut of transaction id `id` to `keys`.
  void WriteOnce(txn::Client& client, const std::string& id, std::vector<uint32_t> keys) {
    std::sort(keys.begin(), keys.end());
    std::vector<std::pair<std::string, std::string>> pairs;
    for (uint32_t k : keys) pairs.emplace_back(KeyName(k), id);
    registry_.Begin(id, std::move(keys));
    if (Status st = client.MultiPut(pairs); st.ok()) {
      registry_.End(id);
      ++writes_;
    } else {
      ++errors_;
      Note(first_error_, st.ToString());
    }
  }

  // MultiGet of `keys`, checked for a fractured read.
  void ReadOnce(txn::Client& client, const std::vector<uint32_t>& keys) {
    std::vector<std::string> names;
    for (uint32_t k : keys) names.push_back(KeyName(k));
    auto values = client.MultiGet(names);
    if (!values.ok() && values.status().code() == StatusCode::kAborted) {
      ++retried_;  // a repair read found its version reclaimed: read again
      return;
    }
    if (!values.ok()) {
      ++errors_;
      Note(first_error_, values.status().ToString());
      return;
    }
    ++reads_;
    std::string why;
    if (registry_.Fractured(keys, *values, &why)) {
      ++fractured_;
      Note(first_fracture_, why);
    }
  }

  bool Claim() {
    return claimed_.fetch_add(1) < f_.transactions && Clock::now() < deadline_;
  }
  // Per-run key prefix: keys this run did not write yet read as absent.
  std::string KeyName(uint32_t i) const { return prefix_ + std::to_string(i); }
  void Note(std::string& slot, const std::string& what) {
    std::lock_guard lock(report_mu_);
    if (slot.empty()) slot = what;
  }

  const CheckFlags& f_;
  const txn::ClientOptions base_;
  const std::string prefix_;
  const Clock::time_point start_, deadline_;
  TxnRegistry registry_;
  std::atomic<uint64_t> claimed_{0}, writes_{0}, reads_{0}, fractured_{0}, errors_{0};
  // Reads retried because a version they needed was reclaimed (short grace).
  std::atomic<uint64_t> retried_{0};
  mutable std::mutex report_mu_;
  txn::Client::Stats readers_stats_;  // GUARDED_BY(report_mu_): repairs, GET* counters
  std::string first_error_, first_fracture_;  // GUARDED_BY(report_mu_)
};

int ReadAtomicRun::Report(const ClusterConfig& config) const {
  std::lock_guard lock(report_mu_);
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  const uint64_t total = writes_ + reads_;
  const std::string transport_name(transport::BackendName(base_.fabric.backend));
  std::printf(
      "read-atomic check: isolation %s, transport %s, get %s, put %s, %zu nodes x %u "
      "partitions, %u writers, %u readers, %u mixed, %u keys, set size %u\n",
      f_.client.isolation.c_str(), transport_name.c_str(),
      std::string(txn::GetModeName(base_.get_mode)).c_str(),
      std::string(txn::PutModeName(base_.put_mode)).c_str(), config.nodes.size(),
      config.kv.partitions_per_node, f_.writers, f_.readers, f_.mixed, f_.keys, f_.set_size);
  std::printf(
      "writes %llu  reads %llu  fractured %llu  errors %llu  repair rounds %llu  txn/s %.0f  "
      "(%.2f s)\n",
      static_cast<unsigned long long>(writes_.load()), static_cast<unsigned long long>(reads_.load()),
      static_cast<unsigned long long>(fractured_.load()),
      static_cast<unsigned long long>(errors_.load()),
      static_cast<unsigned long long>(readers_stats_.repair_rounds),
      seconds > 0 ? total / seconds : 0.0, seconds);
  if (base_.get_mode == txn::GetMode::kRead) {
    std::printf("GET*: slot reads %llu  refused %llu  cache misses %llu\n",
                static_cast<unsigned long long>(readers_stats_.slot_reads),
                static_cast<unsigned long long>(readers_stats_.slot_rejects),
                static_cast<unsigned long long>(readers_stats_.cache_misses));
  }
  if (retried_ > 0) {
    std::printf("reads retried (a version was reclaimed before the repair read): %llu\n",
                static_cast<unsigned long long>(retried_.load()));
  }
  if (!first_fracture_.empty()) std::printf("first fractured read: %s\n", first_fracture_.c_str());
  if (!first_error_.empty()) std::printf("first error: %s\n", first_error_.c_str());
  const bool pass = errors_ == 0 && (f_.expect_fractures ? fractured_ > 0 : fractured_ == 0);
  std::printf("%s\n", pass ? "PASS" : "FAIL");
  return pass ? kExitOk : kExitFailure;
}

int RunReadAtomicCheck(const ClusterConfig& config, const CheckFlags& f) {
  auto base = ClusterClientOptions(config, f.client);
  if (!base.ok()) return ReportUsageError(base.status());
  if (f.set_size > f.keys) {
    return ReportUsageError(
        InvalidArgument("--set-size (", f.set_size, ") must not exceed --keys (", f.keys, ")"));
  }
  if (f.readers + f.mixed == 0) {
    return ReportUsageError(
        InvalidArgument("nothing would read: give --readers or --mixed at least 1"));
  }
  ReadAtomicRun run(f, std::move(*base));
  run.Run();
  return run.Report(config);
}

}  // namespace

void RegisterCheckCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* check = app.add_subcommand("check", "Correctness checks against a running cluster");
  check->require_subcommand(1);
  auto f = std::make_shared<CheckFlags>();
  CLI::App* ra = check->add_subcommand(
      "read-atomic",
      "Writers write one transaction id to whole random key sets, readers MultiGet random key "
      "sets and count fractured reads; exit 0 when none (and no errors)");
  AddClientFlags(ra, f->client);
  ra->add_option("--writers", f->writers, "Writer threads")
      ->check(CLI::Range(0u, 256u))
      ->capture_default_str();
  ra->add_option("--readers", f->readers, "Reader threads")
      ->check(CLI::Range(0u, 256u))
      ->capture_default_str();
  ra->add_option("--mixed", f->mixed,
                 "Threads that alternate a write and a read of the keys just written, with one "
                 "client (a client reading its own writes, as a proxy worker does)")
      ->check(CLI::Range(0u, 256u))
      ->capture_default_str();
  ra->add_option("--keys", f->keys, "Keys the sets are drawn from")
      ->check(CLI::Range(2u, 1u << 24))
      ->capture_default_str();
  ra->add_option("--set-size", f->set_size, "Distinct keys per write and per read")
      ->check(CLI::Range(2u, 1024u))
      ->capture_default_str();
  ra->add_option("--transactions", f->transactions, "Stop after this many (writes + reads)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000'000}))
      ->capture_default_str();
  ra->add_option("--seconds", f->seconds, "Stop after this long")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  ra->add_option("--client-id-base", f->client_id_base,
                 "Thread i uses client id base + i (unique among live clients)")
      ->check(CLI::Range(0u, 7000u))
      ->capture_default_str();
  ra->add_flag("--expect-fractures", f->expect_fractures,
               "Pass only if some read is fractured (shows the check is not vacuous, with none)");
  OnRunWithConfig(ra, ctx, [f](const ClusterConfig& config) {
    return RunReadAtomicCheck(config, *f);
  });
  RegisterKeysCheckCommands(check, ctx);
}

}  // namespace rampart::cmd
