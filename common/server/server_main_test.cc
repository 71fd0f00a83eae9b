#include "common/server/server_main.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(ServerMainTest, ReplicaIdIsTheFlagWhenSetElseHostAndPid) {
  EXPECT_EQ(ReplicaIdOr("scheduler-0"), "scheduler-0");
  const std::string id = ReplicaIdOr("");
  EXPECT_TRUE(absl::EndsWith(id, absl::StrCat("-", getpid()))) << id;
  EXPECT_GT(id.size(), absl::StrCat("-", getpid()).size());
}

TEST(ServerMainTest, NoMetricsAddressMeansNoExposer) {
  auto exposer = StartMetricsExposer("", std::make_shared<prometheus::Registry>());
  ASSERT_TRUE(exposer.ok());
  EXPECT_EQ(*exposer, nullptr);
}

TEST(ServerMainTest, AnUnusableMetricsAddressNamesTheFlag) {
  auto exposer = StartMetricsExposer("not-an-address:x", std::make_shared<prometheus::Registry>());
  ASSERT_FALSE(exposer.ok());
  EXPECT_EQ(exposer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(exposer.status().message(), "--metrics_address"))
      << exposer.status();
}

TEST(ServerMainTest, ConnectAndMigrateReportsAnUnreachableDatabase) {
  absl::Status s = ConnectAndMigrate("host=127.0.0.1 port=1 connect_timeout=2 dbname=none");
  EXPECT_FALSE(s.ok());
}

TEST(ServerMainTest, FailReturnsTheExitCode) {
  EXPECT_EQ(Fail(absl::InvalidArgumentError("bad")), 1);
  EXPECT_EQ(Fail("--listen", absl::InvalidArgumentError("bad"), 2), 2);
}

}  // namespace
}  // namespace jobwheel
