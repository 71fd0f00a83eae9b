// ExecutorChangeListener on PostgreSQL: the payloads the registry sends on its channel reach
// the callback; app rows and malformed payloads do not.
#include "services/scheduler/executor_changes.h"

#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"

namespace jobwheel::scheduler {
namespace {

TEST(ParseExecutorChangeTest, ReadsExecutorRowsOnly) {
  ExecutorChange c;
  ASSERT_TRUE(ParseExecutorChange("e|1700000000000000|demo|127.0.0.1:7200", &c));
  EXPECT_EQ(c.app, "demo");
  EXPECT_EQ(c.address, "127.0.0.1:7200");
  EXPECT_FALSE(ParseExecutorChange("a|1700000000000000|demo", &c));
  EXPECT_FALSE(ParseExecutorChange("e|1|demo", &c));
  EXPECT_FALSE(ParseExecutorChange("e|1||x", &c));
  EXPECT_FALSE(ParseExecutorChange("", &c));
}

TEST(ExecutorChangeListenerTest, AnnouncedRowsReachTheCallback) {
  auto dsn = testing::CreateMigratedTestDatabase();
  ASSERT_TRUE(dsn.ok()) << dsn.status();
  absl::Mutex mu;
  std::vector<ExecutorChange> seen;
  ExecutorChangeListener listener(
      *dsn, {},
      [&](const ExecutorChange& c) {
        absl::MutexLock lock(&mu);
        seen.push_back(c);
      },
      RealClock::Get());
  listener.Start();
  auto count = [&] {
    absl::MutexLock lock(&mu);
    return seen.size();
  };
  // Subscribed: the first call is the empty "anything may have changed".
  {
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(
        mu.AwaitWithTimeout(absl::Condition(
                                +[](std::vector<ExecutorChange>* s) { return !s->empty(); }, &seen),
                            absl::Seconds(10)));
    EXPECT_TRUE(seen[0].address.empty());
  }
  pqxx::connection conn(*dsn);
  pqxx::nontransaction tx(conn);
  tx.exec("SELECT pg_notify('jobwheel_executors', 'a|1|demo')");
  tx.exec("SELECT pg_notify('jobwheel_executors', 'e|1|demo|127.0.0.1:7200')");
  {
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(mu.AwaitWithTimeout(
        absl::Condition(
            +[](std::vector<ExecutorChange>* s) { return s->size() >= 2; }, &seen),
        absl::Seconds(10)));
    EXPECT_EQ(seen[1].app, "demo");
    EXPECT_EQ(seen[1].address, "127.0.0.1:7200");
  }
  listener.Shutdown();
  EXPECT_EQ(count(), 2u);  // The app row was not passed on.
}

}  // namespace
}  // namespace jobwheel::scheduler
