#include "services/dispatcher/trigger_sender.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/fake_executor_clients.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kA[] = "127.0.0.1:7201";
constexpr char kB[] = "127.0.0.1:7202";

// The fake executors answer on the calling thread: every answer is in when Send returns.
class TriggerSenderTest : public ::testing::Test {
 protected:
  void Make(TriggerSender::Options options) {
    sender_ = std::make_unique<TriggerSender>(executors_, pools_, metrics_, clock_, options,
                                              [this](TriggerOutcome o) {
                                                absl::MutexLock lock(&mu_);
                                                answers_.push_back(std::move(o));
                                              });
  }

  RoutedRun Run(int64_t run_id, const std::string& address, TriggerPool pool = TriggerPool::kFast) {
    RoutedRun r;
    r.address = address;
    r.pool = pool;
    r.run.request.set_run_id(run_id);
    r.run.request.set_job_id(run_id % 3 + 1);
    *r.run.request.mutable_scheduled_time() = ToProto(clock_.Now());
    r.run.strategy = "first";
    return r;
  }

  std::vector<TriggerOutcome> answers() {
    absl::MutexLock lock(&mu_);
    return answers_;
  }

  // The answers of runs 1 and 2 (to kA, whose call failed) and 3 (to kB): run 3 is RUNNING,
  // the other two FAILED with `failed_suffix`.
  static void ExpectRun3RunningOthersFailed(const std::vector<TriggerOutcome>& got,
                                            const std::string& failed_suffix) {
    int failed = 0;
    for (const TriggerOutcome& o : got) {
      if (o.run_id == 3) {
        EXPECT_EQ(o.status, v1::RUN_STATUS_RUNNING);
        continue;
      }
      ++failed;
      EXPECT_EQ(o.status, v1::RUN_STATUS_FAILED);
      EXPECT_EQ(o.message_suffix, failed_suffix);
    }
    EXPECT_EQ(failed, 2);
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_};
  FakeExecutorClients executors_;
  TriggerPools pools_{clock_, TriggerPools::Options()};
  std::unique_ptr<TriggerSender> sender_;
  absl::Mutex mu_;
  std::vector<TriggerOutcome> answers_ ABSL_GUARDED_BY(mu_);
};

TEST_F(TriggerSenderTest, OneCallPerExecutorAndPoolSplitAtTheBatchLimit) {
  TriggerSender::Options options;
  options.max_runs_per_batch = 4;
  Make(options);
  std::vector<RoutedRun> runs;
  for (int i = 1; i <= 10; ++i) runs.push_back(Run(i, kA));
  for (int i = 11; i <= 13; ++i) runs.push_back(Run(i, kB));
  runs.push_back(Run(14, kA, TriggerPool::kSlow));
  sender_->Send(std::move(runs));
  // Full groups go at once; the rest at the end, in the order the groups began.
  EXPECT_THAT(executors_.batch_calls(),
              ElementsAre(Pair(kA, 4), Pair(kA, 4), Pair(kA, 2), Pair(kB, 3), Pair(kA, 1)));
  EXPECT_EQ(executors_.run_count(), 14u);
  std::vector<TriggerOutcome> got = answers();
  ASSERT_EQ(got.size(), 14u);
  for (const TriggerOutcome& o : got) {
    EXPECT_EQ(o.status, v1::RUN_STATUS_RUNNING);
    EXPECT_EQ(o.message_suffix, "; executor: STARTED");
    EXPECT_EQ(o.at, clock_.Now());
  }
}

TEST_F(TriggerSenderTest, AFailedCallFailsEveryRunInIt) {
  Make(TriggerSender::Options());
  executors_.SetDown(kA, true);
  std::vector<RoutedRun> runs = {Run(1, kA), Run(2, kA), Run(3, kB)};
  sender_->Send(std::move(runs));
  std::vector<TriggerOutcome> got = answers();
  ASSERT_EQ(got.size(), 3u);
  ExpectRun3RunningOthersFailed(got, "; trigger error: UNAVAILABLE: connection refused");
}

// Every executor implements RunBatch: one answering UNIMPLEMENTED fails its runs as any other
// failed call does, with no other attempt (no Run calls), and gets RunBatch again next time.
TEST_F(TriggerSenderTest, RunBatchUnimplementedFailsTheRunsLikeAnyFailedCall) {
  Make(TriggerSender::Options());
  executors_.SetRunBatchError(kA, absl::UnimplementedError("unknown method RunBatch"));
  sender_->Send({Run(1, kA), Run(2, kA), Run(3, kB)});
  EXPECT_THAT(executors_.batch_calls(), ElementsAre(Pair(kA, 2), Pair(kB, 1)));
  ASSERT_EQ(executors_.run_count(), 1u);  // Only kB's run reached an executor.
  EXPECT_EQ(executors_.runs()[0].second.run_id(), 3);
  std::vector<TriggerOutcome> got = answers();
  ASSERT_EQ(got.size(), 3u);
  ExpectRun3RunningOthersFailed(got, "; trigger error: UNIMPLEMENTED: unknown method RunBatch");

  sender_->Send({Run(4, kA)});  // Nothing remembered: RunBatch again.
  EXPECT_THAT(executors_.batch_calls(), ElementsAre(Pair(kA, 2), Pair(kB, 1), Pair(kA, 1)));
  EXPECT_EQ(executors_.run_count(), 1u);
  got = answers();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3].run_id, 4);
  EXPECT_EQ(got[3].status, v1::RUN_STATUS_FAILED);
}

