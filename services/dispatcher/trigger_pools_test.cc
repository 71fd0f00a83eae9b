#include "services/dispatcher/trigger_pools.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"

namespace jobwheel::dispatcher {
namespace {

// Runs one call for `job` that "takes" `took` on the fake clock; it finishes on this thread
// before RunOne returns, so calls (and their timing) never overlap.
TriggerPool RunOne(TriggerPools& pools, FakeClock& clock, int64_t job, absl::Duration took) {
  bool finished = false;
  TriggerPool pool = pools.SubmitAsync(job, [&](std::function<void()> done) {
    clock.Advance(took);
    done();
    finished = true;
  });
  EXPECT_TRUE(finished);
  return pool;
}

TEST(TriggerPoolsTest, JobWithMoreThanTenSlowCallsInAMinuteMovesToSlowPool) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));  // A minute boundary.
  std::atomic<int> latency_reports{0};
  TriggerPools pools(clock, TriggerPools::Options{absl::Milliseconds(500), 10},
                     [&](TriggerPool, absl::Duration) { ++latency_reports; });
  for (int i = 0; i < 11; ++i) {
    EXPECT_EQ(RunOne(pools, clock, 1, absl::Milliseconds(501)), TriggerPool::kFast) << i;
  }
  pools.Shutdown();
  EXPECT_EQ(latency_reports.load(), 11);
  EXPECT_EQ(pools.PoolFor(1), TriggerPool::kSlow);
  EXPECT_EQ(pools.PoolFor(2), TriggerPool::kFast);  // Other jobs are not affected.
}

TEST(TriggerPoolsTest, FastCallsAndNewMinuteKeepJobFast) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));
  absl::BlockingCounter reported(22);
  TriggerPools pools(clock, TriggerPools::Options{absl::Milliseconds(500), 10},
                     [&](TriggerPool, absl::Duration) { reported.DecrementCount(); });
  // Exactly 500 ms is not slow; ten slow ones are not "more than ten".
  for (int i = 0; i < 12; ++i) RunOne(pools, clock, 1, absl::Milliseconds(500));
  for (int i = 0; i < 10; ++i) RunOne(pools, clock, 1, absl::Milliseconds(600));
  reported.Wait();
  EXPECT_EQ(pools.PoolFor(1), TriggerPool::kFast);

  // Eleven slow ones → slow; then a new minute starts afresh.
  TriggerPools pools2(clock, TriggerPools::Options{absl::Milliseconds(500), 10},
                      [&](TriggerPool, absl::Duration) {});
  clock.Set(absl::FromUnixSeconds(1700000060));
  for (int i = 0; i < 11; ++i) RunOne(pools2, clock, 7, absl::Milliseconds(700));
  pools2.Shutdown();
  EXPECT_EQ(pools2.PoolFor(7), TriggerPool::kSlow);
  clock.Set(absl::FromUnixSeconds(1700000120));
  EXPECT_EQ(pools2.PoolFor(7), TriggerPool::kFast);
}

TEST(TriggerPoolsTest, SlowJobRunsOnSlowPoolWhileFastPoolServesOthers) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));
  TriggerPools::Options options{absl::Milliseconds(500), 10};
  options.slow_max_in_flight = 1;
  options.fast_max_in_flight = 1;
  TriggerPools pools(clock, options);
  for (int i = 0; i < 11; ++i) RunOne(pools, clock, 1, absl::Seconds(1));
  ASSERT_EQ(pools.PoolFor(1), TriggerPool::kSlow);
  // Fill the slow pool's only slot with job 1; job 2 still runs on the fast pool.
  std::function<void()> release;
  EXPECT_EQ(pools.SubmitAsync(1, [&](std::function<void()> done) { release = std::move(done); }),
            TriggerPool::kSlow);
  ASSERT_TRUE(release);
  EXPECT_EQ(RunOne(pools, clock, 2, absl::ZeroDuration()), TriggerPool::kFast);
  release();
}

