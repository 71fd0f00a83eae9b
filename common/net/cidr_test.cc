#include "common/net/cidr.h"

#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

TEST(CidrTest, ContainsByPrefix) {
  const Cidr ten = *ParseCidr("10.0.0.0/8");
  EXPECT_TRUE(ten.Contains(*ParseIp("10.255.1.2")));
  EXPECT_FALSE(ten.Contains(*ParseIp("11.0.0.1")));
  EXPECT_FALSE(ten.Contains(*ParseIp("::ffff:11.0.0.1")));
  EXPECT_TRUE(ten.Contains(*ParseIp("::ffff:10.0.0.1")));  // Mapped is IPv4.
  const Cidr ula = *ParseCidr("fd00::/8");
  EXPECT_TRUE(ula.Contains(*ParseIp("fd12::5")));
  EXPECT_FALSE(ula.Contains(*ParseIp("fe80::1")));
  EXPECT_FALSE(ula.Contains(*ParseIp("10.0.0.1")));
  EXPECT_TRUE(ParseCidr("0.0.0.0/0")->Contains(*ParseIp("8.8.8.8")));
  const Cidr odd = *ParseCidr("192.168.1.0/23");
  EXPECT_TRUE(odd.Contains(*ParseIp("192.168.0.9")));
  EXPECT_FALSE(odd.Contains(*ParseIp("192.168.2.1")));
}

TEST(CidrTest, SingleAddresses) {
  EXPECT_TRUE(ParseCidr("169.254.169.254")->IsSingleAddress());
  EXPECT_TRUE(ParseCidr("169.254.169.254/32")->IsSingleAddress());
  EXPECT_TRUE(ParseCidr("::1/128")->IsSingleAddress());
  EXPECT_FALSE(ParseCidr("169.254.0.0/16")->IsSingleAddress());
  EXPECT_EQ(ParseCidr("169.254.0.0/16")->ToString(), "169.254.0.0/16");
}

TEST(CidrTest, BadBlocks) {
  for (const char* bad : {"", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "10.0.0.0/-1",
                          "host/8", "10.0.0/8"}) {
    EXPECT_FALSE(ParseCidr(bad).has_value()) << bad;
  }
}

TEST(CidrListTest, ListsAndErrorsNameTheFlag) {
  auto list = ParseCidrList(" 10.0.0.0/8, 127.0.0.1 ,fd00::/8", "--allow_cidrs");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->size(), 3u);
  EXPECT_TRUE(ParseCidrList("", "f")->empty());
  auto bad = ParseCidrList("10.0.0.0/8,nope", "--allow_cidrs");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--allow_cidrs: \"nope\""), std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace jobwheel::net
