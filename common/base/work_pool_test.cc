#include "common/base/work_pool.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(WorkPoolTest, RunsTasksAndDrainsOnShutdown) {
  WorkPool pool(2, 100);
  std::atomic<int> done{0};
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.Submit([&] { ++done; }));
  pool.Shutdown();
  EXPECT_EQ(done.load(), 50);
  EXPECT_FALSE(pool.Submit([] {}));
  pool.Shutdown();  // Idempotent.
}

TEST(WorkPoolTest, RefusesWhenQueueIsFullButMustRunWorkIsQueued) {
  WorkPool pool(1, 2);
  absl::Notification started, release;
  ASSERT_TRUE(pool.Submit([&] {
    started.Notify();
    release.WaitForNotification();
  }));
  started.WaitForNotification();  // The only worker is busy; the queue is empty.
  EXPECT_TRUE(pool.Submit([] {}));
  EXPECT_TRUE(pool.Submit([] {}));
  EXPECT_FALSE(pool.Submit([] {}));
  std::atomic<bool> must{false};
  pool.SubmitMustRun([&] { must = true; });
  EXPECT_EQ(pool.depth(), 3u);
  release.Notify();
  pool.Shutdown();
  EXPECT_TRUE(must.load());
}

TEST(WorkPoolTest, ZeroMaxQueueIsUnbounded) {
  WorkPool pool(1);
  absl::Notification release;
  ASSERT_TRUE(pool.Submit([&] { release.WaitForNotification(); }));
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(pool.Submit([] {}));
  release.Notify();
  pool.Shutdown();
  EXPECT_EQ(pool.depth(), 0u);
}

TEST(WorkPoolTest, MustRunWorkAfterShutdownStillRuns) {
  WorkPool pool(1, 1);
  pool.Shutdown();
  absl::Notification ran;
  pool.SubmitMustRun([&] { ran.Notify(); });
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST(WorkPoolTest, ObserverSeesTheQueueDepth) {
  absl::Mutex mu;
  std::vector<size_t> seen;
  absl::Notification started, release;
  {
    WorkPool pool(1, 0, [&](size_t depth) {
      absl::MutexLock lock(&mu);
      seen.push_back(depth);
    });
    ASSERT_TRUE(pool.Submit([&] {
      started.Notify();
      release.WaitForNotification();
    }));
    started.WaitForNotification();
    ASSERT_TRUE(pool.Submit([] {}));
    ASSERT_TRUE(pool.Submit([] {}));
    release.Notify();
  }  // The destructor drains.
  absl::MutexLock lock(&mu);
  // 1 (queued) 0 (taken), then 1 and 2 queued behind the busy worker, then 1 and 0 as taken.
  EXPECT_EQ(seen, (std::vector<size_t>{1, 0, 1, 2, 1, 0}));
}

}  // namespace
}  // namespace jobwheel
