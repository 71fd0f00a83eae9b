#include "services/scheduler/replication_watch.h"

#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace jobwheel::scheduler {
namespace {

double Gauge(prometheus::Registry& registry, const std::string& name, const std::string& sync) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      bool match = sync.empty();
      for (const auto& l : m.label) match |= l.name == "sync" && l.value == sync;
      if (match) return m.gauge.value;
    }
  }
  return -1;
}

TEST(CommitsCanBeLostInFailover, OnlyWhenStandbysStreamAndNoCommitWaitsForOne) {
  EXPECT_FALSE(CommitsCanBeLostInFailover({0, 0, "on"}));    // Single server.
  EXPECT_FALSE(CommitsCanBeLostInFailover({2, 1, "on"}));    // Patroni synchronous_mode.
  EXPECT_TRUE(CommitsCanBeLostInFailover({2, 0, "on"}));     // Asynchronous standbys.
  EXPECT_TRUE(CommitsCanBeLostInFailover({1, 1, "local"}));  // Commits do not wait.
  EXPECT_TRUE(CommitsCanBeLostInFailover({1, 1, "off"}));
  EXPECT_FALSE(CommitsCanBeLostInFailover({1, 1, "remote_apply"}));
}

TEST(ReplicationWatch, ExportsTheStateAndWarnsAtMostOncePerPeriod) {
  SimulatedClock clock;
  prometheus::Registry registry;
  ReplicationState state{2, 1, "on"};
  ReplicationWatch::Options options;
  options.log_every = absl::Minutes(5);
  ReplicationWatch watch(
      options, [&state]() -> absl::StatusOr<ReplicationState> { return state; }, registry, clock);
  watch.Check();
  EXPECT_FALSE(watch.async_replication());
  EXPECT_EQ(Gauge(registry, "jobwheel_scheduler_db_async_replication", ""), 0);
  EXPECT_EQ(Gauge(registry, "jobwheel_scheduler_db_standbys", "true"), 1);
  EXPECT_EQ(Gauge(registry, "jobwheel_scheduler_db_standbys", "false"), 1);
  EXPECT_EQ(watch.warnings(), 0);

  // The synchronous standby goes (Patroni without synchronous_mode_strict drops the sync
  // requirement): warned at once, then not again for five minutes.
  state = {1, 0, "on"};
  watch.Check();
  EXPECT_TRUE(watch.async_replication());
  EXPECT_EQ(Gauge(registry, "jobwheel_scheduler_db_async_replication", ""), 1);
  EXPECT_EQ(watch.warnings(), 1);
  clock.Advance(absl::Minutes(1));
  watch.Check();
  EXPECT_EQ(watch.warnings(), 1);
  clock.Advance(absl::Minutes(4));
  watch.Check();
  EXPECT_EQ(watch.warnings(), 2);

  // A failing probe keeps the last state; a synchronous standby back ends the warning.
  ReplicationWatch failing(
      options, []() -> absl::StatusOr<ReplicationState> { return absl::UnavailableError("x"); },
      registry, clock);
  failing.Check();
  EXPECT_FALSE(failing.async_replication());
  state = {2, 1, "on"};
  watch.Check();
  EXPECT_FALSE(watch.async_replication());
  EXPECT_EQ(Gauge(registry, "jobwheel_scheduler_db_async_replication", ""), 0);
  // Turning asynchronous again warns at once, whenever the last warning was.
  state = {1, 0, "on"};
  watch.Check();
  EXPECT_EQ(watch.warnings(), 3);
}

}  // namespace
}  // namespace jobwheel::scheduler
