// The leader's monitors against a real PostgreSQL, with an injected clock for the time limits.
#include "services/scheduler/monitors.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/pg_test_db.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace jobwheel::scheduler {
namespace {

class RecordingAlarm : public Alarm {
 public:
  absl::Status Send(const AlarmEvent& e) override {
    absl::MutexLock lock(&mu_);
    events_.push_back(e);
    return absl::OkStatus();
  }
  std::vector<AlarmEvent> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  absl::Mutex mu_;
  std::vector<AlarmEvent> events_ ABSL_GUARDED_BY(mu_);
};

class MonitorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    conn_ = std::make_unique<pqxx::connection>(*dsn);
    clock_.Set(absl::Now());
    elector_ = std::make_unique<LeaderElector>(
        LeaderElector::Options{*dsn, "m", absl::Milliseconds(20), absl::Milliseconds(50)},
        LeaderElector::Callbacks{});
    elector_->Start();
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!elector_->is_leader() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
    ASSERT_TRUE(elector_->is_leader());
    metrics_ = std::make_unique<SchedulerMetrics>(registry_);
    Monitors::Options options;
    options.lost_after = absl::Minutes(10);
    options.pending_timeout = absl::Seconds(60);
    options.retention = absl::Hours(24);
    monitors_ = std::make_unique<Monitors>(options, *elector_, alarm_, clock_, *metrics_);
  }
  void TearDown() override { elector_->Shutdown(); }

  int64_t Exec(const std::string& sql) {
    pqxx::work tx(*conn_);
    pqxx::result r = tx.exec(sql);
    tx.commit();
    return r.empty() || r[0].empty() || r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  }

  int64_t Job(int retries, const std::string& children = "{}") {
    return Exec(absl::StrCat(
        "INSERT INTO jobs (app, name, schedule_kind, handler, fail_retry_count, child_job_ids, "
        "alarm_contacts) VALUES ('demo', 'j', 'NONE', 'echo', ",
        retries, ", '", children, "', '{ops@example.com}') RETURNING id"));
  }

  // A fire and one run of `job` in `status`, at `attempt`.
  int64_t Run(int64_t job, int status, int attempt = 0, const std::string& extra = "") {
    const int64_t fire =
        Exec(absl::StrCat("INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES (",
                          job, ", now(), 3, 2) RETURNING id"));
    return Exec(absl::StrCat(
        "INSERT INTO runs (fire_id, job_id, app, trigger_type, attempt, status, scheduled_time, "
        "executor_address",
        extra.empty() ? "" : ", start_time, trigger_time", ") VALUES (", fire, ", ", job,
        ", 'demo', 3, ", attempt, ", ", status, ", now(), '127.0.0.1:7200'", extra,
        ") RETURNING id"));
  }

  std::unique_ptr<pqxx::connection> conn_;
  FakeClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<SchedulerMetrics> metrics_;
  std::unique_ptr<LeaderElector> elector_;
  RecordingAlarm alarm_;
  std::unique_ptr<Monitors> monitors_;
};

TEST_F(MonitorsTest, FailedRunWithRetriesLeftGetsOneRetryFire) {
  const int64_t job = Job(/*retries=*/2);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_FAILED, /*attempt=*/0);
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->retries, 1);
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM fires WHERE trigger_type = 5 AND status = 1 "
                              "AND attempt = 1 AND parent_run_id = ",
                              run)),
            1);
  // Followed up once: a second pass adds nothing.
  counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->retries, 0);
  EXPECT_EQ(Exec("SELECT count(*) FROM fires WHERE trigger_type = 5"), 1);
  EXPECT_TRUE(alarm_.events().empty());
}

TEST_F(MonitorsTest, RetriesSpentRaisesOneAlarm) {
  const int64_t job = Job(/*retries=*/1);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_TIMED_OUT, /*attempt=*/1);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec("SELECT count(*) FROM fires WHERE trigger_type = 5"), 0);
  auto events = alarm_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].run_id, run);
  EXPECT_EQ(events[0].status, "RUN_STATUS_TIMED_OUT");
  EXPECT_EQ(events[0].contacts, std::vector<std::string>({"ops@example.com"}));
}

TEST_F(MonitorsTest, SucceededRunTriggersEachChildOnce) {
  const int64_t a = Job(0);
  const int64_t b = Job(0);
  const int64_t parent = Job(0, absl::StrCat("{", a, ",", b, "}"));
  const int64_t run = Run(parent, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->children, 2);
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM fires WHERE trigger_type = 6 AND "
                              "parent_run_id = ",
                              run, " AND job_id IN (", a, ",", b, ")")),
            2);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec("SELECT count(*) FROM fires WHERE trigger_type = 6"), 2);
}

