// Monitors on a FakeFireStore, driven by a SimulatedClock: follow-ups (retries, alarms,
// children), lost and stale runs, retention and the loop. The SQL is tested against
// PostgreSQL in pg_fire_store_test.
#include "services/scheduler/monitors.h"

#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/scheduler/fake_fire_store.h"
#include "services/scheduler/fake_fire_store_rows.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::RunStatus;

class MonitorsTest : public ::testing::Test {
 protected:
  MonitorsTest() : store_(clock_), metrics_(registry_) {
    store_.SetLeader(true);
    options_.lost_after = absl::Minutes(10);
    options_.pending_timeout = absl::Seconds(60);
    options_.retention = absl::Hours(24);
    monitors_ = std::make_unique<Monitors>(options_, store_, clock_, metrics_);
  }

  int64_t Job(int retries, std::vector<int64_t> children = {}) {
    jobwheel::v1::Job job;
    job.set_app("demo");
    job.set_name("j");
    job.set_enabled(true);
    job.set_fail_retry_count(retries);
    for (int64_t c : children) job.add_child_job_ids(c);
    job.add_alarm_contacts("ops@example.com");
    return store_.AddJob(job);
  }

  // A fire and one run of `job` in `status`, at `attempt`.
  int64_t Run(int64_t job, RunStatus status, int attempt = 0) {
    return AddRunOf(store_, clock_.Now(), job, status, attempt);
  }

  // The alarms queued in the outbox.
  std::vector<AlarmEvent> Alarms() {
    std::vector<AlarmEvent> out;
    for (const auto& row : store_.alarm_outbox().rows()) out.push_back(row.event);
    return out;
  }

  std::vector<FakeFireStore::FireRow> FiresOf(jobwheel::v1::TriggerType type) {
    std::vector<FakeFireStore::FireRow> out;
    for (const auto& f : store_.fires()) {
      if (f.trigger_type == type) out.push_back(f);
    }
    return out;
  }

  // The sum of a counter's or gauge's series, those with label `label`=`value` when given.
  double Counter(const std::string& name, const std::string& label = "",
                 const std::string& value = "") {
    double total = 0;
    for (const auto& family : registry_.Collect()) {
      if (family.name != name) continue;
      for (const auto& m : family.metric) {
        bool match = label.empty();
        for (const auto& l : m.label) match = match || (l.name == label && l.value == value);
        if (match) total += m.counter.value + m.gauge.value;
      }
    }
    return total;
  }

  SimulatedClock clock_;
  FakeFireStore store_;
  prometheus::Registry registry_;
  SchedulerMetrics metrics_;
  Monitors::Options options_;
  std::unique_ptr<Monitors> monitors_;
};

TEST_F(MonitorsTest, FailedRunWithRetriesLeftGetsOneRetryFire) {
  const int64_t job = Job(/*retries=*/2);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_FAILED, /*attempt=*/0);
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->retries, 1);
  auto retries = FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY);
  ASSERT_EQ(retries.size(), 1u);
  EXPECT_EQ(retries[0].status, jobwheel::v1::FIRE_STATUS_PENDING);
  EXPECT_EQ(retries[0].attempt, 1);
  EXPECT_EQ(retries[0].parent_run_id, run);
  EXPECT_EQ(retries[0].scheduled, clock_.Now());
  // Followed up once: a second pass adds nothing.
  counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->retries, 0);
  EXPECT_EQ(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).size(), 1u);
  EXPECT_TRUE(Alarms().empty());
  EXPECT_EQ(Counter("jobwheel_scheduler_retries_total"), 1);
}

TEST_F(MonitorsTest, RetriesSpentRaisesOneAlarm) {
  const int64_t job = Job(/*retries=*/1);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_TIMED_OUT, /*attempt=*/1);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_TRUE(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).empty());
  auto events = Alarms();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].run_id, run);
  EXPECT_EQ(events[0].kind, AlarmKind::kRunFailed);
  EXPECT_EQ(events[0].key, absl::StrCat("run_failed/", run));
  EXPECT_EQ(events[0].status, "RUN_STATUS_TIMED_OUT");
  EXPECT_EQ(events[0].contacts, std::vector<std::string>({"ops@example.com"}));
  EXPECT_TRUE(store_.run(run)->alarm_sent);
}

