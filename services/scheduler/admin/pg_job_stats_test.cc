// PgJobStore's dashboard aggregates (GetRunStats, CountJobs) against the real test PostgreSQL,
// each checked by hand and against InMemoryJobStore fed the same rows.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/in_memory_job_store.h"
#include "services/scheduler/admin/job_admin.h"
#include "services/scheduler/admin/pg_job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

using google::protobuf::util::MessageDifferencer;
using jobwheel::v1::GetRunStatsRequest;
using jobwheel::v1::GetRunStatsResponse;
using jobwheel::v1::RunStatus;
using jobwheel::v1::TriggerType;

const absl::Time kStart = absl::FromUnixSeconds(1795651200);  // 2026-11-26T00:00:00Z

class PgJobStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 2);
    store_ = std::make_unique<PgJobStore>(*pool_);
    pg_ = std::make_unique<JobAdmin>(*store_, executors_, clock_);
    mem_ = std::make_unique<JobAdmin>(mem_store_, executors_, clock_);
    conn_ = std::make_unique<pqxx::connection>(dsn_);
    clock_.Set(kStart + absl::Hours(6));
  }

  // A run in both stores, triggered (and its handler started) `late` after it was scheduled.
  void AddRun(int64_t job_id, const std::string& app, RunStatus status, TriggerType type,
              absl::Time trigger_time, absl::Duration late) {
    jobwheel::v1::Run r;
    r.set_id(++next_run_);
    r.set_fire_id(r.id());
    r.set_job_id(job_id);
    r.set_app(app);
    r.set_status(status);
    r.set_trigger_type(type);
    *r.mutable_trigger_time() = ToProto(trigger_time);
    *r.mutable_scheduled_time() = ToProto(trigger_time - late);
    *r.mutable_start_time() = ToProto(trigger_time);
    mem_store_.AddRun(r);
    pqxx::work tx(*conn_);
    tx.exec_params(
        "INSERT INTO runs (id, fire_id, job_id, app, trigger_type, status, scheduled_time, "
        "trigger_time, start_time) VALUES ($1, $1, $2, $3, $4, $5, $6::timestamptz, "
        "$7::timestamptz, $7::timestamptz)",
        r.id(), job_id, app, static_cast<int>(type), static_cast<int>(status),
        ToPgTimestamp(trigger_time - late), ToPgTimestamp(trigger_time));
    tx.commit();
  }

  // GetRunStats from PostgreSQL, which must equal the in-memory store's answer.
  GetRunStatsResponse Stats(const GetRunStatsRequest& req,
                            const JobAdmin::AppScope& scope = std::nullopt) {
    auto pg = pg_->GetRunStats(req, scope);
    auto mem = mem_->GetRunStats(req, scope);
    EXPECT_TRUE(pg.ok()) << pg.status();
    EXPECT_TRUE(mem.ok()) << mem.status();
    if (!pg.ok() || !mem.ok()) return GetRunStatsResponse();
    std::string diff;
    MessageDifferencer d;
    d.ReportDifferencesToString(&diff);
    EXPECT_TRUE(d.Compare(*mem, *pg)) << diff;
    return *pg;
  }

  static GetRunStatsRequest Window(absl::Duration span, absl::Duration bucket) {
    GetRunStatsRequest req;
    *req.mutable_start_time() = ToProto(kStart);
    *req.mutable_end_time() = ToProto(kStart + span);
    *req.mutable_bucket() = ToProtoDuration(bucket);
    return req;
  }

  static int64_t Count(const jobwheel::v1::RunStatsBucket& b, RunStatus s) {
    for (const auto& c : b.status_counts()) {
      if (c.status() == s) return c.count();
    }
    return 0;
  }

  FakeClock clock_;
  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgJobStore> store_;
  InMemoryJobStore mem_store_{clock_};
  FakeExecutorClient executors_;
  std::unique_ptr<JobAdmin> pg_;
  std::unique_ptr<JobAdmin> mem_;
  std::unique_ptr<pqxx::connection> conn_;
  int64_t next_run_ = 0;
};

