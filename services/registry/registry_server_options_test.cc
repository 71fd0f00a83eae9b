#include "services/registry/registry_server_options.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::registry {
namespace {

RegistryServerOptions Good() {
  RegistryServerOptions o;
  o.listen = "127.0.0.1:7101";
  o.db_dsn = "host=localhost dbname=jobwheel";
  o.db_pool_size = 8;
  o.drain_grace = absl::Seconds(2);
  o.registry.replica_id = "A";
  o.dispatcher_public_keys = "-----BEGIN PUBLIC KEY-----\n...\n-----END PUBLIC KEY-----\n";
  return o;
}

void ExpectNames(const RegistryServerOptions& o, absl::string_view flag) {
  absl::Status s = o.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << flag;
  EXPECT_TRUE(absl::StrContains(s.message(), flag)) << flag << ": " << s;
}

TEST(RegistryServerOptionsTest, DefaultsAreValid) {
  EXPECT_TRUE(Good().Validate().ok()) << Good().Validate();
}

TEST(RegistryServerOptionsTest, EachBadValueNamesItsFlag) {
  RegistryServerOptions o = Good();
  o.listen = "";
  ExpectNames(o, "--listen");
  o = Good();
  o.db_dsn = "";
  ExpectNames(o, "--db_dsn");
  o = Good();
  o.db_pool_size = 1;
  ExpectNames(o, "--db_pool_size");
  o = Good();
  o.drain_grace = absl::Seconds(-1);
  ExpectNames(o, "--drain_grace");
  o = Good();
  o.dispatcher_public_keys = "";
  ExpectNames(o, "--dispatcher_public_key_file");
  o = Good();
  o.tls.cert_file = "cert.pem";
  ExpectNames(o, "--tls_key");
  o = Good();
  o.registry.replica_id = "";
  ExpectNames(o, "--replica_id");
  o = Good();
  o.registry.beat_interval = absl::ZeroDuration();
  ExpectNames(o, "--beat_interval");
  o = Good();
  o.registry.beat_deadline = o.registry.beat_interval;
  ExpectNames(o, "--beat_deadline");
  o = Good();
  o.registry.lease = absl::Milliseconds(500);
  ExpectNames(o, "--lease");
  o = Good();
  o.registry.register_deadline = absl::ZeroDuration();
  ExpectNames(o, "--register_deadline");
  o = Good();
  o.allow_loopback_executors = "sometimes";
  ExpectNames(o, "--allow_loopback_executors");
  o = Good();
  o.executor_address_allowlist = "demo";
  ExpectNames(o, "--executor_address_allowlist");
}

TEST(RegistryServerOptionsTest, InsecureDevOnlyOnLoopback) {
  RegistryServerOptions o = Good();
  o.dispatcher_public_keys = "";
  o.insecure_dev = true;
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  o.listen = "0.0.0.0:7101";
  ExpectNames(o, "--insecure_dev");
  ExpectNames(o, "--listen");
}

TEST(RegistryServerOptionsTest, LoopbackExecutorsAutoFollowsListen) {
  RegistryServerOptions o = Good();
  auto policy = o.AddressPolicy();
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->allow_loopback);
  o.listen = "10.0.0.5:7101";
  policy = o.AddressPolicy();
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_FALSE(policy->allow_loopback);
  o.allow_loopback_executors = "true";
  policy = o.AddressPolicy();
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->allow_loopback);
}

}  // namespace
}  // namespace jobwheel::registry