TEST_F(MonitorsTest, ChildrenInAnotherAppFireOnlyWithinTheParentsChildScope) {
  const int64_t same = Job(0);
  const int64_t billing = Job(0);
  Exec(absl::StrCat("UPDATE jobs SET app = 'billing' WHERE id = ", billing));
  const std::string children = absl::StrCat("{", same, ",", billing, "}");
  // Written by an operator of demo: only the demo child fires.
  const int64_t by_operator = Job(0, children);
  Exec(absl::StrCat("UPDATE jobs SET child_scope = '{demo}' WHERE id = ", by_operator));
  // A job stored before child_scope existed gets the column default '{}': same app only.
  const int64_t legacy = Job(0, children);
  // Written by an operator of demo and billing, and by an ADMIN (NULL: every app).
  const int64_t by_both = Job(0, children);
  Exec(absl::StrCat("UPDATE jobs SET child_scope = '{demo,billing}' WHERE id = ", by_both));
  const int64_t by_admin = Job(0, children);
  Exec(absl::StrCat("UPDATE jobs SET child_scope = NULL WHERE id = ", by_admin));
  const int64_t r1 = Run(by_operator, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  const int64_t r2 = Run(legacy, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  const int64_t r3 = Run(by_both, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  const int64_t r4 = Run(by_admin, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->children, 1 + 1 + 2 + 2);
  auto fired = [&](int64_t run, int64_t job) {
    return Exec(
        absl::StrCat("SELECT count(*) FROM fires WHERE trigger_type = 6 AND "
                     "parent_run_id = ",
                     run, " AND job_id = ", job));
  };
  EXPECT_EQ(fired(r1, same), 1);
  EXPECT_EQ(fired(r1, billing), 0);
  EXPECT_EQ(fired(r2, same), 1);
  EXPECT_EQ(fired(r2, billing), 0);
  EXPECT_EQ(fired(r3, billing), 1);
  EXPECT_EQ(fired(r4, billing), 1);
}

TEST_F(MonitorsTest, KilledAndDiscardedRunsAreNotRetried) {
  const int64_t job = Job(3);
  Run(job, jobwheel::v1::RUN_STATUS_KILLED);
  Run(job, jobwheel::v1::RUN_STATUS_DISCARDED);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec("SELECT count(*) FROM fires WHERE trigger_type = 5"), 0);
  EXPECT_TRUE(alarm_.events().empty());
}

TEST_F(MonitorsTest, RunningOnAnOfflineExecutorBecomesLostAfterTheLimit) {
  const int64_t job = Job(0);
  const std::string started = absl::StrCat(", '", ToPgTimestamp(clock_.Now()), "', now()");
  const int64_t lost = Run(job, jobwheel::v1::RUN_STATUS_RUNNING, 0, started);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", lost)), 2);  // Too early.
  clock_.Advance(absl::Minutes(11));
  // A run on an executor that is online stays RUNNING.
  Exec(
      "INSERT INTO executors (app, address, replica_id, session_id, lease_until) VALUES "
      "('demo', '127.0.0.9:1', 'r', 's', now() + interval '1 hour')");
  const int64_t alive = Exec(absl::StrCat(
      "WITH f AS (INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES (", job,
      ", now(), 3, 2) RETURNING id) INSERT INTO runs (fire_id, job_id, app, trigger_type, status, "
      "scheduled_time, executor_address, start_time) SELECT id, ",
      job, ", 'demo', 3, 2, now(), '127.0.0.9:1', now() - interval '1 hour' FROM f RETURNING id"));
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->lost, 1);
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", lost)),
            jobwheel::v1::RUN_STATUS_LOST);
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", alive)),
            jobwheel::v1::RUN_STATUS_RUNNING);
}

TEST_F(MonitorsTest, RunsOfAnExecutorThatRestartedBecomeLostAfterTheGrace) {
  const int64_t job = Job(0);
  auto started_at = [&](absl::Duration ago) {
    return absl::StrCat(", '", ToPgTimestamp(clock_.Now() - ago), "', now()");
  };
  // Started 60 s ago on the old process; the new process started 30 s ago.
  const int64_t orphan =
      Run(job, jobwheel::v1::RUN_STATUS_RUNNING, 0, started_at(absl::Seconds(60)));
  // Started 5 s ago, on the new process.
  const int64_t current =
      Run(job, jobwheel::v1::RUN_STATUS_RUNNING, 0, started_at(absl::Seconds(5)));
  auto register_executor = [&](absl::Duration process_age) {
    Exec("DELETE FROM executors");
    Exec(absl::StrCat(
        "INSERT INTO executors (app, address, replica_id, session_id, lease_until, labels) VALUES "
        "('demo', '127.0.0.1:7200', 'r', 's', now() + interval '1 hour', "
        "jsonb_build_object('jobwheel.process_start_us', '",
        absl::ToUnixMicros(clock_.Now() - process_age), "'))"));
  };
  // Within the grace the new process may still replay its predecessor's spooled results.
  register_executor(absl::Seconds(5));
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", orphan)), 2);
  register_executor(absl::Seconds(30));
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->lost, 1);
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", orphan)),
            jobwheel::v1::RUN_STATUS_LOST);
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", current)),
            jobwheel::v1::RUN_STATUS_RUNNING);
}

TEST_F(MonitorsTest, PendingRunWhoseTriggerNeverCompletedFails) {
  const int64_t job = Job(0);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_PENDING);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", run)), 1);
  clock_.Advance(absl::Seconds(61));
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", run)),
            jobwheel::v1::RUN_STATUS_FAILED);
}

TEST_F(MonitorsTest, RetentionDeletesOnlyOldFinishedHistory) {
  const int64_t job = Job(0);
  const int64_t old_run = Run(job, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  const int64_t new_run = Run(job, jobwheel::v1::RUN_STATUS_SUCCEEDED);
  ASSERT_TRUE(monitors_->RunOnce().ok());  // Follow-ups done first.
  Exec(absl::StrCat("UPDATE runs SET trigger_time = now() - interval '3 days' WHERE id = ",
                    old_run));
  Exec("UPDATE fires SET create_time = now() - interval '3 days'");
  auto deleted = monitors_->Retain();
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM runs WHERE id = ", old_run)), 0);
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM runs WHERE id = ", new_run)), 1);
  // The fire of the deleted run goes too; the one still referenced by a run stays.
  EXPECT_EQ(Exec("SELECT count(*) FROM fires"), 1);
}

}  // namespace
}  // namespace jobwheel::scheduler
