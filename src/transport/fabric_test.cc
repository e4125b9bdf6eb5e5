// Backend-independent behaviour of the Fabric: waking a blocked Wait from
// another thread, and bad options.
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
