// Opening a volume for a command (`rampart volume ...`, `rampart nbd
// --volume`), with errors a user can act on. Defined in volume.cc.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "storage/volume.h"

namespace rampart::cmd {

// storage::Volume::Open, on the calling thread (which then owns the volume),
// plus: NotFound for an unknown name lists the configured volumes; when the
// volume cannot run (two or more nodes down) the error names the storage
// nodes that do not accept connections. Logs what Open repaired (resynced
// stripes) and the nodes that are down.
//
// `exclusive` (for anything that may write, resync included): first locks
// the volume against other processes on this host until this one exits;
// FailedPrecondition, naming the holder's pid, when one has it open.
Result<std::unique_ptr<storage::Volume>> OpenVolume(const ClusterConfig& config,
                                                    const std::string& name,
                                                    const storage::VolumeOptions& options = {},
                                                    bool exclusive = true);

// The index in volume `name`'s node list of storage node `node_id`;
// InvalidArgument listing the volume's nodes when it is not one of them.
// (An unknown volume gives 0: OpenVolume reports that.)
Result<uint32_t> VolumeNodeIndex(const ClusterConfig& config, const std::string& name,
                                 int64_t node_id);

// volume.Rebuild(node_index) with a progress meter on stderr (a bar on a
// terminal, else a line every 5 s) and log lines at the start and the end.
// `between` runs between batches (a server answers its requests there);
// false stops the rebuild (Aborted, the node stays down).
Status RebuildNode(const ClusterConfig& config, const std::string& name, storage::Volume& volume,
                   uint32_t node_index, const std::function<bool()>& between);

// Exit for a failed OpenVolume: 2 for an unknown volume (a usage error),
// 1 otherwise.
int ReportOpenError(const Status& status);

}  // namespace rampart::cmd
