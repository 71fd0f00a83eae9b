#include "services/scheduler/admin/pg_job_store.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_pool.h"
#include "common/pg/sql_enums.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/job_admin.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::sql::SqlInt;
using jobwheel::v1::Job;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Runs against the real test PostgreSQL, one fresh database per test, with the real clock:
// the store compares fire times with the database's now().
class PgJobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 2);
    store_ = std::make_unique<PgJobStore>(*pool_);
    admin_ = std::make_unique<JobAdmin>(*store_, executors_, RealClock::Get());
    conn_ = std::make_unique<pqxx::connection>(dsn_);
  }

  pqxx::result Sql(const std::string& sql) {
    pqxx::work tx(*conn_);
    pqxx::result r = tx.exec(sql);
    tx.commit();
    return r;
  }

  static Job CronJob(const std::string& name, const std::string& app = "demo") {
    Job job;
    job.set_app(app);
    job.set_name(name);
    job.set_handler("demo.tick");
    job.mutable_schedule()->mutable_cron()->set_expression("*/10 * * * * ?");
    job.set_enabled(true);
    return job;
  }

  Job MustCreate(const Job& job) {
    auto created = admin_->CreateJob(job);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : Job();
  }

  void AddExecutor(const std::string& app, const std::string& address, bool online) {
    Sql("INSERT INTO executors (app, address, replica_id, session_id, online, lease_until) "
        "VALUES ('" +
        app + "', '" + address + "', 'r1', 's1', " + (online ? "true" : "false") +
        ", now() + interval '1 minute')");
  }

  int64_t AddRun(int64_t job_id, const std::string& app, jobwheel::v1::RunStatus status,
                 const std::string& address, const std::string& trigger_time = "now()") {
    return Sql("INSERT INTO runs (fire_id, job_id, app, trigger_type, status, executor_address, "
               "scheduled_time, trigger_time) VALUES ((SELECT coalesce(max(fire_id), 0) + 1 FROM "
               "runs), " +
               std::to_string(job_id) + ", '" + app + "', " +
               SqlInt(jobwheel::v1::TRIGGER_TYPE_CRON) + ", " + SqlInt(status) + ", '" + address +
               "', now(), " + trigger_time + ") RETURNING id")[0][0]
        .as<int64_t>();
  }

  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgJobStore> store_;
  FakeExecutorClient executors_;
  std::unique_ptr<JobAdmin> admin_;
  std::unique_ptr<pqxx::connection> conn_;
};

TEST_F(PgJobStoreTest, CreateGetRoundTripKeepsEveryField) {
  Job child = MustCreate(CronJob("child"));
  Job in = CronJob("full", "billing");
  in.set_description("all the fields");
  in.set_owner("ops");
  in.add_alarm_contacts("a@example.com");
  in.add_alarm_contacts("weird \"quoted\", {braced} \\ contact");
  in.mutable_schedule()->mutable_cron()->set_time_zone("Asia/Shanghai");
  in.set_misfire_strategy(jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  in.set_routing_strategy(jobwheel::v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
  in.set_block_strategy(jobwheel::v1::BLOCK_STRATEGY_COVER_EARLY);
  in.set_param("x=1'; DROP TABLE jobs; --");
  in.mutable_timeout()->set_seconds(90);
  in.set_fail_retry_count(3);
  in.add_child_job_ids(child.id());
  Job created = MustCreate(in);
  EXPECT_GT(created.id(), child.id());
  EXPECT_TRUE(created.has_next_fire_time());
  EXPECT_GT(FromProto(created.next_fire_time()), RealClock::Get().Now() - absl::Seconds(1));
  EXPECT_LE(FromProto(created.next_fire_time()), RealClock::Get().Now() + absl::Seconds(10));
  EXPECT_EQ(created.param(), "x=1'; DROP TABLE jobs; --");
  EXPECT_THAT(created.alarm_contacts(),
              ElementsAre("a@example.com", "weird \"quoted\", {braced} \\ contact"));
  EXPECT_THAT(created.child_job_ids(), ElementsAre(child.id()));
  EXPECT_EQ(created.routing_strategy(), jobwheel::v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
  EXPECT_EQ(FromProto(created.timeout()), absl::Seconds(90));

  auto got = admin_->GetJob(created.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*got, created))
      << got->DebugString() << "\nvs\n"
      << created.DebugString();
  EXPECT_EQ(Sql("SELECT count(*) FROM apps WHERE name = 'billing'")[0][0].as<int>(), 1);
  EXPECT_EQ(admin_->GetJob(9999).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(PgJobStoreTest, ScriptVersionsAreRecorded) {
  Job in = CronJob("script");
  in.clear_handler();
  in.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON);
  in.set_script_source("print('v1')");
  Job job = MustCreate(in);
  EXPECT_EQ(job.script_version(), 1);
  Job patch;
  patch.set_id(job.id());
  patch.set_script_source("print('v2')");
  google::protobuf::FieldMask mask;
  mask.add_paths("script_source");
  auto updated = admin_->UpdateJob(patch, mask);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->script_version(), 2);
  pqxx::result r = Sql("SELECT version, glue_type, source FROM scripts WHERE job_id = " +
                       std::to_string(job.id()) + " ORDER BY version");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0][2].as<std::string>(), "print('v1')");
  EXPECT_EQ(r[1][0].as<int>(), 2);
  EXPECT_EQ(r[1][1].as<int>(), jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON);
  EXPECT_EQ(r[1][2].as<std::string>(), "print('v2')");
}

