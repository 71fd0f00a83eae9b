// Run ids are executed at most once by the RunManager: repeated submissions, fences (GetRuns)
// and runs known only by their log on disk (an earlier process).

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sdk/internal/run_manager.h"
#include "sdk/internal/run_manager_test_util.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::v1::RunPresenceState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

RunPresenceState One(RunManager& m, int64_t id, bool fence) {
  std::vector<RunPresenceState> states = m.Presence({id}, fence);
  EXPECT_EQ(states.size(), 1u);
  return states.empty() ? RunPresenceState() : states[0];
}

TEST_F(RunManagerTest, FencedRunIdIsRejectedLaterAndNeverRuns) {
  Make({{"block", gate_.Block()}});
  std::vector<RunPresenceState> states = manager_->Presence({5, 6}, /*fence=*/true);
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].run_id(), 5);
  EXPECT_EQ(states[0].presence(), jobwheel::v1::RUN_PRESENCE_FENCED);
  EXPECT_EQ(states[1].presence(), jobwheel::v1::RUN_PRESENCE_FENCED);

  auto late = Submit(Req(5, 7, "block"));
  EXPECT_EQ(late.disposition, jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_THAT(late.message, HasSubstr("fenced"));
  EXPECT_FALSE(manager_->IsActive(5));
  // Still fenced, asked again with or without fence.
  EXPECT_EQ(One(*manager_, 5, false).presence(), jobwheel::v1::RUN_PRESENCE_FENCED);
  EXPECT_EQ(One(*manager_, 5, true).presence(), jobwheel::v1::RUN_PRESENCE_FENCED);

  // Another run of the job still runs: only the fenced id is refused.
  Submit(Req(7, 7, "block"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(7); }, kWait));
  gate_.Open();
  ASSERT_TRUE(WaitResult(7));
  EXPECT_THAT(gate_.started(), ElementsAre(7));
  EXPECT_FALSE(sink_.Has(5));
  EXPECT_EQ(LogFile(5), "<absent>");
}

