#include "sdk/internal/run_manager.h"

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

TEST_F(RunManagerTest, KillRunningEndsKilled) {
  Make({{"block", gate_.Block()}});
  Submit(Req(1, 7, "block"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  RunManager::KillOutcome k = manager_->Kill(1, "operator");
  EXPECT_TRUE(k.killed);
  ASSERT_TRUE(WaitResult(1));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_EQ(sink_.Get(1).message(), "killed: operator");
  EXPECT_THAT(gate_.reasons(), ElementsAre(CancelReason::kKilled));
  // Gone: a second kill and an unknown run say not here.
  EXPECT_FALSE(manager_->Kill(1, "again").killed);
  RunManager::KillOutcome unknown = manager_->Kill(999, "");
  EXPECT_FALSE(unknown.killed);
  EXPECT_THAT(unknown.message, HasSubstr("999"));
  EXPECT_EQ(sink_.CountFor(1), 1);
}

TEST_F(RunManagerTest, KillQueuedRemovesItWithoutRunning) {
  Make({{"block", gate_.Block()}});
  Submit(Req(1, 7, "block"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  Submit(Req(2, 7, "block"));
  EXPECT_TRUE(manager_->Kill(2, "").killed);
  ASSERT_TRUE(WaitResult(2));
  EXPECT_EQ(sink_.Get(2).status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_EQ(manager_->JobLoad(7).queued, 0);
  // Its log is closed (written) before the result is reported.
  EXPECT_THAT(LogFile(2), HasSubstr("ended: KILLED"));
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_FALSE(gate_.Started(2));
}

TEST_F(RunManagerTest, RejectsUnknownHandlerAndScriptsWithoutOptIn) {
  Make({{"echo", [](JobContext&) { return Result::Ok(); }}});
  auto r = Submit(Req(1, 7, "nope"));
  EXPECT_EQ(r.disposition, jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_THAT(r.message, HasSubstr("\"nope\" is not registered"));
  EXPECT_THAT(r.message, HasSubstr("echo"));
  RunRequest script = Req(2, 7, "");
  script.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  script.set_script_source("echo hi");
  auto s = Submit(script);
  EXPECT_EQ(s.disposition, jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_EQ(s.message, "scripts are disabled on this executor");
  EXPECT_EQ(sink_.size(), 0u);
  EXPECT_FALSE(manager_->IsActive(1));
}

TEST_F(RunManagerTest, RepeatedRunIdIsNotRunTwice) {
  Make({{"block", gate_.Block()}});
  Submit(Req(1, 7, "block"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  auto again = Submit(Req(1, 7, "block"));
  EXPECT_THAT(again.message, HasSubstr("already accepted"));
  EXPECT_EQ(manager_->JobLoad(7).queued, 0);
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
  auto after = Submit(Req(1, 7, "block"));
  EXPECT_EQ(after.disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_THAT(after.message, HasSubstr("already ran"));
  EXPECT_THAT(gate_.started(), ElementsAre(1));
  EXPECT_EQ(sink_.CountFor(1), 1);
}

TEST_F(RunManagerTest, ARunForgottenByTheLedgerIsKnownByItsLog) {
  RunManagerOptions options;
  options.recent_runs = 2;  // Runs 1 and 2 are forgotten once 3 and 4 have ended.
  Make({{"block", gate_.Block()}}, options);
  gate_.Open();
  for (int64_t id = 1; id <= 4; ++id) {
    Submit(Req(id, 7, "block"));
    ASSERT_TRUE(WaitResult(id));
  }
  auto again = Submit(Req(1, 7, "block"));
  EXPECT_EQ(again.disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_THAT(again.message, HasSubstr("its run log exists"));
  EXPECT_THAT(gate_.started(), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(sink_.CountFor(1), 1);
}

TEST_F(RunManagerTest, ShutdownLetsRunsFinishWithinGrace) {
  Make({{"short", [](JobContext& ctx) {
           ctx.SleepFor(absl::Milliseconds(100));
           return Result::Ok("finished");
         }}});
  Submit(Req(1, 7, "short"));
  Submit(Req(2, 7, "short"));  // Queued: also finishes within the grace.
  manager_->Shutdown(absl::Seconds(10), absl::Seconds(5));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(sink_.Get(2).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
}

TEST_F(RunManagerTest, ShutdownFailsRunsBeyondGrace) {
  Make({{"block", gate_.Block()}});
  Submit(Req(1, 7, "block"));
  Submit(Req(2, 7, "block"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  manager_->Shutdown(absl::Milliseconds(100), absl::Seconds(5));
  for (int64_t id : {1, 2}) {
    ASSERT_TRUE(sink_.Has(id));
    EXPECT_EQ(sink_.Get(id).status(), jobwheel::v1::RUN_STATUS_FAILED);
    EXPECT_EQ(sink_.Get(id).message(), "executor shut down");
  }
  EXPECT_THAT(gate_.reasons(), ElementsAre(CancelReason::kShutdown));
  EXPECT_FALSE(gate_.Started(2));
  auto late = manager_->Submit(Req(3, 7, "block"));
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->disposition, jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_EQ(late->message, "shutting down");
  EXPECT_EQ(sink_.CountFor(1), 1);
}

TEST_F(RunManagerTest, ShutdownDetachesAHandlerThatNeverReturns) {
  Make({{"ignore", gate_.Block(/*honour_cancel=*/false)}});
  Submit(Req(1, 7, "ignore"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  const absl::Time start = RealClock::Get().Now();
  manager_->Shutdown(absl::Milliseconds(50), absl::Milliseconds(100));
  EXPECT_LT(RealClock::Get().Now() - start, absl::Seconds(5));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_FAILED);
  manager_.reset();  // The detached thread must not touch the destroyed manager...
  gate_.Open();      // ...when its handler finally returns.
  ASSERT_TRUE(Eventually([&] { return gate_.reasons().size() == 1; }, kWait));
  EXPECT_EQ(sink_.CountFor(1), 1);
}

}  // namespace
}  // namespace jobwheel::sdk
