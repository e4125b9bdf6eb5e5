// main() of transport_test: runs GoogleTest, or, when exec'd by PeerProcess
// (RAMPART_TEST_PEER set), the named peer role instead.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "transport/test_util.h"

int main(int argc, char** argv) {
  if (const char* role = std::getenv("RAMPART_TEST_PEER")) {
    auto& registry = rampart::transport::testing::PeerRegistry();
    auto it = registry.find(role);
    if (it == registry.end()) {
      std::fprintf(stderr, "unknown test peer role %s\n", role);
      return 127;
    }
    std::vector<std::string> args(argv + 1, argv + argc);
    int fd = std::atoi(std::getenv("RAMPART_TEST_PEER_FD"));
    return it->second(args, fd);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
