// rampart check write | read: one transaction against a running cluster, for
// fault tests. `write --stop-after prepare|first-commit --hang` leaves the
// cluster as a client that died at that point and then waits to be killed
// (the kill -9 tests in tests/test_client_death.py).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "cmd/commands.h"
#include "txn/client.h"

namespace rampart::cmd {
namespace {

struct KeysFlags {
  std::vector<std::string> keys;
  std::string value;
  ClientFlags client;
  std::string stop_after = "never";
  bool hang = false;
  uint32_t client_id = 7100;
};

Result<std::unique_ptr<txn::Client>> ConnectClient(const ClusterConfig& config, const KeysFlags& f) {
  RAMPART_ASSIGN_OR_RETURN(txn::ClientOptions options,
                           ClusterClientOptions(config, f.client));
  options.client_id = f.client_id;
  using StopWrite = txn::ClientOptions::StopWrite;
  options.stop_write = f.stop_after == "prepare"        ? StopWrite::kAfterPrepare
                       : f.stop_after == "first-commit" ? StopWrite::kAfterFirstCommit
                                                        : StopWrite::kNever;
  return txn::Client::Connect(options);
}

void AddCommonOptions(CLI::App* cmd, KeysFlags& f) {
  cmd->add_option("--keys", f.keys, "Keys of the transaction (comma-separated or repeated)")
      ->delimiter(',')
      ->required();
  AddClientFlags(cmd, f.client);
  cmd->add_option("--client-id", f.client_id, "Timestamp client id, unique among live clients")
      ->check(CLI::Range(0u, 8191u))
      ->capture_default_str();
}

}  // namespace

void RegisterKeysCheckCommands(CLI::App* check, CommandContext& ctx) {
  auto wf = std::make_shared<KeysFlags>();
  CLI::App* write = check->add_subcommand(
      "write", "Write one value to every key in one transaction; with --stop-after, stop the "
               "transaction part-way as a client that died there would");
  AddCommonOptions(write, *wf);
  write->add_option("--value", wf->value, "The value written to every key")->required();
  write->add_option("--stop-after", wf->stop_after,
                    "never, prepare (no COMMIT sent) or first-commit (COMMIT reaches one "
                    "partition only); ramp writes spanning partitions")
      ->check(CLI::IsMember({"never", "prepare", "first-commit"}))
      ->capture_default_str();
  write->add_flag("--hang", wf->hang,
                  "After a stopped write, print \"stopped\" and wait to be killed");
  OnRunWithConfig(write, ctx, [wf](const ClusterConfig& config) {
    auto client = ConnectClient(config, *wf);
    if (!client.ok()) return ReportFailure(client.status());
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& k : wf->keys) pairs.emplace_back(k, wf->value);
    Status st = (*client)->MultiPut(pairs);
    if (wf->stop_after != "never" && st.code() == StatusCode::kAborted) {
      std::printf("stopped: %s\n", std::string(st.message()).c_str());
      std::fflush(stdout);
      // Bounded: a test that forgot to kill us does not leave us forever.
      for (int i = 0; wf->hang && i < 600; ++i) std::this_thread::sleep_for(std::chrono::seconds(1));
      return kExitOk;
    }
    if (!st.ok()) return ReportFailure(st);
    std::printf("written\n");
    return kExitOk;
  });

  auto rf = std::make_shared<KeysFlags>();
  CLI::App* read = check->add_subcommand(
      "read", "Read the keys in one transaction and print key=value lines (<absent> if none)");
  AddCommonOptions(read, *rf);
  OnRunWithConfig(read, ctx, [rf](const ClusterConfig& config) {
    auto client = ConnectClient(config, *rf);
    if (!client.ok()) return ReportFailure(client.status());
    auto values = (*client)->MultiGet(rf->keys);
    if (!values.ok()) return ReportFailure(values.status());
    for (size_t i = 0; i < rf->keys.size(); ++i) {
      std::printf("%s=%s\n", rf->keys[i].c_str(),
                  (*values)[i] ? (*values)[i]->c_str() : "<absent>");
    }
    return kExitOk;
  });
}

}  // namespace rampart::cmd