TEST(TriggerPoolsTest, AsyncCallsStartAtOnceUpToTheLimitThenAsOthersFinish) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));
  TriggerPools::Options options{absl::Milliseconds(500), 10};
  options.fast_max_in_flight = 2;
  std::vector<size_t> depths;
  TriggerPools pools(clock, options, nullptr,
                     [&](TriggerPool, size_t d, size_t) { depths.push_back(d); });
  std::vector<std::function<void()>> in_flight;  // Their `done`s; this thread only.
  std::vector<int> started;
  for (int i = 0; i < 4; ++i) {
    bool accepted = false;
    EXPECT_EQ(pools.SubmitAsync(
                  1,
                  [&, i](std::function<void()> done) {
                    started.push_back(i);
                    in_flight.push_back(std::move(done));
                  },
                  &accepted),
              TriggerPool::kFast);
    EXPECT_TRUE(accepted);
  }
  // Two started on the submitting thread, two wait.
  EXPECT_EQ(started, (std::vector<int>{0, 1}));
  EXPECT_EQ(depths.back(), 2u);
  auto finish = [&](size_t k) {
    std::function<void()> done = std::move(in_flight[k]);  // The vector may grow meanwhile.
    done();
  };
  finish(0);  // Its slot goes to the longest waiting call.
  EXPECT_EQ(started, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(depths.back(), 1u);
  finish(1);
  EXPECT_EQ(started, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(depths.back(), 0u);
  finish(2);
  finish(3);
  // Nothing in flight: Shutdown returns, and new calls are refused.
  pools.Shutdown();
  bool accepted = true;
  pools.SubmitAsync(
      1, [](std::function<void()> done) { done(); }, &accepted);
  EXPECT_FALSE(accepted);
}

TEST(TriggerPoolsTest, SlowAsyncCallsMoveTheJobToTheSlowPool) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));
  std::atomic<int> reports{0};
  TriggerPools pools(clock, TriggerPools::Options{absl::Milliseconds(500), 10},
                     [&](TriggerPool, absl::Duration took) {
                       EXPECT_EQ(took, absl::Milliseconds(600));
                       ++reports;
                     });
  for (int i = 0; i < 11; ++i) {
    pools.SubmitAsync(3, [&](std::function<void()> done) {
      clock.Advance(absl::Milliseconds(600));
      done();
    });
  }
  EXPECT_EQ(reports.load(), 11);
  EXPECT_EQ(pools.PoolFor(3), TriggerPool::kSlow);
  EXPECT_EQ(pools.PoolFor(4), TriggerPool::kFast);
}

TEST(TriggerPoolsTest, SlowBatchCallCountsOnceForEachOfItsJobs) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));
  std::atomic<int> reports{0};
  TriggerPools pools(clock, TriggerPools::Options{absl::Milliseconds(500), 10},
                     [&](TriggerPool pool, absl::Duration took) {
                       EXPECT_EQ(pool, TriggerPool::kFast);
                       EXPECT_EQ(took, absl::Milliseconds(600));
                       ++reports;
                     });
  auto slow_call = [&](std::function<void()> done) {
    clock.Advance(absl::Milliseconds(600));
    done();
  };
  // Job 6 has two runs in every call: still one slow call each time.
  for (int i = 0; i < 10; ++i) pools.SubmitBatchAsync(TriggerPool::kFast, {5, 6, 6}, slow_call);
  EXPECT_EQ(reports.load(), 10);  // One latency report per call, not per job.
  EXPECT_EQ(pools.PoolFor(5), TriggerPool::kFast);
  EXPECT_EQ(pools.PoolFor(6), TriggerPool::kFast);
  pools.SubmitBatchAsync(TriggerPool::kFast, {6, 5}, slow_call);
  EXPECT_EQ(pools.PoolFor(5), TriggerPool::kSlow);
  EXPECT_EQ(pools.PoolFor(6), TriggerPool::kSlow);
  EXPECT_EQ(pools.PoolFor(7), TriggerPool::kFast);
}