TEST_F(PgJobStatsTest, RunStatsCountsByBucketAndStatusWithLateness) {
  const absl::Duration ms = absl::Milliseconds(1);
  // Bucket 0: three on-time-ish cron runs and a manual one (not measured for lateness).
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, jobwheel::v1::TRIGGER_TYPE_CRON, kStart,
         10 * ms);
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, jobwheel::v1::TRIGGER_TYPE_CRON,
         kStart + absl::Minutes(30), 30 * ms);
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_FAILED, jobwheel::v1::TRIGGER_TYPE_CRON,
         kStart + absl::Minutes(59), 20 * ms);
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_FAILED, jobwheel::v1::TRIGGER_TYPE_MANUAL,
         kStart + absl::Minutes(10), absl::Seconds(5));
  // Bucket 1 starts exactly at +1h; another app and job.
  AddRun(2, "billing", jobwheel::v1::RUN_STATUS_TIMED_OUT, jobwheel::v1::TRIGGER_TYPE_FIX_RATE,
         kStart + absl::Hours(1), absl::Seconds(1));
  AddRun(2, "billing", jobwheel::v1::RUN_STATUS_TIMED_OUT, jobwheel::v1::TRIGGER_TYPE_CRON,
         kStart + absl::Hours(1) + absl::Minutes(1), absl::Seconds(3));
  // Bucket 2 (partial: the window ends at +2h30m).
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_RUNNING, jobwheel::v1::TRIGGER_TYPE_CRON,
         kStart + absl::Hours(2) + absl::Minutes(29), 40 * ms);
  // Outside: just before the start, at the end.
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, jobwheel::v1::TRIGGER_TYPE_CRON,
         kStart - absl::Microseconds(1), 10 * ms);
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, jobwheel::v1::TRIGGER_TYPE_CRON,
         kStart + absl::Hours(2) + absl::Minutes(30), 10 * ms);

  GetRunStatsResponse r = Stats(Window(absl::Minutes(150), absl::Hours(1)));
  ASSERT_EQ(r.buckets_size(), 3);
  EXPECT_EQ(r.total(), 7);
  EXPECT_EQ(r.buckets(0).total(), 4);
  EXPECT_EQ(Count(r.buckets(0), jobwheel::v1::RUN_STATUS_SUCCEEDED), 2);
  EXPECT_EQ(Count(r.buckets(0), jobwheel::v1::RUN_STATUS_FAILED), 2);
  EXPECT_EQ(r.buckets(0).lateness().sample_count(), 3);
  EXPECT_EQ(FromProto(r.buckets(0).lateness().p50()), 20 * ms);
  EXPECT_EQ(FromProto(r.buckets(0).lateness().p99()), absl::Microseconds(29800));
  EXPECT_EQ(FromProto(r.buckets(0).lateness().max()), 30 * ms);
  EXPECT_EQ(r.buckets(1).total(), 2);
  EXPECT_EQ(Count(r.buckets(1), jobwheel::v1::RUN_STATUS_TIMED_OUT), 2);
  EXPECT_EQ(FromProto(r.buckets(1).lateness().p50()), absl::Seconds(2));
  EXPECT_EQ(r.buckets(2).total(), 1);
  EXPECT_EQ(Count(r.buckets(2), jobwheel::v1::RUN_STATUS_RUNNING), 1);
  // The window: 10, 20, 30, 40 ms, 1 s, 3 s.
  EXPECT_EQ(r.lateness().sample_count(), 6);
  EXPECT_EQ(FromProto(r.lateness().p50()), 35 * ms);
  EXPECT_EQ(FromProto(r.lateness().max()), absl::Seconds(3));
  ASSERT_EQ(r.status_counts_size(), 4);  // RUNNING, SUCCEEDED, FAILED, TIMED_OUT in order.
  EXPECT_EQ(r.status_counts(0).status(), jobwheel::v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(r.status_counts(3).status(), jobwheel::v1::RUN_STATUS_TIMED_OUT);

  // Filters: one job, one app, and the caller's scope.
  GetRunStatsRequest req = Window(absl::Minutes(150), absl::Minutes(30));
  req.set_job_id(2);
  r = Stats(req);
  EXPECT_EQ(r.total(), 2);
  ASSERT_EQ(r.buckets_size(), 5);
  EXPECT_EQ(r.buckets(2).total(), 2);
  req.set_job_id(0);
  req.set_app("demo");
  EXPECT_EQ(Stats(req).total(), 5);
  req.clear_app();
  r = Stats(req, std::vector<std::string>{"billing"});
  EXPECT_EQ(r.total(), 2);
  EXPECT_EQ(r.lateness().sample_count(), 2);
  r = Stats(req, std::vector<std::string>{});
  EXPECT_EQ(r.total(), 0);
  EXPECT_EQ(r.buckets_size(), 5);
  EXPECT_EQ(r.lateness().sample_count(), 0);
  EXPECT_FALSE(r.lateness().has_p50());
}

