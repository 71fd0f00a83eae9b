#include "sdk/internal/run_watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sdk/internal/run_manager_test_util.h"

namespace jobwheel::sdk {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST_F(RunManagerTest, TimeoutEndsTimedOut) {
  Make({{"block", gate_.Block()}}, {}, sim_);
  RunRequest r = Req(1, 7, "block");
  *r.mutable_timeout() = ToProtoDuration(absl::Milliseconds(100));
  Submit(r);
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  sim_.AwaitWaiters(1);  // The watchdog waits for the deadline.
  sim_.Advance(absl::Milliseconds(99));
  sim_.AwaitWaiters(1);
  EXPECT_FALSE(sink_.Has(1));
  sim_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(WaitResult(1));
  RunResult result = sink_.Get(1);
  EXPECT_EQ(result.status(), jobwheel::v1::RUN_STATUS_TIMED_OUT);
  EXPECT_EQ(result.code(), 502);
  EXPECT_THAT(result.message(), HasSubstr("timed out after 100ms"));
  EXPECT_THAT(gate_.reasons(), ElementsAre(CancelReason::kTimedOut));
}

TEST_F(RunManagerTest, TimeoutFollowsTheInjectedClock) {
  SimulatedClock& clock = sim_;
  absl::Mutex mu;
  absl::Time deadline_seen = absl::InfinitePast();
  Make({{"block",
         [&](JobContext& ctx) {
           {
             absl::MutexLock lock(&mu);
             deadline_seen = ctx.deadline();
           }
           return gate_.Block()(ctx);
         }}},
       {}, clock);
  const absl::Time start = clock.Now();
  RunRequest r = Req(1, 7, "block");
  *r.mutable_timeout() = ToProtoDuration(absl::Seconds(10));
  Submit(r);
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  clock.Advance(absl::Seconds(11));
  ASSERT_TRUE(WaitResult(1));
  RunResult result = sink_.Get(1);
  EXPECT_EQ(result.status(), jobwheel::v1::RUN_STATUS_TIMED_OUT);
  EXPECT_EQ(FromProto(result.start_time()), start);
  EXPECT_EQ(FromProto(result.end_time()), start + absl::Seconds(11));
  manager_->Shutdown(absl::Seconds(5), absl::Seconds(5));  // Before `clock` goes away.
  absl::MutexLock lock(&mu);
  EXPECT_EQ(deadline_seen, start + absl::Seconds(10));
}

TEST_F(RunManagerTest, HandlerIgnoringCancellationIsReportedAfterGraceAndLateResultDropped) {
  RunManagerOptions options;
  options.cancel_grace = absl::Milliseconds(200);
  Make({{"ignore", gate_.Block(/*honour_cancel=*/false)}}, options, sim_);
  Submit(Req(1, 7, "ignore"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  EXPECT_TRUE(manager_->Kill(1, "stuck").killed);
  sim_.AwaitWaiters(1);  // The watchdog waits for the end of the grace.
  sim_.Advance(absl::Milliseconds(199));
  sim_.AwaitWaiters(1);
  EXPECT_FALSE(sink_.Has(1));
  sim_.Advance(absl::Milliseconds(1));
  // Reported while the handler is still running.
  ASSERT_TRUE(WaitResult(1));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_TRUE(manager_->IsActive(1));  // The thread is still in the handler.
  EXPECT_EQ(manager_->JobLoad(7).running, 1);
  // SERIAL: the next run of the job waits for the stuck handler.
  EXPECT_EQ(Submit(Req(2, 7, "ignore")).disposition, jobwheel::v1::RUN_DISPOSITION_QUEUED);
  gate_.Open();
  ASSERT_TRUE(WaitResult(2));
  ASSERT_TRUE(Eventually([&] { return !manager_->IsActive(1); }, kWait));
  EXPECT_EQ(sink_.CountFor(1), 1);  // The handler's late Ok was dropped.
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_THAT(LogText(1), HasSubstr("is dropped"));
}

}  // namespace
}  // namespace jobwheel::sdk