TEST(TriggerPoolsTest, BatchCallTakesOneSlotOfTheGivenPool) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));
  TriggerPools::Options options{absl::Milliseconds(500), 10};
  options.fast_max_in_flight = 1;
  options.slow_max_in_flight = 1;
  std::vector<std::pair<TriggerPool, size_t>> depths;
  TriggerPools pools(clock, options, nullptr,
                     [&](TriggerPool pool, size_t d, size_t) { depths.emplace_back(pool, d); });
  std::vector<std::function<void()>> in_flight;  // Their `done`s; this thread only.
  std::vector<int> started;
  auto call = [&](int i) {
    return [&, i](std::function<void()> done) {
      started.push_back(i);
      in_flight.push_back(std::move(done));
    };
  };
  bool accepted = false;
  // Job 1 is a fast job, but the caller decides the pool: the slow pool's only slot.
  pools.SubmitBatchAsync(TriggerPool::kSlow, {1, 2}, call(0), &accepted);
  EXPECT_TRUE(accepted);
  pools.SubmitBatchAsync(TriggerPool::kSlow, {3}, call(1), &accepted);
  EXPECT_TRUE(accepted);
  EXPECT_EQ(started, (std::vector<int>{0}));
  EXPECT_EQ(depths.back(), std::make_pair(TriggerPool::kSlow, size_t{1}));
  // The fast pool has its own slot.
  pools.SubmitBatchAsync(TriggerPool::kFast, {1}, call(2), &accepted);
  EXPECT_EQ(started, (std::vector<int>{0, 2}));
  EXPECT_EQ(depths.back(), std::make_pair(TriggerPool::kFast, size_t{0}));
  std::function<void()> done = std::move(in_flight[0]);
  done();  // The slow slot goes to the waiting call.
  EXPECT_EQ(started, (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(depths.back(), std::make_pair(TriggerPool::kSlow, size_t{0}));
  done = std::move(in_flight[1]);
  done();
  done = std::move(in_flight[2]);
  done();
  pools.Shutdown();
  pools.SubmitBatchAsync(TriggerPool::kFast, {1}, call(3), &accepted);
  EXPECT_FALSE(accepted);
  EXPECT_EQ(started.size(), 3u);
}

// Issue 24, item 5: executors slower than the offered rate fill their pool's queue up to its
// bound, then the pool refuses (the caller fails those runs with the reason), never queueing
// without bound; the queue drains in order as calls finish.
TEST(TriggerPoolsTest, AFullQueueRefusesCallsWithTheReason) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));
  TriggerPools::Options options{absl::Milliseconds(500), 10};
  options.fast_max_in_flight = 1;
  options.max_waiting_runs = 5;
  size_t waiting_runs = 0;  // The gauge's value: the runs of the waiting calls.
  TriggerPools pools(clock, options, nullptr, [&](TriggerPool pool, size_t, size_t runs) {
    if (pool == TriggerPool::kFast) waiting_runs = runs;
  });
  std::vector<std::function<void()>> in_flight;
  std::vector<int> started;
  auto call = [&](int i) {
    return [&, i](std::function<void()> done) {
      started.push_back(i);
      in_flight.push_back(std::move(done));
    };
  };
  EXPECT_TRUE(pools.SubmitAppBatchAsync(TriggerPool::kFast, "a", 100, {1}, call(0)).ok());
  EXPECT_TRUE(pools.SubmitAppBatchAsync(TriggerPool::kFast, "a", 3, {2}, call(1)).ok());
  EXPECT_TRUE(pools.SubmitAppBatchAsync(TriggerPool::kFast, "b", 2, {3}, call(2)).ok());
  const absl::Status full = pools.SubmitAppBatchAsync(TriggerPool::kFast, "b", 1, {4}, call(3));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(waiting_runs, 5u);
  EXPECT_EQ(full.message(),
            "dispatcher overloaded: the fast trigger pool has 5 runs waiting for one of its 1 "
            "calls (at most 5); the executors answer slower than runs are offered");
  // The slow pool is not affected.
  EXPECT_TRUE(pools.SubmitAppBatchAsync(TriggerPool::kSlow, "b", 1, {4}, call(4)).ok());
  EXPECT_EQ(started, (std::vector<int>{0, 4}));
  for (size_t i = 0; i < in_flight.size(); ++i) {
    std::function<void()> done = std::move(in_flight[i]);
    done();
  }
  EXPECT_EQ(started, (std::vector<int>{0, 4, 1, 2}));
  EXPECT_EQ(waiting_runs, 0u);
  // Room again once the queue drained.
  EXPECT_TRUE(pools.SubmitAppBatchAsync(TriggerPool::kFast, "b", 5, {5}, call(5)).ok());
  EXPECT_EQ(started.back(), 5);
  std::exchange(in_flight.back(), nullptr)();
  pools.Shutdown();
  EXPECT_EQ(pools.SubmitAppBatchAsync(TriggerPool::kFast, "b", 1, {6}, call(6)).code(),
            absl::StatusCode::kUnavailable);
}

