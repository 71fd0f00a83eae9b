#include "services/scheduler/admin/work_pool.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler::admin {
namespace {

TEST(WorkPoolTest, RunsTasksAndDrainsOnShutdown) {
  WorkPool pool(2, 100);
  pool.Start();
  std::atomic<int> done{0};
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.Submit([&] { ++done; }));
  pool.Shutdown();
  EXPECT_EQ(done.load(), 50);
  EXPECT_FALSE(pool.Submit([] {}));
  pool.Shutdown();  // Idempotent.
}

TEST(WorkPoolTest, RefusesWhenQueueIsFull) {
  WorkPool pool(1, 2);
  pool.Start();
  absl::Notification started, release;
  ASSERT_TRUE(pool.Submit([&] {
    started.Notify();
    release.WaitForNotification();
  }));
  started.WaitForNotification();  // The only worker is busy; the queue is empty.
  EXPECT_TRUE(pool.Submit([] {}));
  EXPECT_TRUE(pool.Submit([] {}));
  EXPECT_FALSE(pool.Submit([] {}));
  release.Notify();
  pool.Shutdown();
}

TEST(WorkPoolTest, ShutdownWithoutStartRunsQueuedTasks) {
  WorkPool pool(1, 10);
  int ran = 0;
  ASSERT_TRUE(pool.Submit([&] { ++ran; }));
  pool.Shutdown();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
