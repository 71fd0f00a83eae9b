#include "services/registry/view_syncer.h"

#include <memory>

#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/registry/in_memory_executor_store.h"

namespace jobwheel::registry {
namespace {

v1::Executor Exec(const std::string& app, const std::string& address) {
  v1::Executor e;
  e.set_app(app);
  e.set_address(address);
  return e;
}

class FlakyFeed : public ChangeFeed {
 public:
  explicit FlakyFeed(InMemoryExecutorStore& store) : inner_(store) {}
  absl::Status Connect() override {
    ++connects;
    return inner_.Connect();
  }
  absl::StatusOr<std::vector<Change>> Wait(absl::Duration timeout) override {
    if (fail_next) {
      fail_next = false;
      return absl::UnavailableError("connection lost");
    }
    return inner_.Wait(timeout);
  }
  bool fail_next = false;
  int connects = 0;

 private:
  InMemoryChangeFeed inner_;
};

TEST(ViewSyncerTest, LoadsThenFollowsChangesAndReloadsAfterLosingTheFeed) {
  FakeClock clock;
  InMemoryExecutorStore store(clock);
  prometheus::Registry prom;
  RegistryMetrics metrics(prom);
  ExecutorView view(&metrics, 1);
  ASSERT_TRUE(store.Register(Exec("demo", "h:1"), "r1", "s1", absl::Seconds(10)).ok());
  auto feed = std::make_unique<FlakyFeed>(store);
  FlakyFeed* flaky = feed.get();
  ViewSyncer syncer(store, std::move(feed), view, &metrics, clock, ViewSyncer::Options());
  ASSERT_TRUE(syncer.Step().ok());  // Connects and loads.
  EXPECT_EQ(view.List("demo").size(), 1u);

  ASSERT_TRUE(store.Register(Exec("demo", "h:2"), "r2", "s2", absl::Seconds(10)).ok());
  clock.Advance(absl::Milliseconds(5));
  ASSERT_TRUE(syncer.Step().ok());
  EXPECT_EQ(view.List("demo").size(), 2u);
  EXPECT_EQ(metrics.notify_lag.Collect().histogram.sample_count, 1u);

  ASSERT_TRUE(*store.MarkOffline({{"demo", "h:1"}, "s1"}));
  ASSERT_TRUE(syncer.Step().ok());
  EXPECT_EQ(view.List("demo").size(), 1u);

  // The feed breaks; a change made meanwhile is picked up by the reload.
  flaky->fail_next = true;
  EXPECT_FALSE(syncer.Step().ok());
  ASSERT_TRUE(store.Register(Exec("demo", "h:3"), "r2", "s3", absl::Seconds(10)).ok());
  store.TakeChanges();  // Lost with the connection.
  ASSERT_TRUE(syncer.Step().ok());
  EXPECT_EQ(flaky->connects, 2);
  EXPECT_EQ(view.List("demo").size(), 2u);

  // Manual app config changes reach the view.
  store.SetApp(AppConfig{"demo", v1::ADDRESS_TYPE_MANUAL, {"m:1"}});
  ASSERT_TRUE(syncer.Step().ok());
  ASSERT_EQ(view.List("demo").size(), 1u);
  EXPECT_EQ(view.List("demo")[0].address(), "m:1");
}

}  // namespace
}  // namespace jobwheel::registry