TEST_F(PgJobStoreTest, UpdateDeletesPendingFutureFiresAndRecomputesNextFire) {
  Job job = MustCreate(CronJob("moving"));
  const std::string id = std::to_string(job.id());
  // Pending schedule-driven fires in the past (about to be sent) and future (stale after the
  // update), a dispatched future fire, and a pending manual fire.
  const std::string cron = SqlInt(jobwheel::v1::TRIGGER_TYPE_CRON);
  const std::string pending = SqlInt(jobwheel::v1::FIRE_STATUS_PENDING);
  Sql(absl::StrCat("INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES (", id,
                   ", now() - interval '1 second', ", cron, ", ", pending, "), (", id,
                   ", now() + interval '3 seconds', ", cron, ", ", pending, "), (", id,
                   ", now() + interval '4 seconds', ", SqlInt(jobwheel::v1::TRIGGER_TYPE_FIX_RATE),
                   ", ", SqlInt(jobwheel::v1::FIRE_STATUS_DISPATCHED), "), (", id,
                   ", now() + interval '5 seconds', ", SqlInt(jobwheel::v1::TRIGGER_TYPE_MANUAL),
                   ", ", pending, ")"));
  Job patch;
  patch.set_id(job.id());
  patch.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(3600);
  google::protobuf::FieldMask mask;
  mask.add_paths("schedule");
  auto updated = admin_->UpdateJob(patch, mask);
  ASSERT_TRUE(updated.ok()) << updated.status();
  pqxx::result fires =
      Sql("SELECT trigger_type, status, scheduled_at < now() FROM fires "
          "WHERE job_id = " +
          id + " ORDER BY id");
  ASSERT_EQ(fires.size(), 3u);
  EXPECT_TRUE(fires[0][2].as<bool>());                                     // The overdue one stays.
  EXPECT_EQ(fires[1][1].as<int>(), jobwheel::v1::FIRE_STATUS_DISPATCHED);  // Stays.
  EXPECT_EQ(fires[2][0].as<int>(), jobwheel::v1::TRIGGER_TYPE_MANUAL);     // Stays.
  // next_fire_at in the row is the one the response reports: creation + 1 h.
  pqxx::result row =
      Sql("SELECT (EXTRACT(EPOCH FROM next_fire_at) * 1000000)::BIGINT, "
          "(EXTRACT(EPOCH FROM create_time) * 1000000)::BIGINT FROM jobs "
          "WHERE id = " +
          id);
  EXPECT_EQ(FromMicros(row[0][0].as<int64_t>()), FromProto(updated->next_fire_time()));
  const absl::Time created = FromMicros(row[0][1].as<int64_t>());
  EXPECT_EQ(FromProto(updated->next_fire_time()),
            absl::FromUnixSeconds(absl::ToUnixSeconds(created)) + absl::Hours(1));

  auto paused = admin_->PauseJob(job.id());
  ASSERT_TRUE(paused.ok());
  EXPECT_TRUE(Sql("SELECT next_fire_at IS NULL AND NOT enabled FROM jobs WHERE id = " + id)[0][0]
                  .as<bool>());
}

