#include "common/net/port_list.h"

#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

TEST(PortListTest, PortsRangesAndAny) {
  auto list = PortList::Parse("80, 443,8000-8099", "--allow_ports");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->Contains(80));
  EXPECT_TRUE(list->Contains(8050));
  EXPECT_FALSE(list->Contains(8100));
  EXPECT_FALSE(list->Contains(22));
  EXPECT_EQ(list->ToString(), "80,443,8000-8099");
  auto any = PortList::Parse("*", "f");
  EXPECT_TRUE(any->Contains(1));
  EXPECT_TRUE(any->Contains(65535));
  EXPECT_FALSE(any->Contains(0));
  EXPECT_EQ(any->ToString(), "*");
  EXPECT_FALSE(PortList().Contains(80));
  EXPECT_FALSE(PortList::Parse("", "f")->Contains(80));
}

TEST(PortListTest, ErrorsNameTheFlag) {
  for (const char* bad : {"0", "65536", "x", "90-80", "80-", "-80", "1-2-3"}) {
    auto r = PortList::Parse(bad, "--allow_ports");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("--allow_ports"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace jobwheel::net
