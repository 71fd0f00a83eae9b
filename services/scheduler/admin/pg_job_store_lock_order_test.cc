// Deleting or pausing a job while a dispatcher holds some of its fire rows: the store locks the
// job's pending fires in id order, as dispatchers do, so the two wait for each other in turn and
// never deadlock. Provoked on the real PostgreSQL: fire A (lower id) is due after fire B, and the
// store's sessions scan a job's fires by the (job_id, scheduled_at) index, as the planner does on
// a large table (sequential and bitmap scans are turned off for the test database), so they meet
// B first; a "dispatcher" transaction holds A, the edit starts and waits, and once it has waited
// past deadlock_timeout the dispatcher takes B. Locking in scan order, the edit held B and
// PostgreSQL aborted the dispatcher with a deadlock (40P01).
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_pool.h"
#include "common/pg/sql_enums.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/job_admin.h"
#include "services/scheduler/admin/pg_job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::sql::SqlInt;

class PgJobStoreLockOrderTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    {
      pqxx::connection setup(dsn_);
      pqxx::nontransaction tx(setup);
      tx.exec(
          "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET enable_seqscan = off', "
          "current_database()); EXECUTE format('ALTER DATABASE %I SET enable_bitmapscan = off', "
          "current_database()); END $$");
    }
    pool_ = std::make_unique<PgPool>(dsn_, 2);
    store_ = std::make_unique<PgJobStore>(*pool_);
    admin_ = std::make_unique<JobAdmin>(*store_, executors_, RealClock::Get());
    conn_ = std::make_unique<pqxx::connection>(dsn_);
  }

  pqxx::result Sql(const std::string& sql) {
    pqxx::nontransaction tx(*conn_);
    return tx.exec(sql);
  }

  int64_t AddFire(int64_t job, const std::string& at) {
    return Sql(absl::StrCat(
        "INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES (", job, ", ", at,
        ", ", SqlInt(v1::TRIGGER_TYPE_CRON), ", ", SqlInt(v1::FIRE_STATUS_PENDING),
        ") RETURNING id"))[0][0]
        .as<int64_t>();
  }

  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgJobStore> store_;
  FakeExecutorClient executors_;
  std::unique_ptr<JobAdmin> admin_;
  std::unique_ptr<pqxx::connection> conn_;
};

// GetParam(): true deletes the job, false pauses it (UpdateJob with enabled = false).
TEST_P(PgJobStoreLockOrderTest, WaitsForTheDispatchersRowLocksInsteadOfDeadlocking) {
  const int64_t job =
      Sql("INSERT INTO jobs (app, name, schedule_kind, cron_expression, handler, enabled, "
          "next_fire_at) VALUES ('demo', 'lock-order', 'CRON', '0 0 0 1 1 ? 2099', 'h', true, "
          "now() + interval '1 hour') RETURNING id")[0][0]
          .as<int64_t>();
  // A: the lower id, due later (an index scan by scheduled time meets B first).
  const int64_t a = AddFire(job, "now() + interval '20 seconds'");
  const int64_t b = AddFire(job, "now() + interval '10 seconds'");
  ASSERT_LT(a, b);

  // The dispatcher's transaction: locks A, as its batch (in id order) would.
  pqxx::connection dispatcher_conn(dsn_);
  pqxx::work dispatcher(dispatcher_conn);
  dispatcher.exec(absl::StrCat("SELECT 1 FROM fires WHERE id = ", a, " FOR UPDATE"));
  const int dispatcher_pid = dispatcher_conn.backendpid();

  absl::Status removed;
  std::thread edit(
      [&] { removed = GetParam() ? admin_->DeleteJob(job) : admin_->PauseJob(job).status(); });
  // The edit waits on a row lock held by the dispatcher, for longer than deadlock_timeout (1 s):
  // its one deadlock check has passed, so a cycle would now abort the dispatcher.
  const std::string waiting = absl::StrCat(
      "SELECT count(*) FROM pg_stat_activity WHERE pid <> ", dispatcher_pid,
      " AND wait_event_type = 'Lock' AND now() - state_change > interval '1200 milliseconds' "
      "AND datname = current_database()");
  ASSERT_TRUE(
      testing::Eventually([&] { return Sql(waiting)[0][0].as<int64_t>() > 0; }, absl::Seconds(20)));
  // Then the dispatcher takes B and records both fires as dispatched.
  ASSERT_NO_THROW(
      dispatcher.exec(absl::StrCat("SET LOCAL lock_timeout = '10s'; SELECT 1 FROM "
                                   "fires WHERE id = ",
                                   b, " FOR UPDATE")));
  dispatcher.exec(absl::StrCat("UPDATE fires SET status = ", SqlInt(v1::FIRE_STATUS_DISPATCHED),
                               " WHERE id IN (", a, ", ", b, ")"));
  dispatcher.commit();
  edit.join();
  EXPECT_TRUE(removed.ok()) << removed;
  // The dispatched fires stay (only PENDING ones are removed), and the edit is done.
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*) FROM fires WHERE id IN (", a, ", ", b, ")"))[0][0]
                .as<int64_t>(),
            2);
  const int64_t jobs_left =
      Sql(absl::StrCat("SELECT count(*) FROM jobs WHERE id = ", job, " AND enabled"))[0][0]
          .as<int64_t>();
  EXPECT_EQ(jobs_left, 0);
}

INSTANTIATE_TEST_SUITE_P(DeleteAndPause, PgJobStoreLockOrderTest, ::testing::Values(true, false));

}  // namespace
}  // namespace jobwheel::scheduler::admin