// A pause of a job behind its schedule (next_fire_at past, no fire claimed for it, as while
// the leader sheds under load) writes one SKIPPED row for the due times it cuts off, at the
// first of them, its reason naming how many.
TEST_F(PgJobStoreTest, PauseOfABehindJobRecordsTheCutOffRange) {
  const Job job = MustCreate(CronJob("behind"));  // Every 10 s.
  const std::string id = std::to_string(job.id());
  // Behind by 4 due times: the next fire 30..40 s ago (the :x0 second 10 s before now - 20 s),
  // and the three after it, all past.
  Sql("UPDATE jobs SET next_fire_at = date_trunc('minute', now() - interval '20 seconds') + "
      "floor(extract(second FROM now() - interval '20 seconds') / 10) * interval '10 seconds' - "
      "interval '10 seconds' WHERE id = " +
      id);
  const int64_t first_us = Sql("SELECT (EXTRACT(EPOCH FROM next_fire_at) * 1000000)::BIGINT FROM "
                               "jobs WHERE id = " +
                               id)[0][0]
                               .as<int64_t>();
  ASSERT_TRUE(admin_->PauseJob(job.id()).ok());
  pqxx::result rows =
      Sql("SELECT (EXTRACT(EPOCH FROM scheduled_at) * 1000000)::BIGINT, status, trigger_type, "
          "reason FROM fires WHERE job_id = " +
          id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].as<int64_t>(), first_us);
  EXPECT_EQ(rows[0][1].as<int>(), jobwheel::v1::FIRE_STATUS_SKIPPED);
  EXPECT_EQ(rows[0][2].as<int>(), jobwheel::v1::TRIGGER_TYPE_CRON);
  const std::string reason = rows[0][3].as<std::string>();
  // 4 due times, or 5 when the pause crossed a :x0 second after the update.
  EXPECT_TRUE(reason.rfind("misfire: 4 fire(s) from ", 0) == 0 ||
              reason.rfind("misfire: 5 fire(s) from ", 0) == 0)
      << reason;
  EXPECT_THAT(reason, HasSubstr("the job was paused before they were claimed"));
  // Paused, so nothing is due: a second pause and the resume write nothing more.
  ASSERT_TRUE(admin_->ResumeJob(job.id()).ok());
  EXPECT_EQ(Sql("SELECT count(*) FROM fires WHERE job_id = " + id)[0][0].as<int>(), 1);
}

TEST_F(PgJobStoreTest, AStoppedJobsScheduleErrorIsShownUntilTheJobIsWrittenAgain) {
  Job job = MustCreate(CronJob("stopped"));
  const std::string id = std::to_string(job.id());
  // What the leader's monitors do to a job whose stored schedule cannot be computed.
  Sql("UPDATE jobs SET enabled = false, next_fire_at = NULL, "
      "schedule_error = 'cron: no next time' WHERE id = " +
      id);
  auto stopped = admin_->GetJob(job.id());
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->schedule_error(), "cron: no next time");
  EXPECT_FALSE(stopped->enabled());

  auto resumed = admin_->ResumeJob(job.id());
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->schedule_error(), "");
  EXPECT_TRUE(
      Sql("SELECT schedule_error IS NULL AND enabled FROM jobs WHERE id = " + id)[0][0].as<bool>());
}

