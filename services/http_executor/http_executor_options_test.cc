#include "services/http_executor/http_executor_options.h"

#include <string>

#include "gtest/gtest.h"

namespace jobwheel::http_executor {
namespace {

void ExpectBadFlag(const HttpExecutorOptions& o, const std::string& flag) {
  absl::Status s = o.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << flag;
  EXPECT_NE(s.message().find(flag), std::string::npos) << s;
}

TEST(HttpExecutorOptionsTest, DefaultsAreValid) {
  HttpExecutorOptions o;
  EXPECT_TRUE(o.Validate().ok());
  auto policy = o.PolicyOptions();
  ASSERT_TRUE(policy.ok());
  EXPECT_TRUE(policy->allow_ports.Contains(443));
  EXPECT_FALSE(policy->allow_ports.Contains(8080));
  EXPECT_TRUE(policy->allow_hosts.empty());
  EXPECT_TRUE(policy->allow_public);
}

TEST(HttpExecutorOptionsTest, EachBadFlagIsNamed) {
  HttpExecutorOptions o;
  o.allow_hosts = "a b";
  ExpectBadFlag(o, "--allow_hosts");
  o = {};
  o.allow_cidrs = "10.0.0.0/40";
  ExpectBadFlag(o, "--allow_cidrs");
  o = {};
  o.allow_ports = "0";
  ExpectBadFlag(o, "--allow_ports");
  o = {};
  o.secret_dir = "relative";
  ExpectBadFlag(o, "--secret_dir");
  o.secret_dir = "/nonexistent/dir";
  ExpectBadFlag(o, "--secret_dir");
  o = {};
  for (const char* bad : {"lower_", "JOBWHEEL_", "AB_", "NO_UNDERSCORE", "A-B_"}) {
    o.secret_env_prefix = bad;
    ExpectBadFlag(o, "--secret_env_prefix");
  }
  o.secret_env_prefix = "JOBWHEEL_HTTP_SECRET_";
  EXPECT_TRUE(o.Validate().ok());
  o = {};
  o.max_response_bytes = 10;
  ExpectBadFlag(o, "--max_response_bytes");
  o = {};
  o.connect_timeout = absl::ZeroDuration();
  ExpectBadFlag(o, "--connect_timeout");
}

}  // namespace
}  // namespace jobwheel::http_executor
