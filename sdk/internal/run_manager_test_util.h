#ifndef JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_TEST_UTIL_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_TEST_UTIL_H_

// What the tests of the run manager's parts share: a RunManager on a real or simulated clock
// with a result sink that collects, and handlers the tests hold at a gate.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/result_sink.h"
#include "sdk/internal/run_log_store.h"
#include "sdk/internal/run_manager.h"
#include "sdk/internal/script_runner.h"

namespace jobwheel::sdk {

using ::jobwheel::testing::Eventually;
using ::jobwheel::v1::RunRequest;
using ::jobwheel::v1::RunResult;

inline constexpr absl::Duration kWait = absl::Seconds(10);

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

inline RunRequest Req(
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

  void Make(HandlerMap handlers, RunManagerOptions options = {}, Clock& clock = RealClock::Get()) {
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
  SimulatedClock sim_;  // For the tests that drive time (Make(..., sim_)).
  std::unique_ptr<RunManager> manager_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_TEST_UTIL_H_
