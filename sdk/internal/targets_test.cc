#include "sdk/internal/targets.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

using ::testing::ElementsAre;

TEST(TargetsTest, SplitsCommaListsButNotSchemeTargets) {
  EXPECT_THAT(SplitRegistryTargets("127.0.0.1:7101, 127.0.0.1:7111,"),
              ElementsAre("127.0.0.1:7101", "127.0.0.1:7111"));
  EXPECT_THAT(SplitRegistryTargets("ipv4:127.0.0.1:7101,127.0.0.1:7111"),
              ElementsAre("ipv4:127.0.0.1:7101,127.0.0.1:7111"));
  EXPECT_THAT(SplitRegistryTargets("dns:///registry:7101"), ElementsAre("dns:///registry:7101"));
  EXPECT_TRUE(SplitRegistryTargets(" ").empty());
}

TEST(TargetsTest, DispatcherTarget) {
  EXPECT_EQ(DispatcherChannelTarget("127.0.0.1:7102"), "127.0.0.1:7102");
  EXPECT_EQ(DispatcherChannelTarget("10.0.0.1:7102,10.0.0.2:7102"),
            "ipv4:10.0.0.1:7102,10.0.0.2:7102");
  EXPECT_EQ(DispatcherChannelTarget("dns:///d:7102"), "dns:///d:7102");
}

}  // namespace
}  // namespace jobwheel::sdk