TEST_F(RunManagerTest, PresenceWithoutFenceFencesNothing) {
  Make({{"block", gate_.Block()}});
  EXPECT_EQ(One(*manager_, 9, false).presence(), jobwheel::v1::RUN_PRESENCE_NOT_SEEN);
  EXPECT_EQ(Submit(Req(9, 7, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(Eventually([&] { return gate_.Started(9); }, kWait));
}

TEST_F(RunManagerTest, PresenceFollowsARunUntilItEnds) {
  Make({{"block", gate_.Block()}});
  Submit(Req(1, 7, "block"));
  Submit(Req(2, 7, "block"));  // Queued behind 1.
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  std::vector<RunPresenceState> states = manager_->Presence({2, 1}, /*fence=*/true);
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].presence(), jobwheel::v1::RUN_PRESENCE_QUEUED);
  EXPECT_EQ(states[1].presence(), jobwheel::v1::RUN_PRESENCE_RUNNING);
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
  ASSERT_TRUE(WaitResult(2));
  ASSERT_TRUE(Eventually([&] { return !manager_->IsActive(2); }, kWait));
  RunPresenceState ended = One(*manager_, 1, true);
  EXPECT_EQ(ended.presence(), jobwheel::v1::RUN_PRESENCE_ENDED);
  EXPECT_EQ(ended.status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(ended.message(), "done 1");
  EXPECT_THAT(gate_.started(), ElementsAre(1, 2));
}

TEST_F(RunManagerTest, RefusedRunIdGetsTheSameAnswerAndNeverRuns) {
  Make({{"block", gate_.Block()}});
  Submit(Req(1, 7, "block", jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  auto busy = Submit(Req(2, 7, "block", jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER));
  EXPECT_EQ(busy.disposition, jobwheel::v1::RUN_DISPOSITION_DISCARDED);
  RunPresenceState refused = One(*manager_, 2, true);
  EXPECT_EQ(refused.presence(), jobwheel::v1::RUN_PRESENCE_REFUSED);
  EXPECT_EQ(refused.status(), jobwheel::v1::RUN_STATUS_DISCARDED);
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
  ASSERT_TRUE(Eventually([&] { return !manager_->IsActive(1); }, kWait));
  // The job is idle now, but run 2 was refused: a repeated trigger does not run it.
  auto again = Submit(Req(2, 7, "block", jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER));
  EXPECT_EQ(again.disposition, jobwheel::v1::RUN_DISPOSITION_DISCARDED);
  EXPECT_THAT(again.message, HasSubstr("already refused"));
  EXPECT_THAT(gate_.started(), ElementsAre(1));
}

TEST_F(RunManagerTest, ConcurrentSubmissionsOfOneRunIdRunItOnce) {
  std::atomic<int> executions{0};
  Make({{"count", [&](JobContext&) {
           ++executions;
           return Result::Ok();
         }}});
  std::vector<std::thread> threads;
  std::atomic<int> started_answers{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      auto outcome = manager_->Submit(Req(42, 7, "count"));
      if (outcome.ok() && outcome->disposition != jobwheel::v1::RUN_DISPOSITION_REJECTED) {
        ++started_answers;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(WaitResult(42));
  ASSERT_TRUE(Eventually([&] { return !manager_->IsActive(42); }, kWait));
  EXPECT_EQ(Submit(Req(42, 7, "count")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_EQ(started_answers.load(), 8);
  EXPECT_EQ(executions.load(), 1);
  EXPECT_EQ(sink_.CountFor(42), 1);
}

TEST_F(RunManagerTest, ARestartedExecutorKnowsRunsByTheirLog) {
  std::atomic<int> executions{0};
  HandlerMap handlers = {{"count", [&](JobContext& ctx) {
                            ctx.Log("counted");
                            ++executions;
                            return Result::Ok();
                          }}};
  Make(handlers);
  Submit(Req(11, 7, "count"));
  Submit(Req(13, 8, "count"));
  ASSERT_TRUE(WaitResult(11));
  ASSERT_TRUE(WaitResult(13));
  manager_->Shutdown(absl::Seconds(5), absl::Seconds(5));
  manager_.reset();
  logs_.Shutdown();
  ASSERT_THAT(LogFile(11), HasSubstr("counted"));

  // A new process: a fresh log store over the same directory, a fresh manager.
  RunLogStore reopened(dir_ + "/logs", RealClock::Get());
  ASSERT_TRUE(reopened.Init().ok());
  CollectingSink sink;
  RunManagerOptions options;
  options.executor_address = "127.0.0.1:7200";
  RunManager restarted(options, handlers, &reopened, nullptr, &sink, RealClock::Get(), metrics_);
  restarted.Start();
  auto again = restarted.Submit(Req(11, 7, "count"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_THAT(again->message, HasSubstr("run log exists"));
  RunPresenceState known = One(restarted, 11, /*fence=*/true);
  EXPECT_EQ(known.presence(), jobwheel::v1::RUN_PRESENCE_ENDED);
  EXPECT_THAT(known.message(), HasSubstr("run log exists"));
  // Asked first by GetRuns, another run of the earlier process is ENDED, not fenced.
  EXPECT_EQ(One(restarted, 13, /*fence=*/true).presence(), jobwheel::v1::RUN_PRESENCE_ENDED);
  auto again13 = restarted.Submit(Req(13, 7, "count"));
  ASSERT_TRUE(again13.ok());
  EXPECT_EQ(again13->disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_THAT(again13->message, HasSubstr("already ran"));
  // A new run id still runs.
  ASSERT_TRUE(restarted.Submit(Req(12, 7, "count")).ok());
  ASSERT_TRUE(Eventually([&] { return sink.Has(12); }, kWait));
  restarted.Shutdown(absl::Seconds(5), absl::Seconds(5));
  EXPECT_EQ(executions.load(), 3);  // 11 and 13 before the restart, 12 after.
  EXPECT_FALSE(sink.Has(11));
  EXPECT_FALSE(sink.Has(13));
}

}  // namespace
}  // namespace jobwheel::sdk
