// FIX_DELAY chains against a real PostgreSQL: the claim records one fire and makes the job
// wait for it; the delay-chain pass sets the next fire time from the last run's end once the
// fire, its runs and their follow-ups (retries included) are over; the claim never fires a
// FIX_DELAY job with an open run.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "prometheus/registry.h"
#include "services/scheduler/fire_plan.h"
#include "services/scheduler/leader_elector.h"
#include "services/scheduler/monitors.h"
#include "services/scheduler/pg_fire_store.h"

namespace jobwheel::scheduler {
namespace {

class PgDelayChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    conn_ = std::make_unique<pqxx::connection>(*dsn);
    clock_.Set(RealClock::Get().Now());
    elector_ = std::make_unique<LeaderElector>(
        LeaderElector::Options{*dsn, "d", absl::Milliseconds(20), absl::Milliseconds(50)},
        LeaderElector::Callbacks{}, RealClock::Get());
    elector_->Start();
    const absl::Time deadline = RealClock::Get().Now() + absl::Seconds(10);
    while (!elector_->is_leader() && RealClock::Get().Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    ASSERT_TRUE(elector_->is_leader());
    metrics_ = std::make_unique<SchedulerMetrics>(registry_);
    store_ = std::make_unique<PgFireStore>(*elector_);
    monitors_ = std::make_unique<Monitors>(Monitors::Options(), *store_, clock_, *metrics_);
  }
  void TearDown() override { elector_->Shutdown(); }

  int64_t Exec(const std::string& sql) {
    pqxx::work tx(*conn_);
    pqxx::result r = tx.exec(sql);
    tx.commit();
    return r.empty() || r[0].empty() || r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  }

  // A FIX_DELAY job (delay 300 ms) due now.
  int64_t DelayJob(int retries = 0) {
    return Exec(absl::StrCat(
        "INSERT INTO jobs (app, name, schedule_kind, fix_delay_ms, handler, fail_retry_count, "
        "next_fire_at) VALUES ('demo', 'd', 'FIX_DELAY', 300, 'sleep', ",
        retries, ", '", ToPgTimestamp(clock_.Now()), "') RETURNING id"));
  }

  absl::StatusOr<FireStore::ClaimResult> Claim() {
    ClaimPlan plan;
    return store_->ClaimDueJobs(
        ClaimHorizon(clock_.Now(), ClaimWindow()), 100,
        [&](const std::vector<jobwheel::v1::Job>& jobs) -> const ClaimPlan& {
          plan = PlanClaim(jobs, clock_.Now(), ClaimWindow());
          return plan;
        });
  }

  // A run of `fire` in `status` (ended at `end` when terminal), as a dispatcher records it.
  int64_t Run(int64_t job, int64_t fire, int status, int attempt = 0,
              const std::string& end = "NULL", bool followed_up = false) {
    Exec(absl::StrCat("UPDATE fires SET status = 2 WHERE id = ", fire));
    return Exec(absl::StrCat(
        "INSERT INTO runs (fire_id, job_id, app, trigger_type, attempt, status, scheduled_time, "
        "executor_address, end_time, followup_done) VALUES (",
        fire, ", ", job, ", 'demo', 2, ", attempt, ", ", status, ", now(), '127.0.0.1:7200', ", end,
        ", ", followed_up ? "true" : "false", ") RETURNING id"));
  }

  int64_t WaitingFor(int64_t job) {
    return Exec(absl::StrCat("SELECT delay_fire_id FROM jobs WHERE id = ", job));
  }
  // next_fire_at in Unix microseconds (0: NULL).
  int64_t NextMicros(int64_t job) {
    return Exec(absl::StrCat(
        "SELECT (EXTRACT(EPOCH FROM next_fire_at) * 1000000)::BIGINT FROM jobs WHERE id = ", job));
  }

