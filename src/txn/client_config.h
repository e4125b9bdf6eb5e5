// ClientOptions for a cluster file: what every process that runs transaction
// clients against a configured cluster (the `rampart` commands, the JNI
// bridge of the YCSB binding) builds the same way.
//
//   auto config = LoadClusterConfig(path);
//   if (!config.ok()) return config.status();
//   RAMPART_ASSIGN_OR_RETURN(ClientOptions options,
//                            ClientOptionsFromConfig(*config, "ramp", "read", "ring", ""));
//   options.client_id = 7;
//   auto client = Client::Connect(options);
//
// Thread-safety: a pure function; call from any thread.
#pragma once

#include <string_view>

#include "common/config.h"
#include "common/status.h"
#include "txn/client.h"

namespace rampart::txn {

// The options of a client of `config`'s cluster: its nodes, partitions per
// node, [transport] (Fabric and message channels) and [client] settings, with
// these overrides:
//   isolation  "ramp" | "s2pl" | "none" (required; "" is an error)
//   get        "rpc" | "ring" | "read"; "" = [client] get
//   put        "rpc" | "ring";          "" = [client] put
//   transport  "tcp" | "ucx";           "" = [transport] backend
// client_id, timestamps, request_timeout and the rest keep their defaults.
// InvalidArgument for an unknown name, or for ring/read modes over tcp.
// REQUIRES: `config` was validated by LoadClusterConfig/ParseClusterConfig.
Result<ClientOptions> ClientOptionsFromConfig(const ClusterConfig& config,
                                              std::string_view isolation, std::string_view get,
                                              std::string_view put, std::string_view transport);

}  // namespace rampart::txn
