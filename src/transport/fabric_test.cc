// Backend-independent behaviour of the Fabric: waking a blocked Wait from
// another thread or through a source's fd, and bad options.
#include <sys/eventfd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

#include "transport/transport.h"

namespace rampart::transport {
namespace {

using namespace std::chrono_literals;

class FabricTest : public ::testing::TestWithParam<Backend> {};

TEST_P(FabricTest, NotifyFromAnotherThreadEndsABlockedWait) {
  FabricOptions options;
  options.backend = GetParam();
  auto fabric = Fabric::Create(options);
  ASSERT_TRUE(fabric.ok()) << fabric.status().ToString();
  // Nothing else can end this Wait before its 30 s timeout: a return value of
  // 0 would mean it timed out, i.e. Notify did not wake it.
  std::thread notifier([&] {
    std::this_thread::sleep_for(50ms);
    (*fabric)->Notify();
  });
  int events = (*fabric)->Wait(30s);
  notifier.join();
  EXPECT_EQ(events, 1);
}

TEST_P(FabricTest, WaitWithNothingToDoTimesOut) {
  FabricOptions options;
  options.backend = GetParam();
  auto fabric = Fabric::Create(options);
  ASSERT_TRUE(fabric.ok());
  EXPECT_EQ((*fabric)->Wait(20ms), 0);
}

// A source's fd ends a blocked Wait, whose Progress then runs the source's
// poll; after RemoveSource neither happens.
TEST_P(FabricTest, ASourceFdEndsABlockedWaitAndItsPollRuns) {
  FabricOptions options;
  options.backend = GetParam();
  auto fabric = Fabric::Create(options);
  ASSERT_TRUE(fabric.ok()) << fabric.status().ToString();
  const int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  int polled = 0;  // events the source handled: what it read from its fd
  auto id = (*fabric)->AddSource(efd, [&] {
    uint64_t v = 0;
    if (read(efd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return 0;
    polled += static_cast<int>(v);
    return static_cast<int>(v);
  });
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    uint64_t three = 3;
    ASSERT_EQ(write(efd, &three, sizeof three), static_cast<ssize_t>(sizeof three));
  });
  // Only the eventfd can end this Wait before 30 s, and only its poll makes 3.
  const int events = (*fabric)->Wait(30s);
  writer.join();
  EXPECT_EQ(events, 3);
  EXPECT_EQ(polled, 3);

  (*fabric)->RemoveSource(*id);
  uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  EXPECT_EQ((*fabric)->Wait(30ms), 0);  // neither woken by the fd nor polled
  EXPECT_EQ(polled, 3);
  close(efd);
}

TEST_P(FabricTest, AddSourceRefusesABadFd) {
  FabricOptions options;
  options.backend = GetParam();
  auto fabric = Fabric::Create(options);
  ASSERT_TRUE(fabric.ok());
  auto id = (*fabric)->AddSource(987654, [] { return 0; });
  EXPECT_FALSE(id.ok());
}

TEST(FabricOptionsTest, BadMaxMessageSizeIsRefused) {
  FabricOptions options;
  options.max_message_size = 0;
  EXPECT_EQ(Fabric::Create(options).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBackend("rdma").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseBackend("tcp"), Backend::kTcp);
}

INSTANTIATE_TEST_SUITE_P(Backends, FabricTest, ::testing::Values(Backend::kUcx, Backend::kTcp),
                         [](const auto& info) { return std::string(BackendName(info.param)); });

}  // namespace
}  // namespace rampart::transport
