// The log volume of a kv-node (kv.log = "volume"): an erasure-coded volume
// of the storage tier that holds the redo logs of the node's partitions, one
// equal area each (docs/log_format.md, "Stores").
//
//   auto service = VolumeLogService::Open(config, "kvlog-0", /*areas=*/2);
//   std::unique_ptr<wal::ByteDevice> area = (*service)->Area(1);
//   auto store = wal::BlockStore::Open(std::move(area), segment_bytes);
//
// A storage::Volume belongs to the thread that opened it, so one thread owns
// it and runs every read, write and flush of every area; callers (the
// partition threads, the log syncer) block until their call ran there. The
// volume is opened exclusively (a second process on this host is refused).
//
// Thread-safety: Area, and every call of the devices it returns, from any
// thread. The devices must go before the service.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/config.h"
#include "common/status.h"
#include "storage/volume.h"
#include "wal/segment_store.h"

namespace rampart::cmd {

class VolumeLogService {
 public:
  // Opens `volume` on the service's thread (cmd::OpenVolume: exclusive, with
  // errors naming unreachable storage nodes) and divides it into `areas`.
  static Result<std::unique_ptr<VolumeLogService>> Open(const ClusterConfig& config,
                                                        const std::string& volume, uint32_t areas);
  ~VolumeLogService();  // flushes the volume and stops the thread

  VolumeLogService(const VolumeLogService&) = delete;
  VolumeLogService& operator=(const VolumeLogService&) = delete;

  // Area `index` (< areas) as a device. REQUIRES: the device goes before the service.
  std::unique_ptr<wal::ByteDevice> Area(uint32_t index);
  uint64_t area_bytes() const { return area_bytes_; }

  // Runs `op` on the volume's thread and returns its outcome.
  Status Call(const std::function<Status(storage::Volume&)>& op);

 private:
  VolumeLogService(std::string name) : name_(std::move(name)) {}
  void Run(const ClusterConfig& config);

  const std::string name_;
  uint64_t area_bytes_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void(storage::Volume&)>> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;                                         // GUARDED_BY(mu_)
  bool opened_ = false;                                       // GUARDED_BY(mu_)
  Status open_status_;                                        // GUARDED_BY(mu_)
  uint64_t volume_bytes_ = 0;                                 // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace rampart::cmd
