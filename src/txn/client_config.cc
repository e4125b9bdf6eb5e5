#include "txn/client_config.h"

#include "transport/config_options.h"

namespace rampart::txn {

Result<ClientOptions> ClientOptionsFromConfig(const ClusterConfig& config,
                                              std::string_view isolation, std::string_view get,
                                              std::string_view put, std::string_view transport) {
  ClientOptions options;
  options.nodes = config.nodes;
  options.partitions_per_node = config.kv.partitions_per_node;
  RAMPART_ASSIGN_OR_RETURN(options.fabric, transport::FabricOptionsFromConfig(config));
  options.channel = transport::ChannelOptionsFromConfig(config.transport);
  options.address_cache_entries = config.client.address_cache_entries;
  options.unreachable_after = std::chrono::milliseconds(config.client.unreachable_after_ms);
  if (!transport.empty()) {
    RAMPART_ASSIGN_OR_RETURN(options.fabric.backend, transport::ParseBackend(transport));
  }
  RAMPART_ASSIGN_OR_RETURN(options.isolation, ParseIsolation(isolation));
  RAMPART_ASSIGN_OR_RETURN(options.get_mode, ParseGetMode(get.empty() ? config.client.get : get));
  RAMPART_ASSIGN_OR_RETURN(options.put_mode, ParsePutMode(put.empty() ? config.client.put : put));
  if (options.fabric.backend != transport::Backend::kUcx &&
      (GetModeNeedsUcx(options.get_mode) || options.put_mode != PutMode::kRpc)) {
    return InvalidArgument("get mode ", GetModeName(options.get_mode), " and put mode ",
                           PutModeName(options.put_mode),
                           ": ring and read need the ucx transport (tcp has no one-sided "
                           "operations); use get rpc and put rpc with tcp");
  }
  return options;
}

}  // namespace rampart::txn