  std::unique_ptr<pqxx::connection> conn_;
  SimulatedClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<SchedulerMetrics> metrics_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<PgFireStore> store_;
  std::unique_ptr<Monitors> monitors_;
};

TEST_F(PgDelayChainTest, NextFireIsTheRunsEndPlusTheDelayOnceItEnded) {
  const int64_t job = DelayJob();
  auto claimed = Claim();
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_EQ(claimed->fires.size(), 1u);
  const int64_t fire = claimed->fires[0].fire_id();
  EXPECT_EQ(claimed->fires[0].trigger_type(), jobwheel::v1::TRIGGER_TYPE_FIX_RATE);
  EXPECT_EQ(WaitingFor(job), fire);
  EXPECT_EQ(NextMicros(job), 0);
  // Waiting: claimed again never, not advanced while the fire is pending or its run open.
  clock_.Advance(absl::Minutes(1));
  ASSERT_TRUE(Claim().ok());
  EXPECT_EQ(Exec("SELECT count(*) FROM fires"), 1);
  auto chains = store_->AdvanceDelayChains(10);
  ASSERT_TRUE(chains.ok()) << chains.status();
  EXPECT_EQ(chains->advanced, 0);
  EXPECT_EQ(chains->waiting, 1);
  const int64_t run = Run(job, fire, jobwheel::v1::RUN_STATUS_RUNNING);
  chains = store_->AdvanceDelayChains(10);
  ASSERT_TRUE(chains.ok());
  EXPECT_EQ(chains->advanced, 0);
  // Ended (a success the dispatcher followed up at once): end + 300 ms.
  Exec(absl::StrCat(
      "UPDATE runs SET status = 3, end_time = '2030-01-01 00:00:00+00', followup_done = true "
      "WHERE id = ",
      run));
  chains = store_->AdvanceDelayChains(10);
  ASSERT_TRUE(chains.ok());
  EXPECT_EQ(chains->advanced, 1);
  EXPECT_EQ(chains->waiting, 0);
  EXPECT_EQ(WaitingFor(job), 0);
  EXPECT_EQ(NextMicros(job),
            absl::ToUnixMicros(
                absl::FromCivil(absl::CivilSecond(2030, 1, 1, 0, 0, 0), absl::UTCTimeZone()) +
                absl::Milliseconds(300)));
  // Done once.
  chains = store_->AdvanceDelayChains(10);
  ASSERT_TRUE(chains.ok());
  EXPECT_EQ(chains->advanced, 0);
}

TEST_F(PgDelayChainTest, TheChainWaitsForTheLastRetryAndALostRunEndsIt) {
  const int64_t job = DelayJob(/*retries=*/1);
  auto claimed = Claim();
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_EQ(claimed->fires.size(), 1u);
  const int64_t fire = claimed->fires[0].fire_id();
  // Failed, not yet followed up: no next fire.
  Run(job, fire, jobwheel::v1::RUN_STATUS_FAILED, 0, "now()");
  auto chains = store_->AdvanceDelayChains(10);
  ASSERT_TRUE(chains.ok());
  EXPECT_EQ(chains->advanced, 0);
  // The monitor pass writes the retry; the job waits for it instead.
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->retries, 1);
  EXPECT_EQ(counts->delay_chains_advanced, 0);
  EXPECT_EQ(counts->delay_chains_waiting, 1);
  const int64_t retry = Exec("SELECT id FROM fires WHERE trigger_type = 5");
  ASSERT_NE(retry, 0);
  EXPECT_EQ(WaitingFor(job), retry);
  EXPECT_EQ(NextMicros(job), 0);
  // The retry's run is LOST (its executor died), its retries spent: the wait ends with it.
  Run(job, retry, jobwheel::v1::RUN_STATUS_LOST, 1, "'2030-01-01 00:00:01+00'");
  counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->retries, 0);
  EXPECT_EQ(counts->delay_chains_advanced, 1);
  EXPECT_EQ(WaitingFor(job), 0);
  EXPECT_EQ(NextMicros(job),
            absl::ToUnixMicros(
                absl::FromCivil(absl::CivilSecond(2030, 1, 1, 0, 0, 1), absl::UTCTimeZone()) +
                absl::Milliseconds(300)));
}

TEST_F(PgDelayChainTest, AFireWithoutRunsEndsTheWaitFromNow) {
  const int64_t job = DelayJob();
  auto claimed = Claim();
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->fires.size(), 1u);
  // Skipped (e.g. handed off too late): no run, the next fire is the delay from now.
  Exec(absl::StrCat("UPDATE fires SET status = 3 WHERE id = ", claimed->fires[0].fire_id()));
  const int64_t before = Exec("SELECT (EXTRACT(EPOCH FROM now()) * 1000000)::BIGINT");
  auto chains = store_->AdvanceDelayChains(10);
  ASSERT_TRUE(chains.ok());
  EXPECT_EQ(chains->advanced, 1);
  EXPECT_GE(NextMicros(job), before + 300000);
  EXPECT_LT(NextMicros(job), before + 60 * 1000000LL);
}

TEST_F(PgDelayChainTest, TheClaimNeverFiresADelayJobWithAnOpenRun) {
  const int64_t job = DelayJob();
  const int64_t cron = Exec(absl::StrCat(
      "INSERT INTO jobs (app, name, schedule_kind, cron_expression, handler, next_fire_at) "
      "VALUES ('demo', 'c', 'CRON', '* * * * * ?', 'echo', '",
      ToPgTimestamp(absl::FromUnixSeconds(absl::ToUnixSeconds(clock_.Now()) + 1)),
      "') RETURNING id"));
  // A manual run of the FIX_DELAY job still running.
  const int64_t manual =
      Exec(absl::StrCat("INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES (",
                        job, ", now(), 3, 2) RETURNING id"));
  const int64_t run = Run(job, manual, jobwheel::v1::RUN_STATUS_RUNNING);
  auto claimed = Claim();
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_EQ(claimed->jobs, 1);  // The cron job only.
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", cron)), 10);
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", job)), 1);
  EXPECT_EQ(WaitingFor(job), 0);
  // Once it ended, the chain fires.
  Exec(absl::StrCat("UPDATE runs SET status = 3, end_time = now() WHERE id = ", run));
  claimed = Claim();
  ASSERT_TRUE(claimed.ok());
  EXPECT_EQ(claimed->jobs, 1);
  ASSERT_EQ(claimed->fires.size(), 1u);
  EXPECT_EQ(claimed->fires[0].job().id(), job);
  EXPECT_EQ(WaitingFor(job), claimed->fires[0].fire_id());
}

}  // namespace
}  // namespace jobwheel::scheduler
