// The FireStore contract's monitor pass (RunMonitorPass through FollowupPass, which decides
// with followup_plan.h), run against the fake (FakeFireStore, which the engine's and monitors'
// unit tests use) and the real store (PgFireStore holding the schedule lock on a fresh
// database): the same cases, so the fake cannot drift from PostgreSQL.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/testing/store_contract.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "prometheus/registry.h"
#include "services/scheduler/fake_fire_store.h"
#include "services/scheduler/fake_fire_store_rows.h"
#include "services/scheduler/followup_pass.h"
#include "services/scheduler/leader_elector.h"
#include "services/scheduler/monitor_options.h"
#include "services/scheduler/pg_fire_store.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::FIRE_STATUS_PENDING;
using jobwheel::v1::TRIGGER_TYPE_PARENT;
using jobwheel::v1::TRIGGER_TYPE_RETRY;

// Each environment: the store (leading), jobs of app "demo" and finished runs made behind its
// back, and its fires read back as "<trigger type> <status> attempt <n> parent <run id>".
class FakeEnv {
 public:
  static constexpr char kName[] = "Fake";
  FakeEnv() { store_.SetLeader(true); }
  bool ok() const { return true; }
  FireStore& store() { return store_; }
  Clock& clock() { return clock_; }

  int64_t AddJob(int retries, const std::vector<int64_t>& children = {}) {
    jobwheel::v1::Job job;
    job.set_app("demo");
    job.set_name("j");
    job.set_handler("echo");
    job.mutable_schedule()->mutable_none();
    job.set_fail_retry_count(retries);
    for (int64_t c : children) job.add_child_job_ids(c);
    job.add_alarm_contacts("ops@example.com");
    return store_.AddJob(job);
  }
  int64_t AddRun(int64_t job, jobwheel::v1::RunStatus status, int attempt) {
    return AddRunOf(store_, clock_.Now(), job, status, attempt);
  }
  std::vector<std::string> FiresFollowing(int64_t run_id) {
    std::vector<std::string> out;
    for (const FakeFireStore::FireRow& f : store_.fires()) {
      if (f.parent_run_id == run_id) out.push_back(Describe(f.trigger_type, f.status, f.attempt));
    }
    return out;
  }
  static std::string Describe(int type, int status, int attempt) {
    return absl::StrCat(jobwheel::v1::TriggerType_Name(type), " ",
                        jobwheel::v1::FireStatus_Name(status), " attempt ", attempt);
  }

 private:
  SimulatedClock clock_{RealClock::Get().Now()};
  FakeFireStore store_{clock_};
};

class PgEnv {
 public:
  static constexpr char kName[] = "Pg";
  PgEnv() {
    auto dsn = testing::CreateMigratedTestDatabase();
    EXPECT_TRUE(dsn.ok()) << dsn.status();
    if (!dsn.ok()) return;
    conn_ = std::make_unique<pqxx::connection>(*dsn);
    elector_ = std::make_unique<LeaderElector>(
        LeaderElector::Options{*dsn, "contract", absl::Milliseconds(20), absl::Milliseconds(50)},
        LeaderElector::Callbacks{}, RealClock::Get());
    elector_->Start();
    EXPECT_TRUE(testing::Eventually([&] { return elector_->is_leader(); }, absl::Seconds(10)));
    store_ = std::make_unique<PgFireStore>(*elector_);
  }
  ~PgEnv() {
    if (elector_ != nullptr) elector_->Shutdown();
  }
  bool ok() const { return store_ != nullptr && elector_->is_leader(); }
  FireStore& store() { return *store_; }
  Clock& clock() { return RealClock::Get(); }

