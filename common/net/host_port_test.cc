#include "common/net/host_port.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

std::string Canon(absl::string_view text, int default_port = 0) {
  absl::StatusOr<std::string> c = CanonicalHostPort(text, default_port);
  return c.ok() ? *c : "error: " + std::string(c.status().message());
}

TEST(CanonicalHostPortTest, OneSpellingPerDestination) {
  EXPECT_EQ(Canon("Exec-1.Example.COM.:7200"), "exec-1.example.com:7200");
  EXPECT_EQ(Canon("10.0.0.5:07200"), "10.0.0.5:7200");
  EXPECT_EQ(Canon("[::ffff:10.0.0.5]:7200"), "10.0.0.5:7200");
  EXPECT_EQ(Canon("[2001:DB8:0:0::1]:80"), "[2001:db8::1]:80");
  EXPECT_EQ(Canon("[::1]:1"), "[::1]:1");
  EXPECT_EQ(Canon("LOCALHOST:9"), "localhost:9");
  EXPECT_EQ(Canon("exec_1.svc:65535"), "exec_1.svc:65535");
}

TEST(CanonicalHostPortTest, DefaultPortOnlyWhenGiven) {
  EXPECT_EQ(Canon("example.com", 443), "example.com:443");
  EXPECT_EQ(Canon("[fd00::1]", 80), "[fd00::1]:80");
  EXPECT_EQ(Canon("fd00::1", 80), "[fd00::1]:80");
  EXPECT_EQ(Canon("example.com:8443", 443), "example.com:8443");
  EXPECT_NE(Canon("example.com").find("is not host:port"), std::string::npos);
  EXPECT_NE(Canon("fd00::1").find("is not host:port"), std::string::npos);
}

TEST(CanonicalHostPortTest, BadAddresses) {
  for (const char* bad :
       {"",         ":80",     "h:",    "h:0",      "h:65536",       "h:+80",
        "h:8 0",    "h:80x",   "[::1",  "[::1]x",   "[zz::1]:80",    "[fe80::1%eth0]:80",
        "a b:80",   "a..b:80", ".:80",  "127.1:80", "2130706433:80", "0x7f000001:80",
        "1.2.3:80", "h/x:80",  "h@x:80"}) {
    EXPECT_TRUE(absl::StartsWith(Canon(bad), "error: ")) << bad << " -> " << Canon(bad);
  }
  std::string long_label(64, 'a');
  EXPECT_TRUE(absl::StartsWith(Canon(long_label + ".com:1"), "error: "));
  std::string long_name;
  for (int i = 0; i < 64; ++i) long_name += "abc.";
  EXPECT_TRUE(absl::StartsWith(Canon(long_name + "com:1"), "error: "));
}

TEST(ParseHostPortTest, Parts) {
  absl::StatusOr<HostPort> hp = ParseHostPort("[::FFFF:127.0.0.1]:7200");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 7200);
  ASSERT_TRUE(hp->ip.has_value());
  EXPECT_FALSE(hp->ip->v6);
  hp = ParseHostPort("Name.Example:1");
  ASSERT_TRUE(hp.ok());
  EXPECT_FALSE(hp->ip.has_value());
  EXPECT_EQ(ParseHostPort("h:99999").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HostPortHelpersTest, JoinNormalizeAndPorts) {
  EXPECT_EQ(JoinHostPort("::1", 80), "[::1]:80");
  EXPECT_EQ(JoinHostPort("h", 80), "h:80");
  EXPECT_EQ(NormalizeHostName("A.B."), "a.b");
  EXPECT_EQ(ParsePort("080"), 80);
  EXPECT_FALSE(ParsePort("-1").has_value());
  EXPECT_FALSE(ParsePort("0").has_value());
  EXPECT_FALSE(ParsePort("").has_value());
  EXPECT_FALSE(ParsePort("999999").has_value());
}

}  // namespace
}  // namespace jobwheel::net
