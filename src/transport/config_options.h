// FabricOptions and ChannelOptions from the cluster file's [transport] table.
#pragma once

#include "common/config.h"
#include "transport/transport.h"

namespace rampart::transport {

// REQUIRES: `config` was validated by LoadClusterConfig/ParseClusterConfig.
// transport.spin_us = "auto" becomes EffectiveSpinMicros on this machine's
// cores.
FabricOptions FabricOptionsFromConfig(const ClusterConfig& config);
ChannelOptions ChannelOptionsFromConfig(const TransportConfig& config);

}  // namespace rampart::transport
