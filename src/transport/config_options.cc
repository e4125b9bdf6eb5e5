#include "transport/config_options.h"

#include <spdlog/spdlog.h>

namespace rampart::transport {

Result<FabricOptions> FabricOptionsFromConfig(const ClusterConfig& cluster) {
  const TransportConfig& config = cluster.transport;
  FabricOptions o;
  RAMPART_ASSIGN_OR_RETURN(ClusterSecret secret, ReadClusterSecret(cluster));
  if (!secret.warning.empty()) spdlog::warn("{}", secret.warning);
  o.cluster_secret = std::move(secret.value);
  o.cluster_name = cluster.name;
  const Result<Backend> backend = ParseBackend(config.backend);  // validated by the config
  o.backend = backend.ok() ? *backend : Backend::kUcx;
  o.max_message_size = config.max_message_size;
  o.spin = std::chrono::microseconds(EffectiveSpinMicros(cluster, UsableCores()));
  o.connect_timeout = std::chrono::milliseconds(config.connect_timeout_ms);
  o.ucx_net_devices = EffectiveNetDevices(cluster);
  o.ucx_transports = config.ucx.tls;
  o.registration_cache_bytes = config.registration_cache_bytes;
  return o;
}

ChannelOptions ChannelOptionsFromConfig(const TransportConfig& config) {
  return ChannelOptions{config.ring_bytes};
}

}  // namespace rampart::transport
