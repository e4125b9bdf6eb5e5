// rampart proxy: the Redis-protocol proxy (src/proxy) on [proxy] host:port,
// in front of the cluster file's kv-nodes, until SIGINT or SIGTERM.
#include <CLI/CLI.hpp>

#include <signal.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <thread>

#include "cmd/commands.h"
#include "common/timestamp.h"
#include "proxy/proxy.h"

namespace rampart::cmd {

void RegisterProxyCommand(CLI::App& app, CommandContext& ctx) {
  struct Flags {
    uint32_t client_id = 4000;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "proxy",
      "Serve the Redis protocol on the [proxy] host and port of the cluster file (RESP2/RESP3; "
      "redis-cli, redis-py, Jedis, redis-benchmark work unmodified) until SIGINT or SIGTERM. "
      "MSET/MGET and MULTI blocks are RAMP transactions; docs/proxy.md lists the commands.");
  cmd->add_option("--client-id", flags->client_id,
                  "Timestamp client id of the proxy (all its workers share it); unique among the "
                  "live clients and proxies of the cluster")
      ->check(CLI::Range(0u, static_cast<unsigned>(kMaxTimestampClientId)))
      ->default_val(4000);
  OnRunWithConfig(cmd, ctx, [flags](const ClusterConfig& config) {
    ClientFlags client_flags;
    client_flags.isolation = config.proxy.isolation == "none" ? "none" : "ramp";
    auto options = ClusterClientOptions(config, client_flags);
    if (!options.ok()) return ReportUsageError(options.status());
    options->client_id = flags->client_id;
    // Blocked before any thread starts, so only sigwait below receives them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that went away is an error on write, not a death

    auto proxy = proxy::Proxy::Start(config, *options);
    if (!proxy.ok()) return ReportFailure(proxy.status());
    int sig = 0;
    sigwait(&stop_signals, &sig);
    spdlog::info("proxy: {} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
    (*proxy)->Stop();
    (*proxy)->Wait();
    spdlog::info("proxy: stopped");
    return kExitOk;
  });
}

}  // namespace rampart::cmd