TEST_F(PgJobStoreTest, ChildrenOutsideTheWritersAppsLookMissingAndTheScopeIsStored) {
  Job billing = MustCreate(CronJob("billing-job", "billing"));
  Job child = MustCreate(CronJob("child"));
  auto scope_of = [&](int64_t id) {
    return Sql("SELECT coalesce(array_to_string(child_scope, ','), 'NULL') FROM jobs WHERE id = " +
               std::to_string(id))[0][0]
        .as<std::string>();
  };
  const JobAdmin::AppScope demo = std::vector<std::string>{"demo"};
  Job in = CronJob("parent");
  in.add_child_job_ids(billing.id());
  auto refused = admin_->CreateJob(in, demo);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            absl::StrCat("job.child_job_ids[0]: job ", billing.id(), " does not exist"));
  in.set_child_job_ids(0, child.id());
  auto parent = admin_->CreateJob(in, demo);
  ASSERT_TRUE(parent.ok()) << parent.status();
  EXPECT_EQ(scope_of(parent->id()), "demo");
  EXPECT_EQ(scope_of(child.id()), "NULL");  // Created with the default writer: every app.
  // An admin links billing: every app (NULL); pausing keeps it.
  Job patch;
  patch.set_id(parent->id());
  patch.add_child_job_ids(child.id());
  patch.add_child_job_ids(billing.id());
  google::protobuf::FieldMask mask;
  mask.add_paths("child_job_ids");
  ASSERT_TRUE(admin_->UpdateJob(patch, mask).ok());
  EXPECT_EQ(scope_of(parent->id()), "NULL");
  ASSERT_TRUE(admin_->PauseJob(parent->id()).ok());
  EXPECT_EQ(scope_of(parent->id()), "NULL");
  // An operator of demo and billing rewrites the list: its apps.
  patch.clear_child_job_ids();
  patch.add_child_job_ids(billing.id());
  ASSERT_TRUE(
      admin_->UpdateJob(patch, mask, nullptr, std::vector<std::string>{"demo", "billing"}).ok());
  EXPECT_EQ(scope_of(parent->id()), "demo,billing");
}

TEST_F(PgJobStoreTest, ConcurrentUpdatesCannotCloseACycleBetweenThem) {
  Job a = MustCreate(CronJob("a"));
  Job b = MustCreate(CronJob("b"));
  google::protobuf::FieldMask mask;
  mask.add_paths("child_job_ids");
  for (int round = 0; round < 10; ++round) {
    Job a_to_b;
    a_to_b.set_id(a.id());
    a_to_b.add_child_job_ids(b.id());
    Job b_to_a;
    b_to_a.set_id(b.id());
    b_to_a.add_child_job_ids(a.id());
    absl::StatusOr<Job> first, second;
    std::thread t1([&] { first = admin_->UpdateJob(a_to_b, mask); });
    std::thread t2([&] { second = admin_->UpdateJob(b_to_a, mask); });
    t1.join();
    t2.join();
    EXPECT_NE(first.ok(), second.ok())
        << "round " << round << ": " << first.status() << " / " << second.status();
    // Reset both edges for the next round.
    Job clear;
    clear.set_id(a.id());
    ASSERT_TRUE(admin_->UpdateJob(clear, mask).ok());
    clear.set_id(b.id());
    ASSERT_TRUE(admin_->UpdateJob(clear, mask).ok());
  }
}

