#include "services/console/console_options.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::console {
namespace {

ConsoleOptions Good() {
  ConsoleOptions o;
  o.server.listen = "127.0.0.1:7180";
  o.scheduler_target = "127.0.0.1:7100";
  o.registry_target = "127.0.0.1:7101";
  o.server.max_body_bytes = o.gateway.max_body_bytes = 1 << 20;
  o.server.max_concurrent_requests = 32;
  o.gateway.request_timeout = o.server.read_timeout = o.server.write_timeout = absl::Seconds(10);
  o.server.keep_alive_timeout = absl::Seconds(5);
  o.ready_timeout = absl::Seconds(1);
  o.server.max_connections = 128;
  o.server.max_connections_per_client = 16;
  o.gateway.failed_auth.burst = 20;
  o.gateway.failed_auth.per_second = 5;
  return o;
}

void ExpectNames(const ConsoleOptions& o, absl::string_view flag) {
  absl::Status s = o.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << flag;
  EXPECT_TRUE(absl::StrContains(s.message(), flag)) << s;
}

TEST(ConsoleOptionsTest, DefaultsAreValid) { EXPECT_TRUE(Good().Validate().ok()); }

TEST(ConsoleOptionsTest, EachBadValueNamesItsFlag) {
  ConsoleOptions o = Good();
  o.server.listen = "";
  ExpectNames(o, "--listen");
  o = Good();
  o.server.max_body_bytes = o.gateway.max_body_bytes = 10;
  ExpectNames(o, "--max_body_bytes");
  o = Good();
  o.server.max_concurrent_requests = 0;
  ExpectNames(o, "--max_concurrent_requests");
  o = Good();
  o.server.read_timeout = absl::ZeroDuration();
  ExpectNames(o, "--read_timeout");
  o = Good();
  o.drain_delay = -absl::Seconds(1);
  ExpectNames(o, "--drain_delay");
  o = Good();
  o.server.keep_alive_timeout = absl::Milliseconds(10);
  ExpectNames(o, "--keep_alive_timeout");
  o = Good();
  o.server.max_connections = 0;
  ExpectNames(o, "--max_connections");
  o = Good();
  o.server.max_connections_per_client = 129;
  ExpectNames(o, "--max_connections_per_client");
  o = Good();
  o.gateway.failed_auth.per_second = 0;
  ExpectNames(o, "--failed_auth_per_second");
  o = Good();
  o.client_tls.cert_file = "c.pem";
  ExpectNames(o, "--tls_client_key");
  o.client_tls.key_file = "k.pem";
  ExpectNames(o, "--tls_ca");
}

}  // namespace
}  // namespace jobwheel::console