TEST_F(TriggerSenderTest, RunsRefusedByStoppedPoolsAreAnsweredNotTriggered) {
  Make(TriggerSender::Options());
  pools_.Shutdown();
  sender_->Send({Run(1, kA), Run(2, kB)});
  EXPECT_EQ(executors_.run_count(), 0u);
  std::vector<TriggerOutcome> got = answers();
  ASSERT_EQ(got.size(), 2u);
  for (const TriggerOutcome& o : got) {
    EXPECT_EQ(o.status, v1::RUN_STATUS_FAILED);
    EXPECT_EQ(o.message_suffix, "; not triggered: dispatcher shutting down");
  }
}

TEST(OutcomeOfTest, EachDispositionHasItsStatusAndLabel) {
  const absl::Time at = absl::FromUnixSeconds(1700000000);
  std::string label;
  v1::RunResponse r;
  r.set_disposition(v1::RUN_DISPOSITION_QUEUED);
  TriggerOutcome o = OutcomeOf(7, r, at, &label);
  EXPECT_EQ(o.run_id, 7);
  EXPECT_EQ(o.at, at);
  EXPECT_EQ(o.status, v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(o.message_suffix, "; executor: QUEUED");
  EXPECT_EQ(label, "queued");
  r.set_disposition(v1::RUN_DISPOSITION_DISCARDED);
  r.set_message("job 1 is running");
  o = OutcomeOf(7, r, at, &label);
  EXPECT_EQ(o.status, v1::RUN_STATUS_DISCARDED);
  EXPECT_EQ(o.message_suffix, "; executor: DISCARDED (job 1 is running)");
  EXPECT_EQ(label, "discarded");
  r.set_disposition(v1::RUN_DISPOSITION_REJECTED);
  r.set_message("unknown handler echo");
  o = OutcomeOf(7, r, at, &label);
  EXPECT_EQ(o.status, v1::RUN_STATUS_FAILED);
  EXPECT_THAT(o.message_suffix, HasSubstr("executor: REJECTED (unknown handler echo)"));
  EXPECT_EQ(label, "rejected");
  r.clear_disposition();
  r.clear_message();
  o = OutcomeOf(7, r, at, &label);
  EXPECT_EQ(o.status, v1::RUN_STATUS_FAILED);
  EXPECT_EQ(o.message_suffix, "; executor: no disposition");
  o = OutcomeOf(7, absl::DeadlineExceededError("slow"), at, &label);
  EXPECT_EQ(o.status, v1::RUN_STATUS_FAILED);
  EXPECT_EQ(o.message_suffix, "; trigger error: DEADLINE_EXCEEDED: slow");
  EXPECT_EQ(label, "error");
}

// A pool whose queue is full (the executors slower than the offered rate) refuses the call:
// its runs fail at once, naming why, instead of waiting in a queue without bound.
TEST_F(TriggerSenderTest, RunsOfACallTheFullPoolRefusesFailWithTheReason) {
  TriggerPools::Options options;
  options.fast_max_in_flight = 1;
  options.max_waiting_runs = 1;
  TriggerPools pools(clock_, options);
  std::function<void()> held;  // The slot, taken by a call that does not answer yet.
  ASSERT_TRUE(pools
                  .SubmitAppBatchAsync(TriggerPool::kFast, "", 1, {9},
                                       [&](std::function<void()> done) { held = std::move(done); })
                  .ok());
  ASSERT_TRUE(pools
                  .SubmitAppBatchAsync(TriggerPool::kFast, "", 1, {9},
                                       [](std::function<void()> done) { done(); })
                  .ok());  // The queue's one run.
  TriggerSender sender(executors_, pools, metrics_, clock_, TriggerSender::Options(),
                       [this](TriggerOutcome o) {
                         absl::MutexLock lock(&mu_);
                         answers_.push_back(std::move(o));
                       });
  std::vector<RoutedRun> runs;
  runs.push_back(Run(1, kA));
  runs.push_back(Run(2, kA));
  sender.Send(std::move(runs));
  const std::vector<TriggerOutcome> got = answers();
  ASSERT_EQ(got.size(), 2u);
  for (const TriggerOutcome& o : got) {
    EXPECT_EQ(o.status, v1::RUN_STATUS_FAILED);
    EXPECT_THAT(o.message_suffix,
                HasSubstr("; not triggered: dispatcher overloaded: the fast trigger pool has 1 "
                          "runs waiting"));
  }
  EXPECT_TRUE(executors_.batch_calls().empty()) << "a refused call must not reach the executor";
  held();
  pools.Shutdown();
}

}  // namespace
}  // namespace jobwheel::dispatcher
