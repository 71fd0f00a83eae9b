#include "common/time/timer_queue.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

TEST(TimerQueueTest, PopsDueEntriesInOrderToTheMillisecond) {
  TimerQueue q;
  q.Add(3, kT0 + absl::Milliseconds(3));
  q.Add(1, kT0 + absl::Milliseconds(1));
  q.Add(2, kT0 + absl::Milliseconds(2));
  EXPECT_TRUE(q.PopDue(kT0, 10).empty());
  EXPECT_EQ(q.PopDue(kT0 + absl::Milliseconds(1), 10), std::vector<int64_t>({1}));
  EXPECT_EQ(q.PopDue(kT0 + absl::Milliseconds(5), 10), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(q.size(), 0u);
}

TEST(TimerQueueTest, HoldsAnIdOnce) {
  TimerQueue q;
  EXPECT_TRUE(q.Add(7, kT0));
  EXPECT_FALSE(q.Add(7, kT0 + absl::Seconds(1)));
  EXPECT_TRUE(q.Contains(7));
  EXPECT_EQ(q.PopDue(kT0 + absl::Seconds(2), 10), std::vector<int64_t>({7}));
  EXPECT_FALSE(q.Contains(7));
  EXPECT_TRUE(q.Add(7, kT0));
}

TEST(TimerQueueTest, RespectsBatchLimit) {
  TimerQueue q;
  for (int i = 0; i < 10; ++i) q.Add(i, kT0);
  EXPECT_EQ(q.PopDue(kT0, 4).size(), 4u);
  EXPECT_EQ(q.size(), 6u);
}

TEST(TimerQueueTest, ClearDropsEverythingAndWakesTheWaiter) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0 + absl::Hours(1));
  std::vector<int64_t> got = {42};
  std::thread waiter([&] { got = q.WaitDue(clock, 10); });
  clock.AwaitWaiters(1);
  q.Clear();
  waiter.join();
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_FALSE(q.Contains(1));
}

TEST(TimerQueueTest, WaitDueReturnsWhenAnEarlierEntryArrives) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, absl::InfiniteFuture());
  std::vector<int64_t> got;
  std::thread waiter([&] { got = q.WaitDue(clock, 10); });
  clock.AwaitWaiters(1);                  // Waiting without a deadline.
  q.Add(2, kT0 - absl::Milliseconds(1));  // Already due.
  waiter.join();
  EXPECT_EQ(got, std::vector<int64_t>({2}));
}

TEST(TimerQueueTest, WaitDueReturnsAtOnceWhenItsDeadlineHasPassed) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0 + absl::Seconds(1));  // Not due: the clock stands at kT0.
  EXPECT_TRUE(q.WaitDue(clock, 10, kT0).empty());
  EXPECT_EQ(clock.Waiters(), 0);
  EXPECT_TRUE(q.Contains(1));
}

TEST(TimerQueueTest, WaitDueOnAClockWakesWhenTheClockReachesTheEarliestEntry) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0 + absl::Seconds(2));
  q.Add(2, kT0 + absl::Seconds(1));
  std::vector<int64_t> got;
  std::thread waiter([&] { got = q.WaitDue(clock, 10); });
  clock.AwaitWaiters(1);
  clock.Advance(absl::Seconds(1));
  waiter.join();
  EXPECT_EQ(got, std::vector<int64_t>({2}));
  EXPECT_TRUE(q.Contains(1));
}

TEST(TimerQueueTest, WaitDueOnAClockWakesForAnEarlierEntry) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0 + absl::Hours(1));
  std::vector<int64_t> got;
  std::thread waiter([&] { got = q.WaitDue(clock, 10); });
  clock.AwaitWaiters(1);
  q.Add(2, kT0);  // Due now: the waiter must not sleep until the hour is up.
  waiter.join();
  EXPECT_EQ(got, std::vector<int64_t>({2}));
}

TEST(TimerQueueTest, WaitDueOnAClockGivesUpOnTheClock) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0 + absl::Hours(1));
  std::vector<int64_t> got = {-1};
  std::thread waiter([&] { got = q.WaitDue(clock, 10, kT0 + absl::Seconds(3)); });
  clock.AwaitWaiters(1);
  clock.Advance(absl::Seconds(3));
  waiter.join();
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(q.Contains(1));
}

TEST(TimerQueueTest, WakeUpReleasesAClockWaiter) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  std::vector<int64_t> got = {-1};
  std::thread waiter([&] { got = q.WaitDue(clock, 10); });
  clock.AwaitWaiters(1);
  q.WakeUp();
  waiter.join();
  EXPECT_TRUE(got.empty());
}

// An earlier entry moves the wait forward, and the waiter does not return a millisecond early.
TEST(TimerQueueTest, WaitDueOnAClockWaitsForAnEarlierEntryToTheMillisecond) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0 + absl::Seconds(1));
  std::vector<int64_t> got;
  absl::Notification done;
  std::thread waiter([&] {
    got = q.WaitDue(clock, 10);
    done.Notify();
  });
  clock.AwaitWaiters(1);
  q.Add(2, kT0 + absl::Milliseconds(500));
  clock.Advance(absl::Milliseconds(499));
  clock.AwaitWaiters(1);  // Waiting again, on the earlier entry's time.
  EXPECT_FALSE(done.HasBeenNotified());
  clock.Advance(absl::Milliseconds(1));
  waiter.join();
  EXPECT_EQ(got, std::vector<int64_t>({2}));
}

TEST(TimerQueueTest, StopReleasesAClockWaiterAndEveryLaterWait) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0 + absl::Hours(1));
  std::vector<int64_t> got = {-1};
  std::thread waiter([&] { got = q.WaitDue(clock, 10); });
  clock.AwaitWaiters(1);
  q.Stop();
  waiter.join();
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(q.stopped());
  // Later waits return at once and empty, even with an entry due; the entries stay.
  clock.Advance(absl::Hours(2));
  EXPECT_TRUE(q.WaitDue(clock, 10).empty());
  EXPECT_EQ(clock.Waiters(), 0);
  EXPECT_TRUE(q.Contains(1));
  EXPECT_EQ(q.PopDue(clock.Now(), 10), std::vector<int64_t>({1}));
}

// A WakeUp before the waiter waits is lost (the waiter then waits for its entry); a Stop is not:
// a waiter that starts after it returns at once.
TEST(TimerQueueTest, StopBeforeTheWaitIsNotMissedWhereWakeUpIs) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0 + absl::Seconds(1));
  q.WakeUp();
  std::vector<int64_t> got;
  std::thread waiter([&] { got = q.WaitDue(clock, 10); });
  clock.AwaitWaiters(1);  // Waits despite the earlier WakeUp.
  clock.Advance(absl::Seconds(1));
  waiter.join();
  EXPECT_EQ(got, std::vector<int64_t>({1}));

  q.Add(2, kT0);  // Due.
  q.Stop();
  std::thread late([&] { got = q.WaitDue(clock, 10); });
  late.join();  // Returns without the clock moving.
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(q.Contains(2));
}

TEST(TimerQueueTest, AfterStopAWaitReturnsEmptyEvenWithAnEntryDue) {
  SimulatedClock clock(kT0);
  TimerQueue q;
  q.Add(1, kT0);
  q.Stop();
  EXPECT_TRUE(q.WaitDue(clock, 10).empty());
  EXPECT_TRUE(q.Contains(1));
}

}  // namespace
}  // namespace jobwheel
