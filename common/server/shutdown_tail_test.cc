#include "common/server/shutdown_tail.h"

#include <signal.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/base/signals.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(ShutdownTailTest, SignalThenDrainingForTheDelayFromTheSignalThenTheStepsInOrder) {
  BlockTerminationSignals();  // Before any thread: the tail's thread inherits the mask.
  SimulatedClock clock;
  Readiness readiness(clock);
  const absl::Time start = clock.Now();
  absl::Mutex mu;
  std::vector<std::string> steps;
  auto record = [&](const std::string& step) {
    absl::MutexLock lock(&mu);
    steps.push_back(step);
  };
  ShutdownTail tail;
  tail.service = "test service";
  tail.drain_delay = absl::Seconds(3);
  tail.drain = [&] {
    record(readiness.draining() ? "drain while draining" : "drain while ready");
    clock.Advance(absl::Seconds(1));  // The drain itself takes a second of the delay.
  };
  tail.shutdown = {[&] { record("first"); }, [&] { record("second"); }};
  int sig = 0;
  std::thread waiter([&] { sig = AwaitSignalThenShutDown(readiness, clock, tail); });

  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
  clock.AwaitWaiters(1);  // Drained, now waiting out the rest of the delay.
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(clock.Now() - start, absl::Seconds(2));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(steps, std::vector<std::string>{"drain while draining"});
  }
  clock.Advance(absl::Seconds(1));  // 3 s after the signal.
  waiter.join();

  EXPECT_EQ(sig, SIGTERM);
  EXPECT_FALSE(readiness.ready());
  EXPECT_EQ(steps, (std::vector<std::string>{"drain while draining", "first", "second"}));
}

}  // namespace
}  // namespace jobwheel
