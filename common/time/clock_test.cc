#include "common/time/clock.h"

#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(SimulatedClockTest, SleepUntilReturnsOnceTimeIsAdvancedPastTheDeadline) {
  SimulatedClock clock;
  const absl::Time deadline = clock.Now() + absl::Seconds(10);
  std::thread sleeper([&] { clock.SleepUntil(deadline); });
  clock.AwaitWaiters(1);
  clock.Advance(absl::Seconds(9));
  EXPECT_EQ(clock.Waiters(), 1);  // Still asleep: its deadline is a second away.
  clock.Advance(absl::Seconds(1));
  sleeper.join();
  EXPECT_EQ(clock.Waiters(), 0);
}

TEST(SimulatedClockTest, AwaitWithDeadlineReturnsTrueWhenTheConditionBecomesTrue) {
  SimulatedClock clock;
  absl::Mutex mu;
  bool ready = false;
  bool result = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitWithDeadline(&mu, absl::Condition(&ready), clock.Now() + absl::Hours(1));
  });
  clock.AwaitWaiters(1);
  {
    absl::MutexLock lock(&mu);
    ready = true;
  }
  waiter.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(clock.Waiters(), 0);  // It took its wake-up back.
}

TEST(SimulatedClockTest, AwaitWithDeadlineReturnsFalseAtTheDeadline) {
  SimulatedClock clock;
  absl::Mutex mu;
  bool ready = false;
  bool result = true;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitWithDeadline(&mu, absl::Condition(&ready), clock.Now() + absl::Seconds(5));
  });
  clock.AwaitWaiters(1);
  clock.Advance(absl::Seconds(5));
  waiter.join();
  EXPECT_FALSE(result);
}

TEST(SimulatedClockTest, APastDeadlineDoesNotWait) {
  SimulatedClock clock;
  absl::Mutex mu;
  bool ready = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(clock.AwaitWithDeadline(&mu, absl::Condition(&ready), clock.Now()));
  clock.SleepUntil(clock.Now() - absl::Seconds(1));
  EXPECT_EQ(clock.Waiters(), 0);
}

TEST(RealClockTest, AwaitWithDeadlineTimesOut) {
  absl::Mutex mu;
  bool ready = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(RealClock::Get().AwaitWithDeadline(&mu, absl::Condition(&ready),
                                                  RealClock::Get().Now() + absl::Milliseconds(5)));
}

}  // namespace
}  // namespace jobwheel
