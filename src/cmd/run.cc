// rampart run: a short transport self-check and benchmark on the configured
// cluster's transport settings, every path. (`make run` starts `rampart up`.)
#include <CLI/CLI.hpp>

#include <iostream>

#include "bench/transport_bench.h"
#include "cmd/commands.h"
#include "transport/config_options.h"

namespace rampart::cmd {

void RegisterRunCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* run = app.add_subcommand(
      "run",
      "Check the transport on this machine: start a peer process, exercise every path (ucx "
      "shared memory, ucx tcp, tcp) for 0.2 s each and print what each achieves");
  OnRunWithConfig(run, ctx, [](const ClusterConfig& config) {
    std::cout << "rampart: cluster \"" << config.name << "\", " << config.nodes.size()
              << " nodes configured, transport " << config.transport.backend
              << "; checking the transport.\n";
    bench::TransportBenchOptions options;
    auto fabric = transport::FabricOptionsFromConfig(config);
    if (!fabric.ok()) return ReportUsageError(fabric.status());
    options.fabric = *fabric;
    options.duration = std::chrono::milliseconds(200);
    auto results = bench::RunTransportBench(options);
    if (!results.ok()) return ReportFailure(results.status());
    bench::PrintTransportTable(*results, std::cout);
    std::cout << "rampart: transport OK. Full benchmark: rampart bench transport\n";
    return kExitOk;
  });
}

}  // namespace rampart::cmd
