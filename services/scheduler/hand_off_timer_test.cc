// HandOffTimer on a SimulatedClock: WaitDue returns what is due when the clock reaches it.
#include "services/scheduler/hand_off_timer.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler {
namespace {

TEST(HandOffTimerTest, PopDueInOrderAndOnce) {
  SimulatedClock clock;
  HandOffTimer timer(clock);
  const absl::Time t = clock.Now();
  EXPECT_TRUE(timer.Add(2, t + absl::Seconds(2)));
  EXPECT_TRUE(timer.Add(1, t + absl::Seconds(1)));
  EXPECT_FALSE(timer.Add(1, t));  // Held once.
  EXPECT_TRUE(timer.PopDue(t, 10).empty());
  EXPECT_EQ(timer.PopDue(t + absl::Seconds(2), 10), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(timer.size(), 0u);
}

TEST(HandOffTimerTest, WaitDueWakesWhenTheClockReachesTheEarliest) {
  SimulatedClock clock;
  HandOffTimer timer(clock);
  const absl::Time t = clock.Now();
  timer.Add(1, t + absl::Seconds(1));
  std::vector<int64_t> got;
  absl::Notification done;
  std::thread waiter([&] {
    got = timer.WaitDue(10);
    done.Notify();
  });
  clock.AwaitWaiters(1);
  // An earlier entry moves the wait forward.
  timer.Add(2, t + absl::Milliseconds(500));
  clock.Advance(absl::Milliseconds(499));
  clock.AwaitWaiters(1);
  EXPECT_FALSE(done.HasBeenNotified());
  clock.Advance(absl::Milliseconds(1));
  waiter.join();
  EXPECT_EQ(got, std::vector<int64_t>{2});
}

TEST(HandOffTimerTest, StopEndsEveryWait) {
  SimulatedClock clock;
  HandOffTimer timer(clock);
  std::thread waiter([&] { EXPECT_TRUE(timer.WaitDue(10).empty()); });
  clock.AwaitWaiters(1);
  timer.Stop();
  waiter.join();
  EXPECT_TRUE(timer.WaitDue(10).empty());  // At once.
}

}  // namespace
}  // namespace jobwheel::scheduler