// One app whose executors never answer holds at most its share of the pool's slots: the calls
// of another app still start at once, and waiting calls start app by app in turn.
TEST(TriggerPoolsTest, ASlowAppCannotStallTheCallsOfOthers) {
  FakeClock clock(absl::FromUnixSeconds(1700000000));
  TriggerPools::Options options{absl::Milliseconds(500), 10};
  options.fast_max_in_flight = 4;  // 2 per app.
  TriggerPools pools(clock, options);
  std::map<std::string, std::vector<std::function<void()>>> in_flight;
  std::vector<std::string> started;
  auto call = [&](const std::string& name) {
    return [&, name](std::function<void()> done) {
      started.push_back(name);
      in_flight[name.substr(0, 4)].push_back(std::move(done));
    };
  };
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        pools.SubmitAppBatchAsync(TriggerPool::kFast, "slow", 1, {1}, call(absl::StrCat("slow", i)))
            .ok());
  }
  EXPECT_EQ(started, (std::vector<std::string>{"slow0", "slow1"}));
  ASSERT_TRUE(pools.SubmitAppBatchAsync(TriggerPool::kFast, "fast", 1, {2}, call("fast0")).ok());
  ASSERT_TRUE(pools.SubmitAppBatchAsync(TriggerPool::kFast, "fast", 1, {2}, call("fast1")).ok());
  EXPECT_EQ(started.size(), 4u);
  EXPECT_EQ(started[2], "fast0");
  EXPECT_EQ(started[3], "fast1");
  // The pool is full: a third call of the fast app waits, then goes ahead of the slow app's
  // queue when a fast call finishes (the slow app is at its share).
  ASSERT_TRUE(pools.SubmitAppBatchAsync(TriggerPool::kFast, "fast", 1, {2}, call("fast2")).ok());
  std::function<void()> done = std::move(in_flight["fast"][0]);
  done();
  EXPECT_EQ(started.back(), "fast2");
  // A slow call finishing lets the next slow one start.
  done = std::move(in_flight["slow"][0]);
  done();
  EXPECT_EQ(started.back(), "slow2");
  for (auto& [app, dones] : in_flight) {
    for (size_t i = 0; i < dones.size(); ++i) {
      if (dones[i]) std::exchange(dones[i], nullptr)();
    }
  }
  // Each finish started the next waiting one; run until nothing is left.
  while (true) {
    bool any = false;
    for (auto& [app, dones] : in_flight) {
      for (size_t i = 0; i < dones.size(); ++i) {
        if (dones[i]) {
          std::exchange(dones[i], nullptr)();
          any = true;
        }
      }
    }
    if (!any) break;
  }
  EXPECT_EQ(started.size(), 9u);
  pools.Shutdown();
}

}  // namespace
}  // namespace jobwheel::dispatcher
