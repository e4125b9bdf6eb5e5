// FabricOptions and ChannelOptions from the cluster file's [transport] table.
#pragma once

#include "common/config.h"
#include "transport/transport.h"

namespace rampart::transport {

// REQUIRES: `config` was validated by LoadClusterConfig/ParseClusterConfig.
FabricOptions FabricOptionsFromConfig(const TransportConfig& config);
ChannelOptions ChannelOptionsFromConfig(const TransportConfig& config);

}  // namespace rampart::transport