TEST_F(PgJobStoreTest, DeleteRemovesJobAndPendingFiresButKeepsRuns) {
  Job child = MustCreate(CronJob("child"));
  Job parent_in = CronJob("parent");
  parent_in.add_child_job_ids(child.id());
  Job parent = MustCreate(parent_in);
  auto refused = admin_->DeleteJob(child.id());
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr(absl::StrCat("child of job(s) ", parent.id())));

  const std::string id = std::to_string(parent.id());
  Sql(absl::StrCat("INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES (", id,
                   ", now() - interval '1 second', ", SqlInt(jobwheel::v1::TRIGGER_TYPE_CRON), ", ",
                   SqlInt(jobwheel::v1::FIRE_STATUS_DISPATCHED), "), (", id, ", now(), ",
                   SqlInt(jobwheel::v1::TRIGGER_TYPE_MANUAL), ", ",
                   SqlInt(jobwheel::v1::FIRE_STATUS_PENDING), ")"));
  AddRun(parent.id(), "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, "a:1");
  ASSERT_TRUE(admin_->DeleteJob(parent.id()).ok());
  EXPECT_EQ(admin_->GetJob(parent.id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Sql(absl::StrCat("SELECT count(*) FROM fires WHERE status = ",
                             SqlInt(jobwheel::v1::FIRE_STATUS_PENDING), " AND job_id = ", id))[0][0]
                .as<int>(),
            0);
  // The dispatched fire stays with its run.
  EXPECT_EQ(Sql("SELECT count(*) FROM fires WHERE job_id = " + id)[0][0].as<int>(), 1);
  EXPECT_EQ(Sql("SELECT count(*) FROM runs WHERE job_id = " + id)[0][0].as<int>(), 1);
  EXPECT_TRUE(admin_->DeleteJob(child.id()).ok());
  EXPECT_EQ(admin_->DeleteJob(child.id()).code(), absl::StatusCode::kNotFound);
}

TEST_F(PgJobStoreTest, TriggerInsertsManualFireOnlyForOnlineExecutorsOfTheApp) {
  Job in = CronJob("manual");
  in.set_enabled(false);
  Job job = MustCreate(in);
  AddExecutor("demo", "10.0.0.1:7200", true);
  AddExecutor("demo", "10.0.0.2:7200", false);
  AddExecutor("other", "10.0.0.3:7200", true);

  jobwheel::v1::TriggerJobRequest req;
  req.set_id(job.id());
  auto plain = admin_->TriggerJob(req);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const char* bad : {"127.0.0.1:22", "10.0.0.2:7200", "10.0.0.3:7200"}) {
    req.set_executor_address(bad);
    auto refused = admin_->TriggerJob(req);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << bad;
    EXPECT_EQ(refused.status().message(),
              absl::StrCat("executor_address: ", bad, " is not an online executor of app demo"));
  }
  req.set_executor_address("10.0.0.1:7200");
  req.set_param("");  // An explicit empty override is kept apart from "no override".
  req.set_shard_param("2/4");
  auto targeted = admin_->TriggerJob(req);
  ASSERT_TRUE(targeted.ok()) << targeted.status();

  pqxx::result r =
      Sql("SELECT id, trigger_type, status, param IS NULL, param, shard_index, "
          "shard_total, executor_address, abs(EXTRACT(EPOCH FROM scheduled_at - "
          "now())) < 60 FROM fires ORDER BY id");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0][0].as<int64_t>(), *plain);
  EXPECT_EQ(r[0][1].as<int>(), jobwheel::v1::TRIGGER_TYPE_MANUAL);
  EXPECT_EQ(r[0][2].as<int>(), jobwheel::v1::FIRE_STATUS_PENDING);
  EXPECT_TRUE(r[0][3].as<bool>());
  EXPECT_TRUE(r[0][8].as<bool>());
  EXPECT_EQ(r[1][0].as<int64_t>(), *targeted);
  EXPECT_FALSE(r[1][3].as<bool>());
  EXPECT_EQ(r[1][5].as<int>(), 2);
  EXPECT_EQ(r[1][6].as<int>(), 4);
  EXPECT_EQ(r[1][7].as<std::string>(), "10.0.0.1:7200");

  req.set_id(job.id() + 100);
  EXPECT_EQ(admin_->TriggerJob(req).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(PgJobStoreTest, ListRunsFiltersAndPagesNewestFirst) {
  const int64_t r1 =
      AddRun(1, "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, "a:1", "now() - interval '2 hours'");
  const int64_t r2 =
      AddRun(1, "demo", jobwheel::v1::RUN_STATUS_FAILED, "a:1", "now() - interval '1 hour'");
  const int64_t r3 = AddRun(2, "other", jobwheel::v1::RUN_STATUS_RUNNING, "b:1", "now()");
  const int64_t r4 = AddRun(1, "demo", jobwheel::v1::RUN_STATUS_RUNNING, "a:1", "now()");
  auto ids = [&](const jobwheel::v1::ListRunsRequest& req) {
    std::vector<int64_t> out;
    auto page = admin_->ListRuns(req);
    EXPECT_TRUE(page.ok()) << page.status();
    for (const auto& r : page->runs()) out.push_back(r.id());
    return out;
  };
  jobwheel::v1::ListRunsRequest req;
  EXPECT_THAT(ids(req), ElementsAre(r4, r3, r2, r1));
  req.set_page_size(3);
  auto page = admin_->ListRuns(req);
  ASSERT_TRUE(page.ok());
  req.set_page_token(page->next_page_token());
  EXPECT_THAT(ids(req), ElementsAre(r1));

  jobwheel::v1::ListRunsRequest f;
  f.set_job_id(1);
  EXPECT_THAT(ids(f), ElementsAre(r4, r2, r1));
  f.add_statuses(jobwheel::v1::RUN_STATUS_SUCCEEDED);
  f.add_statuses(jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_THAT(ids(f), ElementsAre(r2, r1));
  f.clear_statuses();
  *f.mutable_start_time() = ToProto(RealClock::Get().Now() - absl::Minutes(90));
  EXPECT_THAT(ids(f), ElementsAre(r4, r2));
  *f.mutable_end_time() = ToProto(RealClock::Get().Now() - absl::Minutes(30));
  EXPECT_THAT(ids(f), ElementsAre(r2));
  jobwheel::v1::ListRunsRequest by_app;
  by_app.set_app("other");
  EXPECT_THAT(ids(by_app), ElementsAre(r3));

  auto run = admin_->GetRun(r3);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->app(), "other");
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_RUNNING);
  // NULL times stay unset (JSON omits them), never the Unix epoch.
  EXPECT_TRUE(run->has_trigger_time());
  EXPECT_FALSE(run->has_start_time());
  EXPECT_FALSE(run->has_end_time());
  EXPECT_EQ(admin_->GetRun(r4 + 10).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(PgJobStoreTest, KillRunOnUnreachableExecutorMarksKilledInDatabase) {
  AddExecutor("demo", "10.0.0.1:7200", true);
  const int64_t id = AddRun(1, "demo", jobwheel::v1::RUN_STATUS_RUNNING, "10.0.0.1:7200");
  executors_.SetKillResponse(absl::UnavailableError("connection refused"));
  auto run = admin_->KillRun(id);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_TRUE(run->has_end_time());
  EXPECT_THAT(executors_.calls(), ElementsAre("Kill 10.0.0.1:7200"));
  pqxx::result r = Sql("SELECT status, result_message FROM runs WHERE id = " + std::to_string(id));
  EXPECT_EQ(r[0][0].as<int>(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_EQ(r[0][1].as<std::string>(),
            "killed by operator: executor unreachable: 10.0.0.1:7200: connection refused");
  EXPECT_EQ(admin_->KillRun(id).status().message(), absl::StrCat("run ", id, " is already KILLED"));
}

}  // namespace
}  // namespace jobwheel::scheduler::admin

namespace jobwheel::scheduler::admin {
namespace {

// A token's scope confines lists to its apps (an empty scope lists nothing).
TEST_F(PgJobStoreTest, ListsAreConfinedToAnAppScope) {
  const Job a = MustCreate(CronJob("a", "demo"));
  const Job b = MustCreate(CronJob("b", "billing"));
  MustCreate(CronJob("c", "other"));
  AddRun(a.id(), "demo", jobwheel::v1::RUN_STATUS_SUCCEEDED, "h:1");
  AddRun(b.id(), "billing", jobwheel::v1::RUN_STATUS_SUCCEEDED, "h:1");
  const int64_t other_run = AddRun(99, "other", jobwheel::v1::RUN_STATUS_SUCCEEDED, "h:1");
  auto jobs = admin_->ListJobs({}, std::vector<std::string>{"demo", "billing"});
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  std::vector<std::string> names;
  for (const auto& j : jobs->jobs()) names.push_back(j.name());
  EXPECT_THAT(names, ElementsAre("a", "b"));
  jobs = admin_->ListJobs({}, std::vector<std::string>{});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->jobs_size(), 0);
  jobs = admin_->ListJobs({});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->jobs_size(), 3);

  auto runs = admin_->ListRuns({}, std::vector<std::string>{"demo", "billing"});
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->runs_size(), 2);
  for (const auto& r : runs->runs()) EXPECT_NE(r.id(), other_run);
  runs = admin_->ListRuns({}, std::vector<std::string>{});
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->runs_size(), 0);
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
