// Asynchronous replication (issue 25): a real scheduler on a two-member Patroni cluster
// without synchronous_mode says that a failover can lose commits — the gauge
// jobwheel_scheduler_db_async_replication is 1, db_standbys{sync="false"} counts the standby,
// and its log carries the warning (once: the next comes after 5 minutes at the earliest).
// The loss window itself is documented in docs/database.md. Skipped when Patroni or etcd is
// not installed.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"
#include "tests/ha/patroni_cluster.h"

namespace jobwheel {
namespace {

TEST(AsyncReplicationTest, TheSchedulerWarnsThatAFailoverCanLoseCommits) {
  testing::PatroniCluster cluster;
  const absl::Status started = cluster.Start(2, "async");
  if (absl::IsFailedPrecondition(started)) GTEST_SKIP() << started.message();
  ASSERT_TRUE(started.ok()) << started.message();

  testing::Stack::Options options;
  options.dsn = cluster.dsn();
  options.metrics = true;
  options.serving_timeout = absl::Seconds(60);
  testing::Stack stack(options);
  const absl::Status up = stack.StartServices();
  ASSERT_TRUE(up.ok()) << up << "\n" << stack.Logs();

  const std::string metrics_url = absl::StrCat(
      "curl -fsS http://127.0.0.1:", stack.scheduler_process(0).metrics_port, "/metrics");
  std::string metrics;
  const bool warned = testing::Eventually(
      [&] {
        int rc = 0;
        metrics = testing::Shell(metrics_url, &rc);
        return testing::MetricValue(metrics, "jobwheel_scheduler_db_async_replication") == 1;
      },
      absl::Seconds(30));
  EXPECT_TRUE(warned) << metrics;
  EXPECT_EQ(testing::MetricValue(metrics, "jobwheel_scheduler_db_standbys{sync=\"false\"}"), 1);
  EXPECT_EQ(testing::MetricValue(metrics, "jobwheel_scheduler_db_standbys{sync=\"true\"}"), 0);
  const std::string log =
      testing::ReadFile(stack.scheduler_process(0).log.empty() ? stack.dir() + "/scheduler.log"
                                                               : stack.scheduler_process(0).log);
  EXPECT_TRUE(absl::StrContains(log, "database replication is asynchronous")) << log;
  EXPECT_TRUE(absl::StrContains(log, "a failover to a standby can lose committed fires"));
  stack.Stop();
  if (HasFailure()) std::cerr << stack.Logs() << cluster.Logs();
}

}  // namespace
}  // namespace jobwheel
