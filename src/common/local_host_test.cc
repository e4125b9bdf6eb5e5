#include "common/local_host.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace rampart {
namespace {

TEST(LocalHost, LoopbackIsLocal) {
  EXPECT_TRUE(IsLocalHost("127.0.0.1"));
  EXPECT_TRUE(IsLocalHost("127.0.0.2"));  // all of 127.0.0.0/8
  EXPECT_TRUE(IsLocalHost("localhost"));
}

TEST(LocalHost, EveryAddressOfAnInterfaceIsLocal) {
  auto addresses = LocalAddresses();
  ASSERT_TRUE(addresses.ok()) << addresses.status().ToString();
  EXPECT_NE(std::find(addresses->begin(), addresses->end(), "127.0.0.1"), addresses->end());
  for (const std::string& a : *addresses) EXPECT_TRUE(IsLocalHost(a)) << a;
}

TEST(LocalHost, SameHostComparesWhatNamesResolveTo) {
  EXPECT_TRUE(SameHost("10.1.2.3", "10.1.2.3"));
  EXPECT_TRUE(SameHost("localhost", "127.0.0.1"));
  EXPECT_FALSE(SameHost("10.1.2.3", "10.1.2.4"));
  EXPECT_FALSE(SameHost("no-such-host.invalid", "127.0.0.1"));
}

TEST(LocalHost, OtherAddressesAndUnresolvableNamesAreNot) {
  // TEST-NET-1 (RFC 5737): assigned to no machine.
  EXPECT_FALSE(IsLocalHost("192.0.2.1"));
  EXPECT_FALSE(IsLocalHost("no-such-host.invalid"));
  EXPECT_FALSE(IsLocalHost(""));
}

}  // namespace
}  // namespace rampart
