// A benchmark peer in its own process (this binary exec'd as
// `rampart bench transport-peer`), killed by PID when the guard goes away.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace rampart::bench {

inline constexpr size_t kPeerRegionBytes = 1 << 20;

class PeerProcess {
 public:
  // Starts the peer with extra `args` and waits (up to 20 s) for its port.
  static Result<std::unique_ptr<PeerProcess>> Start(const std::string& self_exe,
                                                    const std::vector<std::string>& args);
  ~PeerProcess();  // SIGKILL and reap
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  uint16_t port() const { return port_; }

 private:
  PeerProcess() = default;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

}  // namespace rampart::bench
