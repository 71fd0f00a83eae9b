#include "sdk/internal/run_threads.h"

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

TEST_F(RunManagerTest, IdleWorkersRetire) {
  RunManagerOptions options;
  options.worker_idle_timeout = absl::Seconds(30);
  Make({{"echo", [](JobContext&) { return Result::Ok(); }}}, options, sim_);
  Submit(Req(1, 1, "echo"));
  Submit(Req(2, 2, "echo"));
  ASSERT_TRUE(WaitResult(1) && WaitResult(2));
  const size_t threads = manager_->WorkerThreads();
  ASSERT_GE(threads, 1u);
  sim_.AwaitWaiters(static_cast<int>(threads));  // All idle, waiting for their timeout.
  sim_.Advance(absl::Seconds(29));
  sim_.AwaitWaiters(static_cast<int>(threads));
  EXPECT_EQ(manager_->WorkerThreads(), threads);  // Not yet.
  sim_.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return manager_->WorkerThreads() == 0; }, kWait));
  // A new run after retirement gets a fresh worker.
  Submit(Req(3, 1, "echo"));
  ASSERT_TRUE(WaitResult(3));
  EXPECT_EQ(sink_.Get(3).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
}

TEST_F(RunManagerTest, ManyJobsShareAFewThreads) {
  Make({{"echo", [](JobContext&) { return Result::Ok(); }}});
  // 300 jobs, one run each, one after the other: one thread does them all.
  for (int64_t id = 1; id <= 300; ++id) {
    Submit(Req(id, 1000 + id, "echo"));
    ASSERT_TRUE(WaitResult(id)) << id;
  }
  EXPECT_EQ(manager_->WorkerThreads(), 1u);
  EXPECT_EQ(RunsTotal("succeeded"), 300);
}

TEST_F(RunManagerTest, ABatchOfBlockingRunsAllStartWithIdleAndNewThreads) {
  Gate first;
  Make({{"first", first.Block()}, {"block", gate_.Block()}});
  // Three threads, idle once their runs are done.
  for (int64_t id = 1; id <= 3; ++id) Submit(Req(id, id, "first"));
  ASSERT_TRUE(Eventually([&] { return first.started().size() == 3u; }, kWait));
  first.Open();
  for (int64_t id = 1; id <= 3; ++id) ASSERT_TRUE(WaitResult(id)) << id;
  ASSERT_EQ(manager_->WorkerThreads(), 3u);
  // A batch of eight runs that block: idle threads are woken one after the other and new
  // ones started for the rest, so every run starts although none finishes.
  for (int64_t id = 11; id <= 18; ++id) {
    EXPECT_EQ(Submit(Req(id, id, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  }
  ASSERT_TRUE(Eventually([&] { return gate_.started().size() == 8u; }, kWait));
  EXPECT_EQ(manager_->WorkerThreads(), 8u);
  gate_.Open();
  for (int64_t id = 11; id <= 18; ++id) ASSERT_TRUE(WaitResult(id)) << id;
}

TEST_F(RunManagerTest, RunsBeyondMaxThreadsWaitTheirTurn) {
  RunManagerOptions options;
  options.max_threads = 3;
  Make({{"block", gate_.Block()}}, options);
  for (int64_t id = 1; id <= 10; ++id) {
    EXPECT_EQ(Submit(Req(id, id, "block")).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  }
  ASSERT_TRUE(Eventually([&] { return gate_.started().size() == 3u; }, kWait));
  EXPECT_EQ(manager_->WorkerThreads(), 3u);
  EXPECT_EQ(metrics_.queue_depth.Value(), 7);
  gate_.Open();
  for (int64_t id = 1; id <= 10; ++id) ASSERT_TRUE(WaitResult(id)) << id;
  EXPECT_EQ(gate_.max_active(), 3);
  EXPECT_EQ(manager_->WorkerThreads(), 3u);
}

}  // namespace
}  // namespace jobwheel::sdk
