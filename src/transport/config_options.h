// FabricOptions and ChannelOptions from the cluster file's [transport] table.
#pragma once

#include "common/config.h"
#include "transport/transport.h"

namespace rampart::transport {

// REQUIRES: `config` was validated by LoadClusterConfig/ParseClusterConfig.
// transport.spin_us = "auto" becomes EffectiveSpinMicros on this machine's
// cores, transport.ucx.net_devices EffectiveNetDevices, and the cluster
// secret is read (cluster.secret_file: its errors, e.g. an unreadable file,
// are the ones returned; a file others may read is logged as a warning).
Result<FabricOptions> FabricOptionsFromConfig(const ClusterConfig& config);
ChannelOptions ChannelOptionsFromConfig(const TransportConfig& config);

}  // namespace rampart::transport
