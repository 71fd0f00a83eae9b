#include "sdk/internal/lane.h"

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

// The block strategies themselves, without threads.
TEST(LanesTest, AdmitAppliesTheBlockStrategy) {
  Lanes lanes;
  Admission first = lanes.Admit(7, jobwheel::v1::BLOCK_STRATEGY_SERIAL_EXECUTION);
  EXPECT_EQ(first.kind, Admission::Kind::kStart);
  ASSERT_NE(first.lane, nullptr);
  auto running = std::make_shared<RunState>();
  running->request.set_run_id(1);
  first.lane->current = running;
  auto queued = std::make_shared<RunState>();
  queued->request.set_run_id(2);
  first.lane->queue.push_back(queued);

  Admission serial = lanes.Admit(7, jobwheel::v1::BLOCK_STRATEGY_UNSPECIFIED);
  EXPECT_EQ(serial.kind, Admission::Kind::kQueue);
  EXPECT_EQ(serial.lane, first.lane);
  EXPECT_EQ(serial.blocker, 1);
  Admission discard = lanes.Admit(7, jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER);
  EXPECT_EQ(discard.kind, Admission::Kind::kDiscard);
  EXPECT_EQ(discard.blocker, 1);
  EXPECT_EQ(lanes.Admit(8, jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER).kind,
            Admission::Kind::kStart);  // Another job is idle.

  Admission cover = lanes.Admit(7, jobwheel::v1::BLOCK_STRATEGY_COVER_EARLY);
  EXPECT_EQ(cover.kind, Admission::Kind::kStart);
  EXPECT_NE(cover.lane, first.lane);  // A fresh lane; the covered run ends on the old one.
  EXPECT_EQ(cover.covered_running, running);
  ASSERT_EQ(cover.covered_queued.size(), 1u);
  EXPECT_EQ(cover.covered_queued[0], queued);
  EXPECT_TRUE(first.lane->queue.empty());

  lanes.DropIfIdle(first.lane);  // No longer the job's lane: nothing happens.
  EXPECT_EQ(lanes.Admit(7, jobwheel::v1::BLOCK_STRATEGY_SERIAL_EXECUTION).lane, cover.lane);
  lanes.DropIfIdle(cover.lane);
  EXPECT_NE(lanes.Admit(7, jobwheel::v1::BLOCK_STRATEGY_SERIAL_EXECUTION).lane, cover.lane);
}

