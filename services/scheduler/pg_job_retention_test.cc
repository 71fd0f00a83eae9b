// Per-job run retention on PostgreSQL: the retention pass keeps a job's runs for its own
// max_age (shorter or longer than the global retention), down to its keep_last newest runs,
// and deletes the fires of the runs it deletes; open and not-followed-up runs stay.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "services/scheduler/leader_elector.h"
#include "services/scheduler/pg_fire_store.h"

namespace jobwheel::scheduler {
namespace {

class PgJobRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    conn_ = std::make_unique<pqxx::connection>(*dsn);
    elector_ = std::make_unique<LeaderElector>(
        LeaderElector::Options{*dsn, "r", absl::Milliseconds(20), absl::Milliseconds(50)},
        LeaderElector::Callbacks{}, RealClock::Get());
    elector_->Start();
    const absl::Time deadline = RealClock::Get().Now() + absl::Seconds(10);
    while (!elector_->is_leader() && RealClock::Get().Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    ASSERT_TRUE(elector_->is_leader());
    store_ = std::make_unique<PgFireStore>(*elector_);
  }
  void TearDown() override { elector_->Shutdown(); }

  int64_t Exec(const std::string& sql) {
    pqxx::work tx(*conn_);
    pqxx::result r = tx.exec(sql);
    tx.commit();
    return r.empty() || r[0].empty() || r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  }

  int64_t Job(int64_t max_age_ms, int keep_last) {
    return Exec(absl::StrCat(
        "INSERT INTO jobs (app, name, schedule_kind, handler, run_max_age_ms, run_keep_last) "
        "VALUES ('demo', 'j', 'NONE', 'echo', ",
        max_age_ms, ", ", keep_last, ") RETURNING id"));
  }

  // A dispatched fire and its finished, followed-up run triggered `ago` before now.
  void Run(int64_t job, const std::string& ago, int status = 3, bool done = true) {
    const int64_t fire = Exec(absl::StrCat(
        "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, create_time) VALUES (", job,
        ", now() - interval '", ago, "', 3, 2, now() - interval '", ago, "') RETURNING id"));
    Exec(absl::StrCat(
        "INSERT INTO runs (fire_id, job_id, app, trigger_type, status, scheduled_time, "
        "trigger_time, followup_done) VALUES (",
        fire, ", ", job, ", 'demo', 3, ", status, ", now(), now() - interval '", ago, "', ",
        done ? "true" : "false", ")"));
  }

  int64_t Runs(int64_t job) {
    return Exec(absl::StrCat("SELECT count(*) FROM runs WHERE job_id = ", job));
  }
  int64_t Fires(int64_t job) {
    return Exec(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", job));
  }

  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<PgFireStore> store_;
};

TEST_F(PgJobRetentionTest, EachJobKeepsItsOwnHistory) {
  const absl::Time cutoff = RealClock::Get().Now() - absl::Hours(24 * 30);  // Global: 30 days.
  const int64_t global = Job(0, 0);
  const int64_t shorter = Job(3600 * 1000, 0);             // 1 hour.
  const int64_t longer = Job(90LL * 24 * 3600 * 1000, 0);  // 90 days.
  const int64_t last3 = Job(0, 3);                         // The 3 newest, global age too.
  for (int64_t job : {global, shorter, longer, last3}) {
    Run(job, "10 minutes");
    Run(job, "2 hours");
    Run(job, "3 days");
    Run(job, "40 days");
    Run(job, "100 days");
  }
  // Open and not-followed-up runs are never deleted, however old.
  Run(shorter, "5 days", /*status=*/2, /*done=*/false);
  Run(last3, "6 days", /*status=*/4, /*done=*/false);

  auto n = store_->DeleteHistory(cutoff, 1000);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(Runs(global), 3);   // 40 and 100 days old went.
  EXPECT_EQ(Runs(shorter), 2);  // 10 minutes, and the open one.
  EXPECT_EQ(Runs(longer), 4);   // Only 100 days old went.
  EXPECT_EQ(Runs(last3), 4);    // The 3 newest (10 min, 2 h, 3 d) and the unfollowed one.
  // The fires of the deleted runs went with them.
  EXPECT_EQ(Fires(shorter), Runs(shorter));
  EXPECT_EQ(Fires(last3), Runs(last3));
  EXPECT_EQ(Fires(longer), Runs(longer));
  // A second pass deletes nothing more.
  n = store_->DeleteHistory(cutoff, 1000);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
}

}  // namespace
}  // namespace jobwheel::scheduler
