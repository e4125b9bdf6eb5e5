// rampart bench transport [--seconds S] [--path P]... [--json FILE]
// rampart bench transport-peer   (internal: the peer process it starts)
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "bench/transport_bench.h"
#include "cmd/commands.h"
#include "transport/config_options.h"

namespace rampart::cmd {

void RegisterBenchCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks; each prints a table and writes JSON");
  bench->require_subcommand(1);

  struct TransportFlags {
    double seconds = 1.0;
    std::vector<std::string> paths;
    std::string json = "transport-bench.json";
  };
  auto flags = std::make_shared<TransportFlags>();
  CLI::App* transport = bench->add_subcommand(
      "transport",
      "Round-trip latency (p50/p99) and ops/s with 1 and 16 in flight of one-sided reads and "
      "writes, two-sided request/reply and ring request/reply, against a peer process on this "
      "host; and seed 004's experiment (32 discrete 4 KiB buffers: one vectored transfer, 32 "
      "transfers, 32 transfers registering each buffer, the same with the registration cache)");
  transport->add_option("--seconds", flags->seconds, "Duration of each measurement")
      ->check(CLI::Range(0.01, 600.0))
      ->capture_default_str();
  transport->add_option("--path", flags->paths,
                        "Transport paths to measure (repeatable): ucx-shm, ucx-tcp, tcp. "
                        "Default: all")
      ->check(CLI::IsMember({"ucx-shm", "ucx-tcp", "tcp"}));
  transport->add_option("--json", flags->json, "Where to write the results as JSON")
      ->capture_default_str();
  OnRunWithConfig(transport, ctx, [flags](const ClusterConfig& config) {
    bench::TransportBenchOptions options;
    auto fabric = transport::FabricOptionsFromConfig(config);
    if (!fabric.ok()) return ReportUsageError(fabric.status());
    options.fabric = *fabric;
    options.duration = std::chrono::milliseconds(static_cast<int64_t>(flags->seconds * 1000));
    options.paths = flags->paths;
    auto results = bench::RunTransportBench(options);
    if (!results.ok()) return ReportFailure(results.status());
    bench::PrintTransportTable(*results, std::cout);
    if (Status st = bench::WriteTransportJson(*results, options, flags->json); !st.ok()) {
      return ReportFailure(st);
    }
    std::cerr << "rampart: results written to " << flags->json << "\n";
    return kExitOk;
  });

  struct PeerFlags {
    int report_fd = -1;
    int seconds = 60;
    std::string backend = "ucx", tls, net_devices = "lo";
  };
  auto peer = std::make_shared<PeerFlags>();
  CLI::App* peer_cmd = bench->add_subcommand(
      "transport-peer", "Internal: the peer process that `bench transport` starts");
  peer_cmd->group("");  // hidden from --help
  peer_cmd->add_option("--report-fd", peer->report_fd, "fd to write the listening port to")
      ->required();
  peer_cmd->add_option("--seconds", peer->seconds, "Exit after this long");
  peer_cmd->add_option("--backend", peer->backend)->check(CLI::IsMember({"ucx", "tcp"}));
  peer_cmd->add_option("--ucx-tls", peer->tls);
  peer_cmd->add_option("--ucx-net-devices", peer->net_devices);
  OnRunWithConfig(peer_cmd, ctx, [peer](const ClusterConfig& config) {
    auto fabric = transport::FabricOptionsFromConfig(config);
    if (!fabric.ok()) return ReportUsageError(fabric.status());
    transport::FabricOptions options = *fabric;
    options.backend = *transport::ParseBackend(peer->backend);
    options.ucx_transports = peer->tls;
    options.ucx_net_devices = peer->net_devices;
    return bench::RunTransportPeer(options, peer->report_fd, peer->seconds);
  });
}

}  // namespace rampart::cmd