  int64_t AddJob(int retries, const std::vector<int64_t>& children = {}) {
    std::string ids;
    for (int64_t c : children) absl::StrAppend(&ids, ids.empty() ? "" : ",", c);
    return Exec(absl::StrCat(
        "INSERT INTO jobs (app, name, schedule_kind, handler, fail_retry_count, child_job_ids, "
        "alarm_contacts) VALUES ('demo', 'j', 'NONE', 'echo', ",
        retries, ", '{", ids, "}', '{ops@example.com}') RETURNING id"));
  }
  int64_t AddRun(int64_t job, jobwheel::v1::RunStatus status, int attempt) {
    const int64_t fire =
        Exec(absl::StrCat("INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES (",
                          job, ", now(), ", jobwheel::v1::TRIGGER_TYPE_MANUAL, ", ",
                          jobwheel::v1::FIRE_STATUS_DISPATCHED, ") RETURNING id"));
    return Exec(absl::StrCat(
        "INSERT INTO runs (fire_id, job_id, app, trigger_type, attempt, status, scheduled_time, "
        "trigger_time, executor_address) VALUES (",
        fire, ", ", job, ", 'demo', ", jobwheel::v1::TRIGGER_TYPE_MANUAL, ", ", attempt, ", ",
        status, ", now(), now(), '127.0.0.1:7200') RETURNING id"));
  }
  std::vector<std::string> FiresFollowing(int64_t run_id) {
    pqxx::work tx(*conn_);
    std::vector<std::string> out;
    for (const pqxx::row& r : tx.exec(absl::StrCat(
             "SELECT trigger_type, status, attempt FROM fires WHERE parent_run_id = ", run_id,
             " ORDER BY id"))) {
      out.push_back(FakeEnv::Describe(r[0].as<int>(), r[1].as<int>(), r[2].as<int>()));
    }
    return out;
  }

 private:
  int64_t Exec(const std::string& sql) {
    pqxx::work tx(*conn_);
    pqxx::result r = tx.exec(sql);
    tx.commit();
    return r.empty() || r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  }

  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<PgFireStore> store_;
};

template <typename Env>
class FireStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(env_.ok()); }
  absl::StatusOr<FollowupPass::Counts> Pass() { return pass_.Run(); }

  Env env_;
  MonitorOptions options_;
  prometheus::Registry registry_;
  SchedulerMetrics metrics_{registry_};
  FollowupPass pass_{options_, env_.store(), env_.clock(), metrics_};
};

using Envs = ::testing::Types<FakeEnv, PgEnv>;
TYPED_TEST_SUITE(FireStoreContractTest, Envs, ::jobwheel::testing::StoreEnvNames);

TYPED_TEST(FireStoreContractTest, AFailedRunWithRetriesLeftGetsOneRetryFireOnce) {
  const int64_t job = this->env_.AddJob(/*retries=*/2);
  const int64_t run = this->env_.AddRun(job, jobwheel::v1::RUN_STATUS_FAILED, /*attempt=*/0);
  auto counts = this->Pass();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->retries, 1);
  EXPECT_EQ(counts->alarms, 0);
  EXPECT_EQ(this->env_.FiresFollowing(run), std::vector<std::string>{FakeEnv::Describe(
                                                TRIGGER_TYPE_RETRY, FIRE_STATUS_PENDING, 1)});
  // Followed up once: a second pass adds nothing.
  counts = this->Pass();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->retries, 0);
  EXPECT_EQ(this->env_.FiresFollowing(run).size(), 1u);
}

TYPED_TEST(FireStoreContractTest, RetriesSpentQueueOneAlarmAndNoFire) {
  const int64_t job = this->env_.AddJob(/*retries=*/1);
  const int64_t run = this->env_.AddRun(job, jobwheel::v1::RUN_STATUS_TIMED_OUT, /*attempt=*/1);
  auto counts = this->Pass();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->retries, 0);
  EXPECT_EQ(counts->alarms, 1);
  counts = this->Pass();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->alarms, 0);
  EXPECT_TRUE(this->env_.FiresFollowing(run).empty());
}

TYPED_TEST(FireStoreContractTest, ASucceededRunFiresEachChildOnce) {
  const int64_t child_a = this->env_.AddJob(0);
  const int64_t child_b = this->env_.AddJob(0);
  const int64_t parent = this->env_.AddJob(0, {child_a, child_b});
  const int64_t run = this->env_.AddRun(parent, jobwheel::v1::RUN_STATUS_SUCCEEDED, 0);
  auto counts = this->Pass();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->children, 2);
  const std::string child = FakeEnv::Describe(TRIGGER_TYPE_PARENT, FIRE_STATUS_PENDING, 0);
  EXPECT_EQ(this->env_.FiresFollowing(run), (std::vector<std::string>{child, child}));
  counts = this->Pass();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->children, 0);
  EXPECT_EQ(this->env_.FiresFollowing(run).size(), 2u);
}

TYPED_TEST(FireStoreContractTest, KilledRunsAreNotRetried) {
  const int64_t job = this->env_.AddJob(/*retries=*/3);
  const int64_t run = this->env_.AddRun(job, jobwheel::v1::RUN_STATUS_KILLED, 0);
  auto counts = this->Pass();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->retries, 0);
  EXPECT_TRUE(this->env_.FiresFollowing(run).empty());
}

}  // namespace
}  // namespace jobwheel::scheduler
