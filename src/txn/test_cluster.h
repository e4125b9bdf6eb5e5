// Test support: kv-nodes in the test's own process for the txn tests that
// need real nodes (one_sided_test.cc, batch_test.cc). Not part of the library.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "kv/node.h"
#include "kv/test_ports.h"
#include "transport/config_options.h"
#include "txn/client.h"

namespace rampart::txn {

// `n` kv-nodes of one partition each, in this process (ucx by default).
class LocalCluster {
 public:
  using Seconds = std::chrono::seconds;
  LocalCluster(int n, uint32_t grace_ms, std::string backend = "ucx",
               uint64_t arena_bytes = 16 << 20) {
    config_ = *ParseClusterConfig("", "txn_test");
    config_.transport.backend = std::move(backend);
    config_.kv.partitions_per_node = 1;
    config_.kv.arena_bytes = arena_bytes;
    config_.kv.grace_ms = grace_ms;
    // Every probe stays bound until all ports are drawn: a port released at
    // once can be drawn again for the next node (it was, in CI: node 1 could
    // not listen, and partition 1's requests reached node 0).
    std::deque<kv::BoundSocket> probes;
    for (int i = 0; i < n; ++i) {
      const uint16_t port = probes.emplace_back(0).port();
      config_.nodes.push_back(NodeConfig{static_cast<uint32_t>(i), "127.0.0.1", port});
    }
    probes.clear();
    config_.nodes.erase(config_.nodes.begin(), config_.nodes.end() - n);  // drop the defaults
    nodes_.resize(n);
    for (int i = 0; i < n; ++i) StartFirst(i);
  }

  // Starts node i for the first time. Its port may have been taken since it
  // was drawn: UCX binds ephemeral ports for the interfaces of the nodes
  // started before it (it was, in CI: "bind ... Address already in use").
  // No client knows the port yet, so another is drawn, a few times at most.
  void StartFirst(int i) {
    for (int attempt = 1;; ++attempt) {
      auto node = kv::KvNode::Start(config_, static_cast<uint32_t>(i));
      if (node.ok()) {
        nodes_[i] = std::move(*node);
        return;
      }
      const bool taken = node.status().message().find("listen") != std::string_view::npos;
      if (!taken || attempt == 5) {
        ASSERT_TRUE(node.ok()) << node.status().ToString();
        return;
      }
      config_.nodes[i].port = kv::BoundSocket(0).port();
    }
  }

  void Stop(int i) { nodes_[i].reset(); }
  void Restart(int i) {
    auto node = kv::KvNode::Start(config_, static_cast<uint32_t>(i));
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    nodes_[i] = std::move(*node);
  }

  ClientOptions Options(GetMode get, PutMode put, Isolation isolation = Isolation::kRamp) const {
    static std::atomic<uint32_t> next_client_id{1};
    ClientOptions o;
    o.nodes = config_.nodes;
    o.partitions_per_node = 1;
    o.fabric = *transport::FabricOptionsFromConfig(config_);
    o.channel.ring_bytes = 64 << 10;
    o.get_mode = get;
    o.put_mode = put;
    o.isolation = isolation;
    o.client_id = next_client_id++;
    o.request_timeout = Seconds(5);
    return o;
  }

  std::unique_ptr<Client> Connect(GetMode get, PutMode put,
                                  Isolation isolation = Isolation::kRamp) const {
    auto c = Client::Connect(Options(get, put, isolation));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

 private:
  ClusterConfig config_;
  std::vector<std::unique_ptr<kv::KvNode>> nodes_;
};

}  // namespace rampart::txn
