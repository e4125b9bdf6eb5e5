// Tests of Volume: storage nodes in this process, each serving a file under
// /tmp (O_DIRECT where the filesystem takes it), and the ClusterConfig with
// one volume "v" over them. Nodes can be stopped and restarted on their port,
// with their file kept (a node that was away) or emptied (a replaced node).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/config.h"
#include "storage/node.h"
#include "storage/volume.h"

namespace rampart::storage::testing {

struct ClusterShape {
  uint32_t nodes = 4;
  uint64_t cell_bytes = 4096;
  uint64_t size = 1u << 20;
  uint64_t node_offset = 0;
  uint32_t max_io_bytes = 256u << 10;
};

class TestCluster {
 public:
  explicit TestCluster(const ClusterShape& shape) : shape_(shape) {
    config_.transport.spin_us = 0;  // 2 cores: nodes and test block, never spin
    VolumeConfig v;
    v.name = "v";
    v.size = shape.size;
    v.cell_bytes = shape.cell_bytes;
    v.node_offset = shape.node_offset;
    for (uint32_t i = 0; i < shape.nodes; ++i) v.nodes.push_back(10 + i);
    const uint64_t device = (shape.node_offset + v.area_bytes() + 4095) / 4096 * 4096;
    for (uint32_t i = 0; i < shape.nodes; ++i) {
      char path[] = "/tmp/rampart_volume_XXXXXX";
      close(mkstemp(path));
      config_.storage_nodes.push_back(StorageNodeConfig{10 + i, "127.0.0.1", 0, path, device});
    }
    config_.volumes.push_back(v);
    nodes_.resize(shape.nodes);
    for (uint32_t i = 0; i < shape.nodes; ++i) {
      Status st = StartNode(i);
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
  }
  ~TestCluster() {
    for (auto& node : nodes_) {
      if (node) node->Stop();
    }
    for (const StorageNodeConfig& n : config_.storage_nodes) unlink(n.path.c_str());
  }

  const ClusterConfig& config() const { return config_; }

  // Node `index` of the volume (its position in the volume's node list).
  void StopNode(uint32_t index) {
    if (nodes_[index]) nodes_[index]->Stop();
    nodes_[index].reset();
  }
  // Starts node `index` again on its port; `wipe` empties its file first
  // (a replaced disk).
  Status StartNode(uint32_t index, bool wipe = false) {
    StorageNodeConfig& c = config_.storage_nodes[index];
    if (wipe && truncate(c.path.c_str(), 0) != 0) return ErrnoStatus("truncate", errno);
    StorageNodeOptions o;
    o.host = c.host;
    o.port = c.port;
    o.device.path = c.path;
    o.device.size = c.size;
    o.device.direct = true;
    o.engine_options.threads = 2;
    o.queue_depth = 32;
    o.max_io_bytes = shape_.max_io_bytes;
    o.staging_bytes = 4u << 20;
    o.fabric.spin = std::chrono::microseconds(0);
    RAMPART_ASSIGN_OR_RETURN(nodes_[index], StorageNode::Start(o));
    c.port = nodes_[index]->listen_port();
    return Status::Ok();
  }

  Result<std::unique_ptr<Volume>> Open(VolumeOptions o = {}) const {
    o.pool_bytes = 16u << 20;
    return Volume::Open(config_, "v", o);
  }

 private:
  ClusterShape shape_;
  ClusterConfig config_;
  std::vector<std::unique_ptr<StorageNode>> nodes_;
};

// Random bytes.
inline std::vector<std::byte> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

// Reads the whole volume and compares it with `model`; the first difference
// as a failure message, or "" when identical.
inline std::string CompareWhole(Volume& v, const std::vector<std::byte>& model) {
  std::vector<std::byte> got(model.size());
  Status st = v.Read(0, got);
  if (!st.ok()) return st.ToString();
  for (size_t i = 0; i < model.size(); ++i) {
    if (got[i] != model[i]) {
      return StrCat("first difference at volume byte ", i, " (stripe ",
                    i / v.layout().stripe_data_bytes(), ")");
    }
  }
  return "";
}

// A torn write of a persisted record: `block` with any one bit flipped at
// each of `positions` must decode (decode(block) -> Result<T>) as Corruption.
template <typename Decode>
void ExpectTornIsCorruption(const std::vector<std::byte>& block,
                            std::initializer_list<size_t> positions, std::byte flip,
                            Decode decode) {
  for (size_t at : positions) {
    std::vector<std::byte> torn = block;
    torn[at] ^= flip;
    EXPECT_EQ(decode(torn).status().code(), StatusCode::kCorruption) << at;
  }
}

}  // namespace rampart::storage::testing
