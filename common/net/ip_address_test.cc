#include "common/net/ip_address.h"

#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

TEST(ParseIpTest, FormsAndNormalisation) {
  ASSERT_TRUE(ParseIp("10.0.0.5").has_value());
  EXPECT_FALSE(ParseIp("10.0.0.5")->v6);
  EXPECT_TRUE(ParseIp("[::1]")->v6);
  EXPECT_EQ(ParseIp("::ffff:10.0.0.5"), ParseIp("10.0.0.5"));
  EXPECT_EQ(ParseIp("fe80::1%eth0"), ParseIp("fe80::1"));
  EXPECT_FALSE(ParseIp("example.com").has_value());
  EXPECT_FALSE(ParseIp("").has_value());
  EXPECT_FALSE(ParseIp("[]").has_value());
}

TEST(ParseIpTest, LenientIpv4FormsAreNotIps) {
  for (const char* odd : {"10.0.0", "127.1", "0x7f.0.0.1", "2130706433", "017.0.0.1", " 1.2.3.4"}) {
    EXPECT_FALSE(ParseIp(odd).has_value()) << odd;
  }
}

TEST(IpToStringTest, CanonicalText) {
  EXPECT_EQ(IpToString(*ParseIp("10.0.0.5")), "10.0.0.5");
  EXPECT_EQ(IpToString(*ParseIp("2001:DB8:0:0::1")), "2001:db8::1");
  EXPECT_EQ(IpToString(*ParseIp("[::ffff:169.254.169.254]")), "169.254.169.254");
  EXPECT_EQ(IpToString(*ParseIp("::")), "::");
}

}  // namespace
}  // namespace jobwheel::net