TEST_F(MonitorsTest, AlarmsAreQueuedOncePerKeyAndNeverSentByThePass) {
  Run(Job(0), jobwheel::v1::RUN_STATUS_FAILED);
  // Two no-executor failures of one job within the hour: one alarm.
  const int64_t lonely = Job(0);
  for (int i = 0; i < 2; ++i) {
    FakeFireStore::FireRow fire;
    fire.job_id = lonely;
    fire.scheduled = clock_.Now();
    fire.status = jobwheel::v1::FIRE_STATUS_FAILED;
    FakeFireStore::RunRow run;
    run.fire_id = store_.AddFire(fire);
    run.job_id = lonely;
    run.status = jobwheel::v1::RUN_STATUS_FAILED;
    run.executor_address = "";
    run.trigger_message = "no executor online for app demo";
    run.trigger_time = clock_.Now();
    store_.AddRun(run);
  }
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->alarms, 2);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  auto rows = store_.alarm_outbox().rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].event.kind, AlarmKind::kRunFailed);
  EXPECT_EQ(rows[1].event.kind, AlarmKind::kNoExecutor);
  for (const auto& row : rows) EXPECT_FALSE(row.sent_at.has_value());
  EXPECT_EQ(Counter("jobwheel_scheduler_alarms_total", "outcome", "queued"), 2);
  EXPECT_EQ(Counter("jobwheel_scheduler_alarms_total", "outcome", "sent"), 0);
}

TEST_F(MonitorsTest, ALostRunAlarmsEvenWithRetriesLeft) {
  const int64_t run = Run(Job(/*retries=*/3), jobwheel::v1::RUN_STATUS_LOST);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).size(), 1u);
  auto events = Alarms();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, AlarmKind::kRunLost);
  EXPECT_EQ(events[0].run_id, run);
}

TEST_F(MonitorsTest, AJobWhoseScheduleCannotBeComputedIsStoppedVisiblyWithOneAlarm) {
  jobwheel::v1::Job job;
  job.set_app("demo");
  job.set_name("broken");
  job.set_enabled(true);
  job.mutable_schedule()->mutable_cron()->set_expression("not a cron");
  const int64_t id = store_.AddJob(job);
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->stopped_jobs, 1);
  EXPECT_EQ(counts->alarms, 1);
  const auto stopped = store_.job(id);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_FALSE(stopped->enabled());
  EXPECT_NE(stopped->schedule_error().find("cannot be computed"), std::string::npos);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  auto events = Alarms();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, AlarmKind::kScheduleError);
  EXPECT_EQ(events[0].job_id, id);
}

TEST_F(MonitorsTest, SucceededRunTriggersEachChildOnce) {
  const int64_t a = Job(0);
  const int64_t b = Job(0);
  const int64_t parent = Job(0, {a, b});
  const int64_t run = Run(parent, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->children, 2);
  auto children = FiresOf(jobwheel::v1::TRIGGER_TYPE_PARENT);
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(children[0].job_id, a);
  EXPECT_EQ(children[1].job_id, b);
  EXPECT_EQ(children[0].parent_run_id, run);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(FiresOf(jobwheel::v1::TRIGGER_TYPE_PARENT).size(), 2u);
}

TEST_F(MonitorsTest, KilledAndDiscardedRunsAreNotRetried) {
  const int64_t job = Job(3);
  const int64_t killed = Run(job, jobwheel::v1::RUN_STATUS_KILLED);
  Run(job, jobwheel::v1::RUN_STATUS_DISCARDED);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_TRUE(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).empty());
  EXPECT_TRUE(Alarms().empty());
  EXPECT_TRUE(store_.run(killed)->followup_done);
}

TEST_F(MonitorsTest, RunsOfADeletedJobAreOnlyMarkedDone) {
  const int64_t job = Job(3);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_FAILED);
  store_.DeleteJob(job);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_TRUE(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).empty());
  EXPECT_TRUE(Alarms().empty());
  EXPECT_TRUE(store_.run(run)->followup_done);
}

TEST_F(MonitorsTest, RunningOnAnOfflineExecutorBecomesLostAfterTheLimit) {
  const int64_t job = Job(0);
  const int64_t lost = Run(job, jobwheel::v1::RUN_STATUS_RUNNING);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(store_.run(lost)->status, jobwheel::v1::RUN_STATUS_RUNNING);  // Too early.
  clock_.Advance(absl::Minutes(10));
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(store_.run(lost)->status, jobwheel::v1::RUN_STATUS_RUNNING);  // Not past it.
  clock_.Advance(absl::Seconds(1));
  FakeFireStore::ExecutorRow alive_executor;
  alive_executor.address = "127.0.0.9:1";
  store_.SetExecutors({alive_executor});
  FakeFireStore::RunRow alive;
  alive.job_id = job;
  alive.fire_id = store_.fires()[0].id;
  alive.status = jobwheel::v1::RUN_STATUS_RUNNING;
  alive.executor_address = "127.0.0.9:1";
  alive.start_time = clock_.Now() - absl::Hours(1);
  const int64_t alive_id = store_.AddRun(alive);
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->lost, 1);
  EXPECT_EQ(store_.run(lost)->status, jobwheel::v1::RUN_STATUS_LOST);
  EXPECT_EQ(store_.run(alive_id)->status, jobwheel::v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(Counter("jobwheel_scheduler_lost_runs_total"), 1);
}