TEST_F(RunManagerTest, SerialExecutionQueuesInOrder) {
  Make({{"block", gate_.Block()}});
  EXPECT_EQ(Submit(Req(1, 7, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  auto second = Submit(Req(2, 7, "block"));
  EXPECT_EQ(second.disposition, jobwheel::v1::RUN_DISPOSITION_QUEUED);
  EXPECT_THAT(second.message, HasSubstr("run 1"));
  // Unspecified block strategy means SERIAL_EXECUTION.
  EXPECT_EQ(Submit(Req(3, 7, "block", jobwheel::v1::BLOCK_STRATEGY_UNSPECIFIED)).disposition,
            jobwheel::v1::RUN_DISPOSITION_QUEUED);
  RunManager::Load load = manager_->JobLoad(7);
  EXPECT_EQ(load.running, 1);
  EXPECT_EQ(load.queued, 2);
  EXPECT_EQ(manager_->JobLoad(8).running + manager_->JobLoad(8).queued, 0);
  RunManager::Snapshot snap = manager_->GetSnapshot();
  EXPECT_THAT(snap.running_job_ids, ElementsAre(7));
  EXPECT_EQ(snap.queued, 2);
  EXPECT_EQ(metrics_.queue_depth.Value(), 2);
  EXPECT_EQ(metrics_.running.Value(), 1);

  gate_.Open();
  ASSERT_TRUE(WaitResult(1) && WaitResult(2) && WaitResult(3));
  ASSERT_TRUE(Eventually([&] { return metrics_.running.Value() == 0; }, kWait));
  EXPECT_EQ(metrics_.queue_depth.Value(), 0);
  EXPECT_THAT(gate_.started(), ElementsAre(1, 2, 3));
  EXPECT_EQ(gate_.max_active(), 1);  // Never two runs of the job at once.
  for (int64_t id : {1, 2, 3}) {
    RunResult r = sink_.Get(id);
    EXPECT_EQ(r.status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
    EXPECT_EQ(r.code(), 200);
    EXPECT_EQ(r.message(), absl::StrCat("done ", id));
    EXPECT_EQ(r.executor_address(), "127.0.0.1:7200");
    EXPECT_TRUE(r.has_start_time());
    EXPECT_LE(FromProto(r.start_time()), FromProto(r.end_time()));
  }
  EXPECT_EQ(RunsTotal("succeeded"), 3);
  EXPECT_THAT(LogText(2), HasSubstr("queued behind run 1"));
  EXPECT_THAT(LogText(2), HasSubstr("handler of run 2 returns"));
  EXPECT_THAT(LogText(2), HasSubstr("ended: SUCCEEDED"));
}

TEST_F(RunManagerTest, DifferentJobsRunConcurrently) {
  Make({{"block", gate_.Block()}});
  EXPECT_EQ(Submit(Req(1, 1, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_EQ(Submit(Req(2, 2, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(Eventually([&] { return gate_.max_active() == 2; }, kWait));
  gate_.Open();
  ASSERT_TRUE(WaitResult(1) && WaitResult(2));
}

TEST_F(RunManagerTest, DiscardLaterDiscardsWhileRunningOrQueued) {
  Make({{"block", gate_.Block()}});
  EXPECT_EQ(Submit(Req(1, 7, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  auto d = Submit(Req(2, 7, "block", jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER));
  EXPECT_EQ(d.disposition, jobwheel::v1::RUN_DISPOSITION_DISCARDED);
  EXPECT_THAT(d.message, HasSubstr("DISCARD_LATER"));
  EXPECT_THAT(d.message, HasSubstr("run 1"));
  // No log either: the log made before the decision is discarded, no file was created.
  EXPECT_EQ(logs_.Read(2, 1, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LogFile(2), "<absent>");
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
  EXPECT_FALSE(sink_.Has(2));  // A discarded run was never accepted: no result.
  EXPECT_FALSE(gate_.Started(2));
  // Idle again: accepted.
  EXPECT_EQ(Submit(Req(3, 7, "block", jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER)).disposition,
            jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(WaitResult(3));
}

TEST_F(RunManagerTest, CoverEarlyCancelsRunningAndQueuedRuns) {
  Make({{"block", gate_.Block()}});
  EXPECT_EQ(Submit(Req(1, 7, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  EXPECT_EQ(Submit(Req(2, 7, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_QUEUED);
  auto c = Submit(Req(3, 7, "block", jobwheel::v1::BLOCK_STRATEGY_COVER_EARLY));
  EXPECT_EQ(c.disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(WaitResult(1) && WaitResult(2));
  for (int64_t id : {1, 2}) {
    RunResult r = sink_.Get(id);
    EXPECT_EQ(r.status(), jobwheel::v1::RUN_STATUS_DISCARDED) << id;
    EXPECT_EQ(r.message(), "covered by run 3");
  }
  EXPECT_FALSE(sink_.Get(2).has_start_time());  // Never started.
  EXPECT_FALSE(gate_.Started(2));
  EXPECT_THAT(gate_.reasons(), ElementsAre(CancelReason::kCovered));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(3); }, kWait));
  EXPECT_FALSE(sink_.Has(3));
  gate_.Open();
  ASSERT_TRUE(WaitResult(3));
  EXPECT_EQ(sink_.Get(3).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(sink_.CountFor(1), 1);
  EXPECT_EQ(RunsTotal("discarded"), 2);
}

TEST_F(RunManagerTest, CoverEarlyOnIdleJobJustStarts) {
  Make({{"block", gate_.Block()}});
  gate_.Open();
  auto c = Submit(Req(1, 7, "block", jobwheel::v1::BLOCK_STRATEGY_COVER_EARLY));
  EXPECT_EQ(c.disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(WaitResult(1));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
}

}  // namespace
}  // namespace jobwheel::sdk