TEST_F(PgJobStatsTest, DefaultWindowIsTheLastDay) {
  clock_.Set(kStart + absl::Hours(30) + absl::Minutes(5));
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, jobwheel::v1::TRIGGER_TYPE_CRON,
         kStart + absl::Hours(6), absl::Milliseconds(3));  // Bucket 0 starts at +6h.
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, jobwheel::v1::TRIGGER_TYPE_CRON,
         kStart + absl::Hours(5) + absl::Minutes(59), absl::Milliseconds(3));  // Too old.
  GetRunStatsResponse r = Stats(GetRunStatsRequest());
  EXPECT_EQ(FromProto(r.start_time()), kStart + absl::Hours(6));
  EXPECT_EQ(FromProto(r.end_time()), clock_.Now());
  ASSERT_EQ(r.buckets_size(), 25);
  EXPECT_EQ(r.buckets(0).total(), 1);
  EXPECT_EQ(r.total(), 1);
}

TEST_F(PgJobStatsTest, CountJobsPerAppWithOpenRuns) {
  auto job = [&](const std::string& app, const std::string& name, bool enabled) {
    jobwheel::v1::Job j;
    j.set_app(app);
    j.set_name(name);
    j.set_handler("h");
    j.mutable_schedule()->mutable_none();
    j.set_enabled(enabled);
    ASSERT_TRUE(pg_->CreateJob(j).ok());
  };
  job("demo", "a", true);
  job("demo", "b", true);
  job("demo", "c", false);
  job("billing", "d", true);
  {
    pqxx::work tx(*conn_);
    tx.exec("INSERT INTO apps (name) VALUES ('idle')");
    tx.commit();
  }
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_PENDING, jobwheel::v1::TRIGGER_TYPE_CRON, kStart,
         absl::ZeroDuration());
  AddRun(1, "demo", jobwheel::v1::RUN_STATUS_RUNNING, jobwheel::v1::TRIGGER_TYPE_CRON, kStart,
         absl::ZeroDuration());
  AddRun(2, "demo", jobwheel::v1::RUN_STATUS_RUNNING, jobwheel::v1::TRIGGER_TYPE_CRON, kStart,
         absl::ZeroDuration());
  AddRun(2, "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, jobwheel::v1::TRIGGER_TYPE_CRON, kStart,
         absl::ZeroDuration());
  // Its job was deleted; the run still counts for the app.
  AddRun(99, "ghost", jobwheel::v1::RUN_STATUS_RUNNING, jobwheel::v1::TRIGGER_TYPE_MANUAL, kStart,
         absl::ZeroDuration());

  auto counts = [&](const std::string& app, const JobAdmin::AppScope& scope) {
    jobwheel::v1::CountJobsRequest req;
    req.set_app(app);
    auto r = pg_->CountJobs(req, scope);
    EXPECT_TRUE(r.ok()) << r.status();
    std::vector<std::string> out;
    for (const auto& c : r->apps()) {
      out.push_back(absl::StrCat(c.app(), ":", c.job_count(), "/", c.enabled_job_count(), "/",
                                 c.pending_run_count(), "/", c.running_run_count()));
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(counts("", std::nullopt),
            (V{"billing:1/1/0/0", "demo:3/2/1/2", "ghost:0/0/0/1", "idle:0/0/0/0"}));
  EXPECT_EQ(counts("demo", std::nullopt), (V{"demo:3/2/1/2"}));
  EXPECT_EQ(counts("", V{"demo", "idle"}), (V{"demo:3/2/1/2", "idle:0/0/0/0"}));
  EXPECT_EQ(counts("billing", V{"demo"}), V{});
  EXPECT_EQ(counts("", V{}), V{});
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
