// The "echo" test peer, run in its own process by PeerProcess:
//   args: backend ("ucx"|"tcp"), UCX_TLS ("" for UCX's default), seconds to live
// It listens on 127.0.0.1 (port reported to the parent), and
//   - echoes every two-sided message, except: a message "D" is answered with
//     "D" + the descriptor of a 1 MiB region filled with PatternByte(i);
//   - accepts channels and echoes every channel message on the same channel;
//     the two-sided message "P" pauses reading every channel (records then
//     stay in the ring and no credit returns) and "R" resumes it.
// It exits 0 after `seconds`, so it never outlives a test that forgot it.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>

#include "transport/test_peer.h"
#include "transport/test_util.h"

namespace rampart::transport::testing {

FabricOptions PeerOptions(const std::string& backend, const std::string& tls) {
  FabricOptions o;
  o.backend = *ParseBackend(backend);
  o.ucx_transports = tls;
  o.spin = std::chrono::microseconds(20);
  return o;
}

RAMPART_TEST_PEER(echo) {
  if (args.size() != 3) return 2;
  auto fabric_or = Fabric::Create(PeerOptions(args[0], args[1]));
  if (!fabric_or.ok()) {
    spdlog::error("echo peer: {}", fabric_or.status().ToString());
    return 3;
  }
  Fabric& fabric = **fabric_or;
  MemoryRegion region;
  std::vector<std::byte> descriptor = {std::byte{'D'}};
  if (fabric.backend() == Backend::kUcx) {
    region = std::move(*fabric.Allocate(kPeerRegionBytes));
    for (size_t i = 0; i < kPeerRegionBytes; ++i) region.data()[i] = PatternByte(i);
    auto d = region.Descriptor();
    descriptor.insert(descriptor.end(), d->begin(), d->end());
  }
  std::vector<std::shared_ptr<Endpoint>> endpoints;
  std::vector<std::shared_ptr<Channel>> channels;
  fabric.SetAcceptHandler([&](std::shared_ptr<Endpoint> ep) { endpoints.push_back(ep); });
  auto echo_on = [](Channel* c) {
    c->SetMessageHandler([c](std::span<const std::byte> m) {
      IoSlice slice{const_cast<std::byte*>(m.data()), m.size()};
      Status st = c->Send(std::span<const IoSlice>(&slice, 1));
      if (!st.ok()) spdlog::warn("echo peer channel: {}", st.ToString());
    });
  };
  fabric.SetMessageHandler([&](const std::shared_ptr<Endpoint>& ep, std::span<const std::byte> m) {
    auto copy = std::make_shared<std::vector<std::byte>>(m.begin(), m.end());
    if (m.size() == 1 && m[0] == std::byte{'D'}) *copy = descriptor;
    if (m.size() == 1 && m[0] == std::byte{'P'}) {
      for (auto& c : channels) c->SetMessageHandler(nullptr);
    }
    if (m.size() == 1 && m[0] == std::byte{'R'}) {
      for (auto& c : channels) echo_on(c.get());
    }
    IoSlice slice{copy->data(), copy->size()};
    Status st = ep->Send(std::span<const IoSlice>(&slice, 1), [copy](Status) {});
    if (!st.ok()) spdlog::warn("echo peer: {}", st.ToString());
  });
  fabric.SetChannelHandler([&](std::shared_ptr<Channel> channel) {
    echo_on(channel.get());
    channels.push_back(std::move(channel));
  });
  if (Status st = fabric.Listen("127.0.0.1", 0); !st.ok()) {
    spdlog::error("echo peer: {}", st.ToString());
    return 4;
  }
  ReportToParent(report_fd, fabric.listen_port());
  // Long waits on purpose: only a real wake-up (a message, a doorbell) ends
  // them early, so a lost wake-up shows as a reply seconds late.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(std::stoi(args[2]));
  while (std::chrono::steady_clock::now() < until) fabric.Wait(std::chrono::seconds(3));
  return 0;
}

}  // namespace rampart::transport::testing
