#include "common/grpc/target_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(TargetListTest, SchemesAreRecognised) {
  EXPECT_TRUE(HasScheme("dns:///registry:7101"));
  EXPECT_TRUE(HasScheme("ipv4:10.0.0.1:1,10.0.0.2:1"));
  EXPECT_TRUE(HasScheme("unix:/run/x.sock"));
  EXPECT_FALSE(HasScheme("registry:7101"));
  EXPECT_FALSE(HasScheme("10.0.0.1:7101"));
}

TEST(TargetListTest, CommaListsAreSplitAndSchemeTargetsKeptWhole) {
  EXPECT_THAT(SplitTargets(" a:1 , ,b:2,"), ElementsAre("a:1", "b:2"));
  EXPECT_THAT(SplitTargets("dns:///r:1"), ElementsAre("dns:///r:1"));
  EXPECT_THAT(SplitTargets("ipv4:a:1,b:2"), ElementsAre("ipv4:a:1,b:2"));
  EXPECT_THAT(SplitTargets("   "), IsEmpty());
}

TEST(TargetListTest, OneChannelOverAListUsesTheIpv4Resolver) {
  EXPECT_EQ(ChannelTarget("127.0.0.1:1, 127.0.0.1:2"), "ipv4:127.0.0.1:1,127.0.0.1:2");
  EXPECT_EQ(ChannelTarget("127.0.0.1:1"), "127.0.0.1:1");
  EXPECT_EQ(ChannelTarget("dns:///dispatcher:7102"), "dns:///dispatcher:7102");
  EXPECT_EQ(ChannelTarget("ipv4:a:1,b:2"), "ipv4:a:1,b:2");
}

}  // namespace
}  // namespace jobwheel