TEST_F(MonitorsTest, RunsOfAnExecutorThatRestartedBecomeLostAfterTheGrace) {
  const int64_t job = Job(0);
  clock_.Advance(-absl::Seconds(60));
  const int64_t orphan = Run(job, jobwheel::v1::RUN_STATUS_RUNNING);  // Old process.
  clock_.Advance(absl::Seconds(55));
  const int64_t current = Run(job, jobwheel::v1::RUN_STATUS_RUNNING);  // New process.
  clock_.Advance(absl::Seconds(5));
  auto register_executor = [&](absl::Duration process_age) {
    FakeFireStore::ExecutorRow e;
    e.address = "127.0.0.1:7200";
    e.process_start_us = std::to_string(absl::ToUnixMicros(clock_.Now() - process_age));
    store_.SetExecutors({e});
  };
  // Within the grace (1 s) the new process may still replay its predecessor's results.
  register_executor(absl::Milliseconds(500));
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(store_.run(orphan)->status, jobwheel::v1::RUN_STATUS_RUNNING);
  register_executor(absl::Seconds(30));
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->lost, 1);
  EXPECT_EQ(store_.run(orphan)->status, jobwheel::v1::RUN_STATUS_LOST);
  EXPECT_EQ(store_.run(current)->status, jobwheel::v1::RUN_STATUS_RUNNING);
}

TEST_F(MonitorsTest, PendingRunWhoseTriggerNeverCompletedFails) {
  const int64_t run = Run(Job(0), jobwheel::v1::RUN_STATUS_PENDING);
  clock_.Advance(absl::Seconds(60));
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(store_.run(run)->status, jobwheel::v1::RUN_STATUS_PENDING);
  clock_.Advance(absl::Seconds(1));
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->stale_pending, 1);
  EXPECT_EQ(store_.run(run)->status, jobwheel::v1::RUN_STATUS_FAILED);
}

TEST_F(MonitorsTest, RetentionDeletesOnlyOldFinishedHistoryInBatches) {
  const int64_t job = Job(0);
  std::vector<int64_t> old_runs;
  for (int i = 0; i < 1500; ++i) old_runs.push_back(Run(job, jobwheel::v1::RUN_STATUS_SUCCEEDED));
  clock_.Advance(absl::Hours(48));
  const int64_t new_run = Run(job, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  // Follow-ups done first (500 per pass).
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(monitors_->RunOnce().ok());
  const int before = store_.operations();
  auto deleted = monitors_->Retain();
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 3000);  // 1,500 runs, then their 1,500 fires.
  // 1,000 runs and their 1,000 fires; 500 and 500; none.
  EXPECT_EQ(store_.operations() - before, 3);
  EXPECT_FALSE(store_.run(old_runs[0]).has_value());
  EXPECT_TRUE(store_.run(new_run).has_value());
  EXPECT_EQ(store_.fires().size(), 1u);  // The fire still referenced by a run stays.
}

TEST_F(MonitorsTest, TheLoopRunsEveryIntervalWhileLeading) {
  const int64_t job = Job(/*retries=*/5);
  monitors_->Start();
  clock_.AwaitWaiters(1);
  Run(job, jobwheel::v1::RUN_STATUS_FAILED);
  store_.SetLeader(false);
  clock_.Advance(options_.interval);
  clock_.AwaitWaiters(1);
  EXPECT_TRUE(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).empty());  // Not leading.
  store_.SetLeader(true);
  clock_.Advance(options_.interval - absl::Milliseconds(1));
  clock_.AwaitWaiters(1);
  EXPECT_TRUE(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).empty());  // Not yet.
  clock_.Advance(absl::Milliseconds(1));
  clock_.AwaitWaiters(1);
  EXPECT_EQ(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).size(), 1u);
  EXPECT_EQ(Counter("jobwheel_scheduler_jobs"), 1);
  monitors_->Shutdown();
}

// An executor row as the registry leaves it: offline since `offline_since`, or online with its
// current process registered at `instance_since`.
FakeFireStore::ExecutorRow Executor(bool online, std::optional<absl::Time> offline_since,
                                    std::optional<absl::Time> instance_since) {
  FakeFireStore::ExecutorRow e;
  e.address = "127.0.0.1:7200";  // Where Run() puts runs.
  e.online = online;
  e.offline_since = offline_since;
  e.instance_since = instance_since;
  return e;
}

