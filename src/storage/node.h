// StorageNode: serves one device (a file or RAM) to volume clients over the
// transport, with the storage protocol (storage/protocol.h, docs/storage.md).
//
//   auto node = StorageNode::Start(options);   // listening when it returns
//   ... (*node)->listen_port() ...
//   (*node)->Stop();
//
// One poll-loop thread owns a transport::Fabric: it accepts connections and
// the message channels clients open over them, decodes requests, checks them
// (HELLO first, range, alignment under O_DIRECT, max_io_bytes, the client
// pool's bounds), stages data in a registered buffer per connection and hands
// device IO to the IO engine (storage/io_engine.h). The loop spins for
// FabricOptions::spin and then blocks on the fabric's event fd; engines wake it
// through Fabric::Notify. A READ's reply is sent after the one-sided write of
// its data into the client's pool completed; a WRITE's after the device write.
// A bad request gets an error reply; the node keeps serving.
//
// Up to queue_depth requests per connection run at once and share its staging
// buffer; more wait in arrival order. Requests may complete out of order.
// FLUSH makes durable every WRITE whose reply arrived before it was sent.
//
// Thread-safety: Start, Stop and the accessors from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/config.h"
#include "common/status.h"
#include "storage/io_engine.h"
#include "transport/transport.h"

namespace rampart::storage {

struct StorageNodeOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any (see listen_port())
  DeviceOptions device;
  EngineKind engine = EngineKind::kAuto;
  EngineOptions engine_options;
  uint32_t block_bytes = 4096;           // power of two, 512..1MiB
  uint32_t queue_depth = 64;             // requests running at once per connection
  uint32_t max_io_bytes = 1u << 20;      // largest READ/WRITE
  uint64_t staging_bytes = 16u << 20;    // registered staging per connection
  transport::FabricOptions fabric;
  transport::ChannelOptions channel;
};

// The options the cluster file gives storage node `id`: [storage], its
// [[storage_nodes]] entry and [transport]. NotFound for an unknown id.
Result<StorageNodeOptions> StorageNodeOptionsFromConfig(const ClusterConfig& config, uint32_t id);

class StorageNode {
 public:
  // Opens the device, starts the poll loop and returns once it listens.
  static Result<std::unique_ptr<StorageNode>> Start(const StorageNodeOptions& options);

  StorageNode(const StorageNode&) = delete;
  StorageNode& operator=(const StorageNode&) = delete;
  ~StorageNode();  // Stop()s

  // Closes the connections, waits for IO in flight, joins. Idempotent.
  void Stop();

  uint16_t listen_port() const { return listen_port_; }
  // "file /x (O_DIRECT), 64MiB, engine threads (4 IO threads), blocks of 4KiB"
  const std::string& description() const { return description_; }

 private:
  struct Loop;
  StorageNode() = default;

  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::mutex stop_mu_;
  uint16_t listen_port_ = 0;
  std::string description_;
};

}  // namespace rampart::storage
