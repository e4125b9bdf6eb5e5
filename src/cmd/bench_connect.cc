// rampart bench connect: what a connection to a kv-node or storage node
// costs — the transport's connect and the handshake (with a cluster secret,
// its proofs) — opened and closed one after another.
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "bench/bench_json.h"
#include "cmd/bench_common.h"
#include "cmd/commands.h"
#include "common/histogram.h"
#include "kv/placement.h"
#include "transport/config_options.h"

namespace rampart::cmd {
namespace {

struct ConnectFlags {
  int node = -1;
  int storage_node = -1;
  std::string address;
  std::string transport;
  uint32_t count = 200;
  std::string json = "connect-bench.json";
};

// host:port of the target the flags name.
Result<std::pair<std::string, uint16_t>> Target(const ClusterConfig& config,
                                                const ConnectFlags& f) {
  if ((f.node >= 0) + (f.storage_node >= 0) + !f.address.empty() != 1) {
    return InvalidArgument("give exactly one of --node, --storage-node and --address");
  }
  if (f.node >= 0) {
    const NodeConfig* n = config.FindNode(static_cast<uint32_t>(f.node));
    if (n == nullptr) return InvalidArgument("no node ", f.node, " in the cluster file");
    return std::make_pair(n->host, n->port);
  }
  if (f.storage_node >= 0) {
    const StorageNodeConfig* n = config.FindStorageNode(static_cast<uint32_t>(f.storage_node));
    if (n == nullptr) return InvalidArgument("no storage node ", f.storage_node, " in the cluster file");
    return std::make_pair(n->host, n->port);
  }
  const size_t colon = f.address.rfind(':');
  const int port = colon == std::string::npos ? 0 : std::atoi(f.address.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return InvalidArgument("--address wants HOST:PORT");
  return std::make_pair(f.address.substr(0, colon), static_cast<uint16_t>(port));
}

int RunConnectBench(const ClusterConfig& config, const ConnectFlags& f) {
  auto target = Target(config, f);
  if (!target.ok()) return ReportUsageError(target.status());
  auto options = transport::FabricOptionsFromConfig(config);
  if (!options.ok()) return ReportUsageError(options.status());
  if (!f.transport.empty()) {
    auto backend = transport::ParseBackend(f.transport);
    if (!backend.ok()) return ReportUsageError(backend.status());
    options->backend = *backend;
  }
  auto fabric = transport::Fabric::Create(*options);
  if (!fabric.ok()) return ReportFailure(fabric.status());
  const auto& [host, port] = *target;
  Histogram latency;
  RunResult r;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < f.count; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto ep = (*fabric)->Connect(host, port);
    const auto t1 = std::chrono::steady_clock::now();
    if (!ep.ok()) {
      if (r.errors++ == 0) r.first_error = ep.status().ToString();
      continue;
    }
    latency.Record(t1 - t0);
    ++r.ops;
    (*ep)->Close();
    (*fabric)->Progress();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.p50_ns = latency.Percentile(50);
  r.p99_ns = latency.Percentile(99);
  const bool secret = !options->cluster_secret.empty();
  PrintRow(StrCat("connect to ", host, ":", port, " over ", transport::BackendName(options->backend),
                  secret ? ", with the cluster secret" : ", no cluster secret",
                  " (ops = connections; p50/p99 of one connect + handshake)"),
           r);
  nlohmann::json doc;
  doc["benchmark"] = "connect";
  doc["configuration"] = {{"target", StrCat(host, ":", port)},
                          {"transport", std::string(transport::BackendName(options->backend))},
                          {"cluster_secret", secret},
                          {"count", f.count}};
  doc["results"] = ResultJson(r);
  doc["results"]["mean_ns"] = latency.Mean();
  if (Status st = bench::WriteJsonFile(doc, f.json); !st.ok()) return ReportFailure(st);
  return r.errors == 0 ? kExitOk : kExitFailure;
}

}  // namespace

void RegisterBenchConnectCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* bench = app.get_subcommand("bench");
  auto flags = std::make_shared<ConnectFlags>();
  CLI::App* cmd = bench->add_subcommand(
      "connect",
      "Open and close connections to a running kv-node partition or storage node, one after "
      "another: the transport's connect plus the handshake (with cluster.secret, both proofs); "
      "prints p50/p99 per connection and writes JSON");
  cmd->add_option("--node", flags->node, "A kv-node id of the cluster file (its first partition)");
  cmd->add_option("--storage-node", flags->storage_node, "A storage node id of the cluster file");
  cmd->add_option("--address", flags->address, "Or any HOST:PORT of one");
  cmd->add_option("--transport", flags->transport, "tcp or ucx. Default: transport.backend")
      ->check(CLI::IsMember({"tcp", "ucx"}));
  cmd->add_option("--count", flags->count, "Connections to open")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  cmd->add_option("--json", flags->json, "Where to write the results as JSON")->capture_default_str();
  OnRunWithConfig(cmd, ctx, [flags](const ClusterConfig& config) {
    return RunConnectBench(config, *flags);
  });
}

}  // namespace rampart::cmd
