#include "services/xxl_gateway/gateway_server_options.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::xxl {
namespace {

GatewayServerOptions Good() {
  GatewayServerOptions o;
  o.executor_ports = "7300-7310";
  o.state_dir = "/tmp/x";
  o.registry_target = "127.0.0.1:1";
  o.dispatcher_target = "127.0.0.1:2";
  o.dispatcher_public_key_file = "d.pub";
  o.scheduler_public_key_file = "s.pub";
  return o;
}

void ExpectNames(GatewayServerOptions o, const char* flag) {
  absl::Status s = o.Validate();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), flag)) << s;
}

TEST(GatewayServerOptionsTest, ValidatesEachFlag) {
  GatewayServerOptions o = Good();
  ASSERT_TRUE(o.Validate().ok()) << o.Validate();
  EXPECT_EQ(o.port_from, 7300);
  EXPECT_EQ(o.port_to, 7310);
  EXPECT_EQ(o.bind_host, "127.0.0.1");
  o = Good();
  o.executor_ports = "";
  ExpectNames(o, "--executor_ports");
  o = Good();
  o.executor_ports = "9-3";
  ExpectNames(o, "--executor_ports");
  o = Good();
  o.state_dir = "";
  ExpectNames(o, "--state_dir");
  o = Good();
  o.scheduler_public_key_file = "";
  ExpectNames(o, "--scheduler_public_key_file");
  o = Good();
  o.max_connections_per_client = o.http_threads + 1;
  ExpectNames(o, "--max_connections_per_client");
  o = Good();
  o.app_handlers = "bad app=h";
  ExpectNames(o, "--app_handlers");
  o = Good();
  o.insecure_dev = true;
  o.listen_http = "0.0.0.0:7190";
  ExpectNames(o, "--listen_http");
  for (const char* bad : {"7190", ":7190", "127.0.0.1:", "127.0.0.1:99999", "127.1:7190",
                          "host name:7190", "[::1:7190"}) {
    o = Good();
    o.listen_http = bad;
    ExpectNames(o, "--listen_http");
  }
  for (const char* good : {"127.0.0.1:7190", "[::1]:7190", "gateway.example.com:80"}) {
    o = Good();
    o.listen_http = good;
    EXPECT_TRUE(o.Validate().ok()) << good << ": " << o.Validate();
  }
}

TEST(GatewayServerOptionsTest, ParsesLists) {
  auto h = ParseAppHandlers("demo=a|b; other=c");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)["demo"].size(), 2u);
  EXPECT_EQ((*h)["other"][0], "c");
  EXPECT_EQ(ParseAppList("a, b").size(), 2u);
}

}  // namespace
}  // namespace jobwheel::xxl
