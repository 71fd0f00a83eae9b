#include "common/net/host_allowlist.h"

#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

TEST(HostAllowlistTest, HostsWithAndWithoutPorts) {
  auto list = HostAllowlist::Parse(
      " Hooks.Example.com., 10.0.0.7:8080, [::FFFF:10.0.0.8]:443, fd00::1", "--allow_hosts");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->Contains("hooks.example.com", 1));
  EXPECT_TRUE(list->Contains("hooks.example.com", 443));
  EXPECT_TRUE(list->Contains("10.0.0.7", 8080));
  EXPECT_FALSE(list->Contains("10.0.0.7", 80));
  EXPECT_TRUE(list->Contains("10.0.0.8", 443));
  EXPECT_TRUE(list->Contains("fd00::1", 5));
  EXPECT_FALSE(list->Contains("hooks.example.com.evil.io", 443));
  EXPECT_FALSE(list->Contains("example.com", 443));
  EXPECT_TRUE(HostAllowlist::Parse("", "f")->empty());
}

TEST(HostAllowlistTest, ErrorsNameTheFlagAndTheEntry) {
  auto bad_port = HostAllowlist::Parse("a.b, h:notaport", "alarm_webhook_allowlist");
  EXPECT_EQ(bad_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_port.status().message(), "alarm_webhook_allowlist: bad port in \"h:notaport\"");
  auto bad_host = HostAllowlist::Parse("a b", "--allow_hosts");
  EXPECT_EQ(bad_host.status().message(), "--allow_hosts: bad host in \"a b\"");
  EXPECT_FALSE(HostAllowlist::Parse("h:0", "f").ok());
  EXPECT_FALSE(HostAllowlist::Parse("127.1", "f").ok());
}

}  // namespace
}  // namespace jobwheel::net
