#include "transport/config_options.h"

namespace rampart::transport {

FabricOptions FabricOptionsFromConfig(const ClusterConfig& cluster) {
  const TransportConfig& config = cluster.transport;
  FabricOptions o;
  const Result<Backend> backend = ParseBackend(config.backend);  // validated by the config
  o.backend = backend.ok() ? *backend : Backend::kUcx;
  o.max_message_size = config.max_message_size;
  o.spin = std::chrono::microseconds(EffectiveSpinMicros(cluster, UsableCores()));
  o.connect_timeout = std::chrono::milliseconds(config.connect_timeout_ms);
  o.ucx_net_devices = config.ucx.net_devices;
  o.ucx_transports = config.ucx.tls;
  o.registration_cache_bytes = config.registration_cache_bytes;
  return o;
}

ChannelOptions ChannelOptionsFromConfig(const TransportConfig& config) {
  return ChannelOptions{config.ring_bytes};
}

}  // namespace rampart::transport
