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
  store.SetApp(AppConfig{"demo", v1::ADDRESS_TYPE_AUTO, {}});
  prometheus::Registry prom;
  RegistryMetrics metrics(prom);
  ExecutorView view(metrics, 1);
  ASSERT_TRUE(store.Register(Exec("demo", "h:1"), "r1", "s1", absl::Seconds(10)).ok());
  auto feed = std::make_unique<FlakyFeed>(store);
  FlakyFeed* flaky = feed.get();
  ViewSyncer syncer(store, std::move(feed), view, metrics, clock, ViewSyncer::Options());
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

// A feed whose Connect fails while `down` and whose Wait blocks on the clock until `released`.
class ScriptedFeed : public ChangeFeed {
 public:
  explicit ScriptedFeed(Clock& clock) : clock_(clock) {}
  absl::Status Connect() override {
    absl::MutexLock lock(&mu_);
    ++connects_;
    if (down_) return absl::UnavailableError("database down");
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<Change>> Wait(absl::Duration timeout) override {
    absl::MutexLock lock(&mu_);
    if (fail_next_) {
      fail_next_ = false;
      return absl::UnavailableError("connection lost");
    }
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&released_), clock_.Now() + timeout);
    return std::vector<Change>();
  }

  int connects() {
    absl::MutexLock lock(&mu_);
    return connects_;
  }
  void set_down(bool down) {
    absl::MutexLock lock(&mu_);
    down_ = down;
  }
  void FailNextWait() {
    absl::MutexLock lock(&mu_);
    fail_next_ = true;
  }
  // Every Wait from now on returns at once.
  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }

 private:
  Clock& clock_;
  absl::Mutex mu_;
  int connects_ ABSL_GUARDED_BY(mu_) = 0;
  bool down_ ABSL_GUARDED_BY(mu_) = false;
  bool fail_next_ ABSL_GUARDED_BY(mu_) = false;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(ViewSyncerTest, ReconnectsAfterABackoffOnTheClockThatGrowsWhileFailing) {
  FakeClock clock;
  InMemoryExecutorStore store(clock);
  store.SetApp(AppConfig{"demo", v1::ADDRESS_TYPE_AUTO, {}});
  prometheus::Registry prom;
  RegistryMetrics metrics(prom);
  ExecutorView view(metrics, 1);
  auto owned = std::make_unique<ScriptedFeed>(clock);
  ScriptedFeed* feed = owned.get();
  ViewSyncer::Options options;
  options.initial_backoff = absl::Milliseconds(100);
  options.max_backoff = absl::Milliseconds(400);
  options.wait_slice = absl::Seconds(10);
  options.resync_interval = absl::Hours(1);
  ViewSyncer syncer(store, std::move(owned), view, metrics, clock, options);
  feed->FailNextWait();  // The loop's first Wait loses the feed.
  ASSERT_TRUE(syncer.Start().ok());
  EXPECT_EQ(feed->connects(), 1);
  feed->set_down(true);

  // First wait: 50 to 100 ms.
  clock.AwaitWaiters(1);
  clock.Advance(absl::Milliseconds(49));
  EXPECT_EQ(clock.Waiters(), 1);
  EXPECT_EQ(feed->connects(), 1);
  clock.Advance(absl::Milliseconds(51));
  clock.AwaitWaiters(1);  // Reconnected, failed, waits again: 100 to 200 ms.
  EXPECT_EQ(feed->connects(), 2);
  clock.Advance(absl::Milliseconds(99));
  EXPECT_EQ(clock.Waiters(), 1);
  EXPECT_EQ(feed->connects(), 2);
  clock.Advance(absl::Milliseconds(101));
  clock.AwaitWaiters(1);  // 200 to 400 ms.
  EXPECT_EQ(feed->connects(), 3);

  // The database is back: the next attempt connects and follows the feed again.
  feed->set_down(false);
  clock.Advance(absl::Milliseconds(400));
  clock.AwaitWaiters(1);  // Now in the feed's Wait.
  EXPECT_EQ(feed->connects(), 4);

  // After a success the backoff starts again from initial_backoff.
  feed->FailNextWait();
  clock.Advance(options.wait_slice);  // The Wait in progress returns; the next one fails.
  clock.AwaitWaiters(1);
  EXPECT_EQ(feed->connects(), 4);
  clock.Advance(absl::Milliseconds(100));
  clock.AwaitWaiters(1);
  EXPECT_EQ(feed->connects(), 5);

  feed->Release();
  syncer.Shutdown();
}

}  // namespace
}  // namespace jobwheel::registry
