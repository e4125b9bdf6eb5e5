// rampart proxy [--id N]: one Redis-protocol proxy (src/proxy) of the cluster
// file — the [proxy] host:port, or a [[proxies]] entry — in front of its
// kv-nodes, until SIGINT or SIGTERM.
#include <CLI/CLI.hpp>

#include <signal.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <thread>

#include "cmd/commands.h"
#include "common/local_host.h"
#include "common/timestamp.h"
#include "proxy/proxy.h"

namespace rampart::cmd {
namespace {

// The proxy process to be: the one with `id`, or without an id the only one,
// or the first whose host is this machine's.
Result<ProxyAddressConfig> ChooseProxy(const ClusterConfig& config, std::optional<uint32_t> id) {
  const std::vector<ProxyAddressConfig> proxies = config.ProxyProcesses();
  if (proxies.empty()) return InvalidArgument("proxy.enabled is false in the cluster file");
  std::string ids;
  for (const ProxyAddressConfig& p : proxies) {
    if (id && p.id == *id) return p;
    ids += (ids.empty() ? "" : ", ") + std::to_string(p.id);
  }
  if (id) return InvalidArgument("no proxy with id ", *id, " in the cluster file (ids: ", ids, ")");
  if (proxies.size() == 1) return proxies.front();
  for (const ProxyAddressConfig& p : proxies) {
    if (IsLocalHost(p.host)) return p;
  }
  return InvalidArgument("none of the cluster file's proxies (ids: ", ids,
                         ") has a host of this machine; give --id");
}

}  // namespace

void RegisterProxyCommand(CLI::App& app, CommandContext& ctx) {
  struct Flags {
    std::optional<uint32_t> id;
    std::optional<uint32_t> client_id;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "proxy",
      "Serve the Redis protocol on the [proxy] host and port of the cluster file, or those of "
      "its [[proxies]] entry --id (RESP2/RESP3; redis-cli, redis-py, Jedis, redis-benchmark "
      "work unmodified) until SIGINT or SIGTERM. MSET/MGET and MULTI blocks are RAMP "
      "transactions; docs/proxy.md lists the commands.");
  cmd->add_option("--id", flags->id,
                  "Which [[proxies]] entry to serve. Default: the only proxy, or the first whose "
                  "host is this machine's");
  cmd->add_option("--client-id", flags->client_id,
                  "Timestamp client id of the proxy (all its workers share it); unique among the "
                  "live clients and proxies of the cluster. Default: 4000 + the proxy's id")
      ->check(CLI::Range(0u, static_cast<unsigned>(kMaxTimestampClientId)));
  OnRunWithConfig(cmd, ctx, [flags](const ClusterConfig& config) {
    ClientFlags client_flags;
    client_flags.isolation = config.proxy.isolation == "none" ? "none" : "ramp";
    auto options = ClusterClientOptions(config, client_flags);
    if (!options.ok()) return ReportUsageError(options.status());
    auto where = ChooseProxy(config, flags->id);
    if (!where.ok()) return ReportUsageError(where.status());
    options->client_id = flags->client_id.value_or(kProxyClientIdBase + where->id);
    // Blocked before any thread starts, so only sigwait below receives them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that went away is an error on write, not a death

    auto proxy = proxy::Proxy::Start(config, *where, *options);
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
