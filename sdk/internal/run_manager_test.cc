#include "sdk/internal/run_manager.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/result_sink.h"
#include "sdk/internal/run_log.h"
#include "sdk/internal/script_runner.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::testing::Eventually;
using ::jobwheel::v1::RunRequest;
using ::jobwheel::v1::RunResult;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(10);

// Collects reported results.
class CollectingSink : public ResultSink {
 public:
  void Submit(const RunResult& result) override {
    absl::MutexLock lock(&mu_);
    results_.push_back(result);
  }
  int CountFor(int64_t run_id) const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& r : results_) n += r.run_id() == run_id;
    return n;
  }
  bool Has(int64_t run_id) const { return CountFor(run_id) > 0; }
  RunResult Get(int64_t run_id) const {
    absl::MutexLock lock(&mu_);
    for (const auto& r : results_) {
      if (r.run_id() == run_id) return r;
    }
    return RunResult();
  }
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return results_.size();
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<RunResult> results_;
};

// Handlers the tests control: "block" waits for the gate or cancellation, "ignore" waits for
// the gate only (ignores cancellation).
class Gate {
 public:
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  HandlerFn Block(bool honour_cancel = true) {
    return [this, honour_cancel](JobContext& ctx) {
      {
        absl::MutexLock lock(&mu_);
        started_.push_back(ctx.run_id());
        ++active_;
        max_active_ = std::max(max_active_, active_);
      }
      auto ready = [this, &ctx, honour_cancel]() {
        return open_ || (honour_cancel && ctx.cancelled());
      };
      absl::MutexLock lock(&mu_);
      while (!ready()) mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(10));
      --active_;
      reasons_.push_back(ctx.cancel_reason());
      ctx.Log(absl::StrCat("handler of run ", ctx.run_id(), " returns"));
      return Result::Ok(absl::StrCat("done ", ctx.run_id()));
    };
  }
  std::vector<int64_t> started() const {
    absl::MutexLock lock(&mu_);
    return started_;
  }
  bool Started(int64_t run_id) const {
    auto s = started();
    return std::find(s.begin(), s.end(), run_id) != s.end();
  }
  int max_active() const {
    absl::MutexLock lock(&mu_);
    return max_active_;
  }
  std::vector<CancelReason> reasons() const {
    absl::MutexLock lock(&mu_);
    return reasons_;
  }

 private:
  mutable absl::Mutex mu_;
  bool open_ = false;
  std::vector<int64_t> started_;
  std::vector<CancelReason> reasons_;
  int active_ = 0;
  int max_active_ = 0;
};

RunRequest Req(
    int64_t run_id, int64_t job_id, const std::string& handler,
    jobwheel::v1::BlockStrategy strategy = jobwheel::v1::BLOCK_STRATEGY_SERIAL_EXECUTION) {
  RunRequest r;
  r.set_run_id(run_id);
  r.set_job_id(job_id);
  r.set_fire_id(run_id + 1000);
  r.set_handler(handler);
  r.set_block_strategy(strategy);
  r.set_trigger_type(jobwheel::v1::TRIGGER_TYPE_CRON);
  return r;
}

