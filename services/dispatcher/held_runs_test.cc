#include "services/dispatcher/held_runs.h"

#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/dispatcher/dispatcher_metrics.h"

namespace jobwheel::dispatcher {
namespace {

using ::jobwheel::testing::Eventually;
using ::testing::ElementsAre;

class HeldRunsTest : public ::testing::Test {
 protected:
  void SetUp() override { held_.Start(); }

  // Holds run `id` until `at`.
  void Hold(int64_t id, absl::Time at) {
    std::vector<std::pair<RoutedRun, absl::Time>> runs(1);
    runs[0].first.run.request.set_run_id(id);
    runs[0].second = at;
    ASSERT_TRUE(held_.Hold(runs));
  }
  // Waits (in real time) for `n` deliveries, and returns them as run ids.
  std::vector<std::vector<int64_t>> Delivered(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return delivered_.size() >= n; };
    mu_.Await(absl::Condition(&enough));
    return delivered_;
  }
  size_t deliveries() {
    absl::MutexLock lock(&mu_);
    return delivered_.size();
  }

  SimulatedClock clock_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_};
  absl::Mutex mu_;
  std::vector<std::vector<int64_t>> delivered_ ABSL_GUARDED_BY(mu_);
  const absl::Time t0_ = clock_.Now();
  HeldRuns held_{clock_, absl::Seconds(2), metrics_, [this](std::vector<RoutedRun> due) {
                   std::vector<int64_t> ids;
                   for (const RoutedRun& r : due) ids.push_back(r.run.request.run_id());
                   absl::MutexLock lock(&mu_);
                   delivered_.push_back(std::move(ids));
                 }};
};

TEST_F(HeldRunsTest, RunsGoWhenDueNeverEarlierAndThoseOfOneTimeTogether) {
  Hold(1, t0_ + absl::Milliseconds(300));
  Hold(2, t0_ + absl::Milliseconds(300));
  Hold(3, t0_ + absl::Milliseconds(600));
  EXPECT_EQ(held_.size(), 3u);
  clock_.AwaitWaiters(1);  // The timer waits for 300 ms.
  clock_.Advance(absl::Milliseconds(299));
  clock_.AwaitWaiters(1);  // Still waiting, nothing delivered.
  EXPECT_EQ(deliveries(), 0u);
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_THAT(Delivered(1), ElementsAre(ElementsAre(1, 2)));
  clock_.AwaitWaiters(1);  // Now for 600 ms.
  EXPECT_EQ(held_.size(), 1u);
  clock_.Advance(absl::Seconds(1));
  EXPECT_THAT(Delivered(2), ElementsAre(ElementsAre(1, 2), ElementsAre(3)));
  EXPECT_EQ(held_.size(), 0u);
}

TEST_F(HeldRunsTest, AnEarlierRunHeldLaterWakesTheTimer) {
  Hold(1, t0_ + absl::Milliseconds(900));
  clock_.AwaitWaiters(1);
  Hold(2, t0_ + absl::Milliseconds(100));
  // Waiting for 100 ms now: moving to 100 ms delivers run 2 alone.
  clock_.Advance(absl::Milliseconds(100));
  EXPECT_THAT(Delivered(1), ElementsAre(ElementsAre(2)));
  EXPECT_EQ(held_.size(), 1u);
  clock_.Advance(absl::Milliseconds(800));
  EXPECT_THAT(Delivered(2), ElementsAre(ElementsAre(2), ElementsAre(1)));
}

TEST_F(HeldRunsTest, ShutdownStillWaitsForTheirTimeAndRefusesNewRuns) {
  Hold(1, t0_ + absl::Milliseconds(500));
  std::thread stopper([&] { held_.Shutdown(); });
  ASSERT_TRUE(Eventually([&] { return held_.stopping(); }, absl::Seconds(10)));
  std::vector<std::pair<RoutedRun, absl::Time>> late(1);
  late[0].second = t0_ + absl::Milliseconds(100);
  EXPECT_FALSE(held_.Hold(late));
  clock_.AwaitWaiters(1);
  EXPECT_EQ(deliveries(), 0u);
  clock_.Advance(absl::Milliseconds(500));
  stopper.join();
  EXPECT_THAT(Delivered(1), ElementsAre(ElementsAre(1)));
}

TEST_F(HeldRunsTest, AtShutdownRunsNotDueAfterTheHoldGoEarlyRatherThanNever) {
  Hold(1, t0_ + absl::Hours(1));  // Held on another clock than the one that stops it.
  std::thread stopper([&] { held_.Shutdown(); });
  ASSERT_TRUE(Eventually([&] { return held_.stopping(); }, absl::Seconds(10)));
  clock_.Advance(absl::Seconds(2) - absl::Milliseconds(1));
  clock_.AwaitWaiters(1);
  EXPECT_EQ(deliveries(), 0u);
  clock_.Advance(absl::Seconds(1) + absl::Milliseconds(1));  // The hold (2s) and a second.
  stopper.join();
  EXPECT_THAT(Delivered(1), ElementsAre(ElementsAre(1)));
}

}  // namespace
}  // namespace jobwheel::dispatcher