TEST_F(MonitorsTest, RunsOfAnExecutorTakenOfflineAreLostAfterTheGraceAndRetriedInTheSamePass) {
  std::vector<FireStore::LostRun> told;
  monitors_->SetLostRunsListener([&](const std::vector<FireStore::LostRun>& runs) { told = runs; });
  const int64_t job = Job(/*retries=*/1);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_RUNNING);  // Started just now.
  store_.SetExecutors({Executor(false, clock_.Now(), clock_.Now() - absl::Hours(1))});
  clock_.Advance(options_.offline_grace - absl::Milliseconds(1));
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(store_.run(run)->status, jobwheel::v1::RUN_STATUS_RUNNING);  // Within the grace.
  clock_.Advance(absl::Milliseconds(1));
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->lost, 1);
  EXPECT_EQ(counts->retries, 1);  // The same pass follows the LOST run up.
  EXPECT_EQ(store_.run(run)->status, jobwheel::v1::RUN_STATUS_LOST);
  ASSERT_EQ(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY).size(), 1u);
  EXPECT_EQ(FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY)[0].attempt, 1);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].run_id, run);
  EXPECT_EQ(told[0].executor_address, "127.0.0.1:7200");
  EXPECT_EQ(told[0].reason, FireStore::LostReason::kExecutorOffline);
  EXPECT_EQ(Counter("jobwheel_scheduler_runs_lost_total", "reason", "executor_offline"), 1);
  EXPECT_EQ(Counter("jobwheel_scheduler_runs_lost_total", "reason", "executor_restarted"), 0);
}

TEST_F(MonitorsTest, TheSameProcessReconnectingWithinTheGraceKeepsItsRuns) {
  const int64_t run = Run(Job(1), jobwheel::v1::RUN_STATUS_RUNNING);
  const absl::Time registered = clock_.Now() - absl::Hours(1);
  store_.SetExecutors({Executor(false, clock_.Now(), registered)});
  clock_.Advance(options_.offline_grace / 2);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  // Back online, the same process (instance_since unchanged, offline_since cleared).
  store_.SetExecutors({Executor(true, std::nullopt, registered)});
  clock_.Advance(absl::Minutes(1));
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->lost, 0);
  EXPECT_EQ(store_.run(run)->status, jobwheel::v1::RUN_STATUS_RUNNING);
}

TEST_F(MonitorsTest, ANewProcessUnderTheAddressLosesItsPredecessorsRunsAfterTheRestartGrace) {
  const int64_t job = Job(0);
  const int64_t orphan = Run(job, jobwheel::v1::RUN_STATUS_RUNNING);
  clock_.Advance(absl::Seconds(2));
  // A new process registered (faster than the offline grace: the row never looked offline).
  store_.SetExecutors({Executor(true, std::nullopt, clock_.Now())});
  clock_.Advance(absl::Seconds(2));
  const int64_t current = Run(job, jobwheel::v1::RUN_STATUS_RUNNING);  // On the new process.
  ASSERT_GE(options_.restart_grace, absl::Seconds(1));
  store_.SetExecutors({Executor(true, std::nullopt,
                                clock_.Now() - options_.restart_grace + absl::Milliseconds(1))});
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(store_.run(orphan)->status, jobwheel::v1::RUN_STATUS_RUNNING);  // Within the grace.
  clock_.Advance(absl::Milliseconds(1));
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->lost, 1);
  EXPECT_EQ(store_.run(orphan)->status, jobwheel::v1::RUN_STATUS_LOST);
  EXPECT_EQ(store_.run(current)->status, jobwheel::v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(Counter("jobwheel_scheduler_runs_lost_total", "reason", "executor_restarted"), 1);
}

TEST_F(MonitorsTest, AnExecutorChangeWakesAPassAfterTheGraceBeforeTheInterval) {
  ASSERT_GT(options_.interval, options_.offline_grace + options_.wake_margin);
  const int64_t run = Run(Job(1), jobwheel::v1::RUN_STATUS_RUNNING);
  monitors_->Start();
  clock_.AwaitWaiters(1);
  store_.SetExecutors({Executor(false, clock_.Now(), clock_.Now() - absl::Hours(1))});
  monitors_->OnExecutorChanged();
  clock_.Advance(options_.offline_grace + options_.wake_margin);
  // The periodic pass is still interval - grace away; only the wake-up makes the run LOST.
  const absl::Time deadline = RealClock::Get().Now() + absl::Seconds(10);
  while (store_.run(run)->status != jobwheel::v1::RUN_STATUS_LOST &&
         RealClock::Get().Now() < deadline) {
    RealClock::Get().SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(store_.run(run)->status, jobwheel::v1::RUN_STATUS_LOST);
  EXPECT_LT(clock_.Now() - store_.run(run)->start_time.value(), options_.interval);
  monitors_->Shutdown();
}

}  // namespace
}  // namespace jobwheel::scheduler
