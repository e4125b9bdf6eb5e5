// The peer process of `rampart bench transport` (see transport_bench.h) and
// the guard that starts it and always stops it by PID.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <chrono>

#include "bench/transport_bench.h"
#include "bench/transport_peer.h"

namespace rampart::bench {

using transport::Channel;
using transport::Endpoint;
using transport::Fabric;
using transport::IoSlice;

int RunTransportPeer(const transport::FabricOptions& options, int report_fd, int seconds) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  auto created = Fabric::Create(options);
  if (!created.ok()) {
    spdlog::error("transport peer: {}", created.status().ToString());
    return 1;
  }
  Fabric& fabric = **created;
  transport::MemoryRegion region;
  std::vector<std::byte> descriptor_reply = {std::byte{'D'}};
  if (fabric.backend() == transport::Backend::kUcx) {
    auto allocated = fabric.Allocate(kPeerRegionBytes);
    if (!allocated.ok()) {
      spdlog::error("transport peer: {}", allocated.status().ToString());
      return 1;
    }
    region = std::move(*allocated);
    auto descriptor = region.Descriptor();
    descriptor_reply.insert(descriptor_reply.end(), descriptor->begin(), descriptor->end());
  }
  std::vector<std::shared_ptr<Endpoint>> endpoints;
  std::vector<std::shared_ptr<Channel>> channels;
  fabric.SetAcceptHandler([&](std::shared_ptr<Endpoint> ep) { endpoints.push_back(std::move(ep)); });
  fabric.SetMessageHandler([&](const std::shared_ptr<Endpoint>& ep, std::span<const std::byte> m) {
    const bool wants_region = m.size() == 1 && m[0] == std::byte{'D'};
    auto reply = std::make_shared<std::vector<std::byte>>(
        wants_region ? descriptor_reply : std::vector<std::byte>(m.begin(), m.end()));
    IoSlice slice{reply->data(), reply->size()};
    Status st = ep->Send(std::span<const IoSlice>(&slice, 1), [reply](Status) {});
    if (!st.ok()) spdlog::debug("transport peer: reply: {}", st.ToString());
  });
  fabric.SetChannelHandler([&](std::shared_ptr<Channel> channel) {
    Channel* c = channel.get();
    channel->SetMessageHandler([c](std::span<const std::byte> m) {
      IoSlice slice{const_cast<std::byte*>(m.data()), m.size()};
      (void)c->Send(std::span<const IoSlice>(&slice, 1));
    });
    channels.push_back(std::move(channel));
  });
  if (Status st = fabric.Listen("127.0.0.1", 0); !st.ok()) {
    spdlog::error("transport peer: {}", st.ToString());
    return 1;
  }
  uint64_t port = fabric.listen_port();
  if (write(report_fd, &port, sizeof port) != sizeof port) return 1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) fabric.Wait(std::chrono::milliseconds(100));
  return 0;
}

PeerProcess::~PeerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

Result<std::unique_ptr<PeerProcess>> PeerProcess::Start(const std::string& self_exe,
                                                        const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return ErrnoStatus("pipe", errno);
  auto peer = std::unique_ptr<PeerProcess>(new PeerProcess());
  std::vector<std::string> argv_storage = {self_exe, "bench", "transport-peer", "--report-fd",
                                           std::to_string(fds[1])};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  peer->pid_ = fork();
  if (peer->pid_ < 0) return ErrnoStatus("fork", errno);
  if (peer->pid_ == 0) {
    close(fds[0]);
    std::vector<char*> argv;
    for (auto& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(self_exe.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  uint64_t port = 0;
  fd_set set;
  FD_ZERO(&set);
  FD_SET(fds[0], &set);
  timeval tv{20, 0};
  bool ready = select(fds[0] + 1, &set, nullptr, nullptr, &tv) > 0 &&
               read(fds[0], &port, sizeof port) == sizeof port;
  close(fds[0]);
  if (!ready) return Unavailable("the benchmark peer did not start (see its log above)");
  peer->port_ = static_cast<uint16_t>(port);
  return peer;
}

}  // namespace rampart::bench
