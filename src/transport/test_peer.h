// Test-side helpers around the echo peer (echo_peer_test.cc) and a client
// fabric that collects what arrives. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "transport/test_util.h"
#include "transport/transport.h"

namespace rampart::transport::testing {

inline constexpr size_t kPeerRegionBytes = 1 << 20;
inline std::byte PatternByte(size_t i) { return static_cast<std::byte>((i * 7) % 251); }

FabricOptions PeerOptions(const std::string& backend, const std::string& tls);

// A client fabric connected to a peer; received messages pile up in inbox.
struct TestClient {
  std::unique_ptr<Fabric> fabric;
  std::shared_ptr<Endpoint> ep;
  std::deque<std::vector<std::byte>> inbox;
  Status disconnect;  // set by the disconnect handler
  bool disconnected = false;

  // Progresses until pred() or `timeout`; returns pred().
  template <typename Pred>
  bool Await(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      fabric->Wait(std::chrono::milliseconds(20));
    }
    return true;
  }

  Status SendBytes(std::span<const std::byte> bytes) {
    IoSlice slice{const_cast<std::byte*>(bytes.data()), bytes.size()};
    bool done = false;
    Status result;
    Status st = ep->Send(std::span<const IoSlice>(&slice, 1), [&](Status s) {
      done = true;
      result = s;
    });
    if (!st.ok()) return st;
    if (!Await([&] { return done; })) return TimedOut("send");
    return result;
  }

  // Sends `request`, waits for one reply message.
  Result<std::vector<std::byte>> Call(std::span<const std::byte> request) {
    RAMPART_RETURN_IF_ERROR(SendBytes(request));
    if (!Await([&] { return !inbox.empty(); })) return TimedOut("no reply");
    auto reply = std::move(inbox.front());
    inbox.pop_front();
    return reply;
  }
};

inline Result<TestClient> ConnectClient(const FabricOptions& options, uint16_t port) {
  TestClient c;
  RAMPART_ASSIGN_OR_RETURN(c.fabric, Fabric::Create(options));
  RAMPART_ASSIGN_OR_RETURN(c.ep, c.fabric->Connect("127.0.0.1", port));
  return c;
}

// Wires handlers to a client living at a fixed address.
inline void AttachHandlers(TestClient& c) {
  c.fabric->SetMessageHandler([&c](const std::shared_ptr<Endpoint>&, std::span<const std::byte> m) {
    c.inbox.emplace_back(m.begin(), m.end());
  });
  c.fabric->SetDisconnectHandler([&c](const std::shared_ptr<Endpoint>&, Status why) {
    c.disconnected = true;
    c.disconnect = why;
  });
}

// A peer process plus a connected client; skips nothing: failures to start
// fail the test.
struct PeerAndClient {
  std::unique_ptr<PeerProcess> peer;
  std::unique_ptr<TestClient> client;
  uint16_t port = 0;
};

inline PeerAndClient StartEchoPeer(const std::string& backend, const std::string& tls,
                                   int seconds = 60) {
  PeerAndClient out;
  out.peer = std::make_unique<PeerProcess>("echo", std::vector<std::string>{backend, tls, std::to_string(seconds)});
  auto port = out.peer->ReadReport(std::chrono::seconds(20));
  EXPECT_TRUE(port.has_value()) << "echo peer did not start";
  if (!port) return out;
  out.port = static_cast<uint16_t>(*port);
  auto client = ConnectClient(PeerOptions(backend, tls), static_cast<uint16_t>(*port));
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  if (!client.ok()) return out;
  out.client = std::make_unique<TestClient>(std::move(*client));
  AttachHandlers(*out.client);
  return out;
}

}  // namespace rampart::transport::testing