class RunManagerTest : public ::testing::Test {
 protected:
  RunManagerTest()
      : dir_(jobwheel::testing::TestTempDir(
            ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        metrics_(registry_),
        logs_(dir_ + "/logs", RealClock::Get()) {}

  void SetUp() override { ASSERT_TRUE(logs_.Init().ok()); }
  void TearDown() override {
    gate_.Open();
    if (manager_ != nullptr) manager_->Shutdown(absl::Seconds(5), absl::Seconds(5));
  }

  void Make(HandlerMap handlers, RunManagerOptions options = {},
            const Clock& clock = RealClock::Get()) {
    options.executor_address = "127.0.0.1:7200";
    if (options.allow_scripts) {
      ScriptRunnerOptions so;
      so.scripts_dir = dir_ + "/logs/scripts";
      so.kill_grace = absl::Milliseconds(500);
      scripts_ = std::make_unique<ScriptRunner>(so);
    }
    manager_ = std::make_unique<RunManager>(options, std::move(handlers), &logs_, scripts_.get(),
                                            &sink_, clock, metrics_);
    manager_->Start();
  }

  RunManager::SubmitOutcome Submit(const RunRequest& r) {
    auto outcome = manager_->Submit(r);
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    return outcome.ok() ? *outcome : RunManager::SubmitOutcome{};
  }

  bool WaitResult(int64_t run_id) {
    return Eventually([&] { return sink_.Has(run_id); }, kWait);
  }

  std::string LogText(int64_t run_id) {
    auto page = logs_.Read(run_id, 1, 1000);
    if (!page.ok()) return page.status().ToString();
    return absl::StrJoin(page->lines, "\n");
  }

  // The run's log as on disk: read by a second store, which does not see the lines logs_
  // still buffers.
  std::string LogFile(int64_t run_id) {
    RunLogOptions options;
    options.background_flush = false;
    RunLogStore disk(dir_ + "/logs", RealClock::Get(), options);
    if (!disk.Init().ok()) return "<init failed>";
    auto page = disk.Read(run_id, 1, 1000);
    if (!page.ok()) return "<absent>";
    std::string text;
    for (const std::string& line : page->lines) absl::StrAppend(&text, line, "\n");
    return text;
  }

  double RunsTotal(absl::string_view status) { return metrics_.RunsTotal(status).Value(); }

  std::string dir_;
  prometheus::Registry registry_;
  ExecutorMetrics metrics_;
  RunLogStore logs_;
  CollectingSink sink_;
  Gate gate_;
  std::unique_ptr<ScriptRunner> scripts_;
  std::unique_ptr<RunManager> manager_;
};

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

TEST_F(RunManagerTest, RunLogIsWrittenWhenTheRunEnds) {
  Make({{"block", gate_.Block()}});
  Submit(Req(1, 7, "block"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  // Hold the run's open log, so only Close (not its destruction) can write it.
  bool created = true;
  auto held = logs_.Create(1, &created);
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(created);
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
  // Closed before the result is reported: every line is in the file now.
  const std::string file = LogFile(1);
  EXPECT_THAT(file, HasSubstr("run 1 accepted"));
  EXPECT_THAT(file, HasSubstr("run 1 started"));
  EXPECT_THAT(file, HasSubstr("handler of run 1 returns"));
  EXPECT_THAT(file, HasSubstr("run 1 ended: SUCCEEDED"));
  EXPECT_EQ(LogText(1) + "\n", file);
}

TEST_F(RunManagerTest, ALongRunsLinesReachTheFileWithinTheFlushInterval) {
  HandlerFn block = gate_.Block();
  Make({{"long", [block](JobContext& ctx) {
           ctx.Log("working");
           return block(ctx);
         }}});
  Submit(Req(1, 7, "long"));
  EXPECT_TRUE(Eventually([&] { return LogFile(1).find("working") != std::string::npos; }, kWait));
  EXPECT_TRUE(manager_->IsActive(1));
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
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

TEST_F(RunManagerTest, TimeoutEndsTimedOut) {
  Make({{"block", gate_.Block()}});
  RunRequest r = Req(1, 7, "block");
  *r.mutable_timeout() = ToProtoDuration(absl::Milliseconds(100));
  Submit(r);
  ASSERT_TRUE(WaitResult(1));
  RunResult result = sink_.Get(1);
  EXPECT_EQ(result.status(), jobwheel::v1::RUN_STATUS_TIMED_OUT);
  EXPECT_EQ(result.code(), 502);
  EXPECT_THAT(result.message(), HasSubstr("timed out after 100ms"));
  EXPECT_THAT(gate_.reasons(), ElementsAre(CancelReason::kTimedOut));
}

TEST_F(RunManagerTest, TimeoutFollowsTheInjectedClock) {
  FakeClock clock;
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

TEST_F(RunManagerTest, HandlerIgnoringCancellationIsReportedAfterGraceAndLateResultDropped) {
  RunManagerOptions options;
  options.cancel_grace = absl::Milliseconds(200);
  Make({{"ignore", gate_.Block(/*honour_cancel=*/false)}}, options);
  Submit(Req(1, 7, "ignore"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  EXPECT_TRUE(manager_->Kill(1, "stuck").killed);
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

TEST_F(RunManagerTest, InvalidRequestsNameTheField) {
  Make({{"echo", [](JobContext&) { return Result::Ok(); }}});
  auto check = [&](RunRequest r, const std::string& field) {
    auto outcome = manager_->Submit(r);
    ASSERT_FALSE(outcome.ok()) << field;
    EXPECT_EQ(outcome.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(outcome.status().message()), HasSubstr(field));
  };
  check(Req(0, 7, "echo"), "run_id");
  check(Req(1, 0, "echo"), "job_id");
  check(Req(1, 7, ""), "handler");
  RunRequest shard = Req(1, 7, "echo");
  shard.set_shard_total(2);
  shard.set_shard_index(2);
  check(shard, "shard_index");
  RunRequest timeout = Req(1, 7, "echo");
  timeout.mutable_timeout()->set_seconds(-1);
  check(timeout, "timeout");
  RunRequest script = Req(1, 7, "");
  script.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON);
  check(script, "script_source");
  RunRequest glue = Req(1, 7, "echo");
  glue.set_glue_type(static_cast<jobwheel::v1::GlueType>(42));
  check(glue, "glue_type");
}

TEST_F(RunManagerTest, HandlerFailureAndExceptionFail) {
  Make({{"fail", [](JobContext&) { return Result::Fail(418, "teapot"); }},
        {"throw", [](JobContext&) -> Result { throw std::runtime_error("boom"); }}});
  Submit(Req(1, 1, "fail"));
  Submit(Req(2, 2, "throw"));
  ASSERT_TRUE(WaitResult(1) && WaitResult(2));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_EQ(sink_.Get(1).code(), 418);
  EXPECT_EQ(sink_.Get(1).message(), "teapot");
  EXPECT_EQ(sink_.Get(2).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_THAT(sink_.Get(2).message(), HasSubstr("boom"));
}

TEST_F(RunManagerTest, ContextCarriesTheRequest) {
  absl::Mutex mu;
  RunInfo seen;
  Make({{"look", [&](JobContext& ctx) {
           absl::MutexLock lock(&mu);
           seen = ctx.info();
           return Result::Ok();
         }}});
  RunRequest r = Req(5, 9, "look");
  r.set_param("p=1");
  r.set_shard_index(2);
  r.set_shard_total(4);
  r.set_attempt(3);
  r.set_trigger_type(jobwheel::v1::TRIGGER_TYPE_RETRY);
  *r.mutable_scheduled_time() = ToProto(absl::FromUnixSeconds(1700000000));
  Submit(r);
  ASSERT_TRUE(WaitResult(5));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(seen.run_id, 5);
  EXPECT_EQ(seen.job_id, 9);
  EXPECT_EQ(seen.fire_id, 1005);
  EXPECT_EQ(seen.param, "p=1");
  EXPECT_EQ(seen.shard_index, 2);
  EXPECT_EQ(seen.shard_total, 4);
  EXPECT_EQ(seen.attempt, 3);
  EXPECT_EQ(seen.trigger_type, TriggerType::kRetry);
  EXPECT_EQ(seen.scheduled_time, absl::FromUnixSeconds(1700000000));
  EXPECT_EQ(seen.deadline, absl::InfiniteFuture());
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

TEST_F(RunManagerTest, IdleWorkersRetire) {
  RunManagerOptions options;
  options.worker_idle_timeout = absl::Milliseconds(50);
  Make({{"echo", [](JobContext&) { return Result::Ok(); }}}, options);
  Submit(Req(1, 1, "echo"));
  Submit(Req(2, 2, "echo"));
  ASSERT_TRUE(WaitResult(1) && WaitResult(2));
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
  const absl::Time start = absl::Now();
  manager_->Shutdown(absl::Milliseconds(50), absl::Milliseconds(100));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_FAILED);
  manager_.reset();  // The detached thread must not touch the destroyed manager...
  gate_.Open();      // ...when its handler finally returns.
  ASSERT_TRUE(Eventually([&] { return gate_.reasons().size() == 1; }, kWait));
  EXPECT_EQ(sink_.CountFor(1), 1);
}

TEST_F(RunManagerTest, ShellScriptRunsWithArgsAndExitCode) {
  RunManagerOptions options;
  options.allow_scripts = true;
  Make({}, options);
  RunRequest r = Req(1, 7, "");
  r.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  r.set_script_source("echo \"args: $1 $2 $3\"\necho oops >&2\nexit 3\n");
  r.set_script_version(4);
  r.set_param("hello");
  r.set_shard_index(1);
  r.set_shard_total(2);
  EXPECT_EQ(Submit(r).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(WaitResult(1));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_EQ(sink_.Get(1).code(), 3);
  EXPECT_THAT(LogText(1), HasSubstr("args: hello 1 2"));
  EXPECT_THAT(LogText(1), HasSubstr("oops"));
  std::ifstream source(dir_ + "/logs/scripts/7_v4.sh");
  EXPECT_TRUE(source.good());

  RunRequest ok = Req(2, 8, "");
  ok.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  ok.set_script_source("exit 0\n");
  Submit(ok);
  ASSERT_TRUE(WaitResult(2));
  EXPECT_EQ(sink_.Get(2).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
}

bool ProcessGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  // A zombie waiting for a reaper that is not ours counts as gone.
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string content((std::istreambuf_iterator<char>(stat)), {});
  size_t close = content.rfind(')');
  return close != std::string::npos && close + 2 < content.size() && content[close + 2] == 'Z';
}

TEST_F(RunManagerTest, KilledScriptTakesItsChildrenWithIt) {
  RunManagerOptions options;
  options.allow_scripts = true;
  Make({}, options);
  const std::string pid_file = dir_ + "/child.pid";
  RunRequest r = Req(1, 7, "");
  r.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  r.set_script_source("sleep 100 &\necho $! > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"\nwait\n");
  r.set_param(pid_file);
  Submit(r);
  pid_t child = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        std::ifstream in(pid_file);
        return static_cast<bool>(in >> child);
      },
      kWait));
  ASSERT_FALSE(ProcessGone(child));
  EXPECT_TRUE(manager_->Kill(1, "stop").killed);
  ASSERT_TRUE(WaitResult(1));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_TRUE(Eventually([&] { return ProcessGone(child); }, kWait)) << "sleep " << child;
}

}  // namespace
}  // namespace jobwheel::sdk
