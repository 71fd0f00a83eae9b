#include "services/dispatcher/pg_dispatch_store.h"

#include <atomic>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/dispatcher/dispatch_test_util.h"
#include "services/dispatcher/result_key.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace ::jobwheel::dispatcher::testing;  // NOLINT

class PgDispatchStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = jobwheel::testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 2, nullptr, PgPool::PlanMode::kIndexLookups);
    store_ = std::make_unique<PgDispatchStore>(*pool_);
    job_ = MakeJob(InsertJob(dsn_, "demo", "echo", v1::ROUTING_STRATEGY_SHARDING_BROADCAST), "demo",
                   "echo", v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
  }

  v1::Fire NewFire() { return MakeFire(InsertFire(dsn_, job_.id()), job_, now_); }

  // Creates one PENDING run on a fresh fire and returns its id.
  int64_t PendingRun() {
    auto r = store_->DispatchFires({NewFire()}, now_, [](const v1::Fire&) {
      FirePlan p;
      p.runs.push_back(PlannedRun{"h:1", 0, 1, v1::RUN_STATUS_PENDING, "route FIRST"});
      return p;
    });
    EXPECT_TRUE(r.ok()) << r.status();
    keys_[(*r)[0].created[0].run_id] = (*r)[0].created[0].planned.result_key;
    return (*r)[0].created[0].run_id;
  }

  v1::RunResult Result(int64_t run_id, v1::RunStatus status, int code, const std::string& msg) {
    v1::RunResult r;
    r.set_run_id(run_id);
    r.set_status(status);
    r.set_code(code);
    r.set_message(msg);
    r.set_executor_address("h:1");
    *r.mutable_end_time() = ToProto(now_ + absl::Seconds(1));
    auto key = keys_.find(run_id);  // The key the run's executor was given.
    if (key != keys_.end()) r.set_result_key(key->second);
    return r;
  }

  void Sql(const std::string& statement) {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    tx.exec(statement);
    tx.commit();
  }

  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgDispatchStore> store_;
  v1::Job job_;
  absl::Time now_ = absl::FromUnixSeconds(1800000000);
  std::map<int64_t, std::string> keys_;  // Result keys of the runs PendingRun made.
};

TEST_F(PgDispatchStoreTest, DispatchIsIdempotentPerFire) {
  v1::Fire fire = NewFire();
  std::atomic<int> planned{0};
  FirePlanner plan = [&](const v1::Fire&) {
    ++planned;
    FirePlan p;
    p.runs.push_back(PlannedRun{"h:1", 0, 2, v1::RUN_STATUS_PENDING, "shard 0"});
    p.runs.push_back(PlannedRun{"h:2", 1, 2, v1::RUN_STATUS_PENDING, "shard 1"});
    return p;
  };
  auto first = store_->DispatchFires({fire}, now_, plan);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].status, v1::FIRE_STATUS_DISPATCHED);
  EXPECT_FALSE((*first)[0].duplicate);
  ASSERT_EQ((*first)[0].created.size(), 2u);
  EXPECT_EQ((*first)[0].run_ids.size(), 2u);
  EXPECT_EQ(std::get<0>(FireRow(dsn_, fire.fire_id())), v1::FIRE_STATUS_DISPATCHED);
  EXPECT_TRUE(std::get<2>(FireRow(dsn_, fire.fire_id())));

  auto second = store_->DispatchFires({fire}, now_, plan);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE((*second)[0].duplicate);
  EXPECT_TRUE((*second)[0].created.empty());
  EXPECT_EQ((*second)[0].run_ids, (*first)[0].run_ids);
  EXPECT_EQ((*second)[0].status, v1::FIRE_STATUS_DISPATCHED);
  EXPECT_EQ(planned.load(), 1);
  std::vector<RunRow> runs = RunsOf(dsn_, fire.fire_id());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].address, "h:1");
  EXPECT_EQ(runs[1].shard_index, 1);
  EXPECT_EQ(runs[1].shard_total, 2);
  EXPECT_EQ(runs[1].status, v1::RUN_STATUS_PENDING);
  EXPECT_EQ(runs[1].trigger_message, "shard 1");
}

TEST_F(PgDispatchStoreTest, FailedPlanRecordsReasonOnFireAndRun) {
  v1::Fire fire = NewFire();
  auto r = store_->DispatchFires({fire}, now_, [](const v1::Fire&) {
    FirePlan p;
    p.status = v1::FIRE_STATUS_FAILED;
    p.reason = "job 1: no executor online for app demo";
    p.runs.push_back(PlannedRun{"", 0, 1, v1::RUN_STATUS_FAILED, p.reason});
    return p;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].status, v1::FIRE_STATUS_FAILED);
  EXPECT_EQ((*r)[0].message, "job 1: no executor online for app demo");
  auto [status, reason, dispatched] = FireRow(dsn_, fire.fire_id());
  EXPECT_EQ(status, v1::FIRE_STATUS_FAILED);
  EXPECT_EQ(reason, "job 1: no executor online for app demo");
  std::vector<RunRow> runs = RunsOf(dsn_, fire.fire_id());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, v1::RUN_STATUS_FAILED);
  EXPECT_TRUE(runs[0].has_end);
  EXPECT_EQ(runs[0].trigger_message, reason);
  // Repeated: the same failure comes back, nothing new is written.
  auto again = store_->DispatchFires({fire}, now_, [](const v1::Fire&) -> FirePlan {
    ADD_FAILURE() << "planned twice";
    return {};
  });
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)[0].duplicate);
  EXPECT_EQ((*again)[0].status, v1::FIRE_STATUS_FAILED);
  EXPECT_EQ((*again)[0].message, reason);
  EXPECT_EQ((*again)[0].run_ids, std::vector<int64_t>{runs[0].id});
}

TEST_F(PgDispatchStoreTest, SchedulerReasonSurvivesDispatch) {
  v1::Fire ok = NewFire();
  v1::Fire failed = NewFire();
  {
    pqxx::connection c(dsn_);
    pqxx::work tx(c);
    tx.exec_params("UPDATE fires SET reason = 'misfire: 3 fire(s) missed' WHERE id IN ($1, $2)",
                   ok.fire_id(), failed.fire_id());
    tx.commit();
  }
  ASSERT_TRUE(
      store_
          ->DispatchFires(
              {ok}, now_,
              [](const v1::Fire&) {
                FirePlan p;
                p.runs.push_back(PlannedRun{"h:1", 0, 1, v1::RUN_STATUS_PENDING, "route FIRST"});
                return p;
              })
          .ok());
  ASSERT_TRUE(
      store_
          ->DispatchFires({failed}, now_,
                          [](const v1::Fire&) {
                            FirePlan p;
                            p.status = v1::FIRE_STATUS_FAILED;
                            p.reason = "no executor online";
                            p.runs.push_back(PlannedRun{"", 0, 1, v1::RUN_STATUS_FAILED, p.reason});
                            return p;
                          })
          .ok());
  EXPECT_EQ(std::get<1>(FireRow(dsn_, ok.fire_id())), "misfire: 3 fire(s) missed");
  EXPECT_EQ(std::get<1>(FireRow(dsn_, failed.fire_id())),
            "misfire: 3 fire(s) missed; no executor online");
}

TEST_F(PgDispatchStoreTest, UnknownFireAndWrongJobAreNotWritten) {
  v1::Fire unknown = MakeFire(987654, job_, now_);
  v1::Fire wrong_job = NewFire();
  wrong_job.mutable_job()->set_id(job_.id() + 100);
  v1::Fire good = NewFire();
  auto r = store_->DispatchFires({unknown, wrong_job, good, good}, now_, [](const v1::Fire&) {
    FirePlan p;
    p.runs.push_back(PlannedRun{"h:1", 0, 1, v1::RUN_STATUS_PENDING, "x"});
    return p;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_TRUE((*r)[0].not_found);
  EXPECT_EQ((*r)[0].message, "fire 987654: not found");
  EXPECT_TRUE((*r)[1].not_found);
  EXPECT_THAT((*r)[1].message, HasSubstr("belongs to job"));
  EXPECT_EQ(std::get<0>(FireRow(dsn_, wrong_job.fire_id())), v1::FIRE_STATUS_PENDING);
  EXPECT_FALSE((*r)[2].duplicate);
  EXPECT_EQ((*r)[2].created.size(), 1u);
  // The same fire twice in one batch: created once, the repeat is a duplicate.
  EXPECT_TRUE((*r)[3].duplicate);
  EXPECT_TRUE((*r)[3].created.empty());
  EXPECT_EQ((*r)[3].run_ids, (*r)[2].run_ids);
  EXPECT_EQ(RunsOf(dsn_, good.fire_id()).size(), 1u);
}

TEST_F(PgDispatchStoreTest, ManyFiresInOneBatch) {
  std::vector<v1::Fire> fires;
  for (int i = 0; i < 300; ++i) fires.push_back(NewFire());
  auto r = store_->DispatchFires(fires, now_, [](const v1::Fire& f) {
    FirePlan p;
    p.runs.push_back(
        PlannedRun{absl::StrCat("h:", f.fire_id() % 3), 0, 1, v1::RUN_STATUS_PENDING, "x"});
    return p;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t i = 0; i < fires.size(); ++i) {
    EXPECT_EQ((*r)[i].fire_id, fires[i].fire_id());
    ASSERT_EQ((*r)[i].created.size(), 1u);
    EXPECT_EQ(RunById(dsn_, (*r)[i].created[0].run_id).address,
              absl::StrCat("h:", fires[i].fire_id() % 3));
  }
}

TEST_F(PgDispatchStoreTest, TriggerOutcomesNeverOverwriteTerminal) {
  const int64_t started = PendingRun();
  const int64_t discarded = PendingRun();
  const int64_t finished_first = PendingRun();
  // The result of finished_first arrives before its trigger reply.
  auto rec = store_->RecordResults({Result(finished_first, v1::RUN_STATUS_SUCCEEDED, 0, "ok")},
                                   now_, std::nullopt, {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  auto done = store_->RecordTriggerOutcomes(
      {TriggerOutcome{started, v1::RUN_STATUS_RUNNING, "; executor: STARTED", now_},
       TriggerOutcome{discarded, v1::RUN_STATUS_DISCARDED, "; executor: DISCARDED", now_},
       TriggerOutcome{finished_first, v1::RUN_STATUS_RUNNING, "; executor: STARTED", now_}});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_THAT(*done, ElementsAre(discarded));
  RunRow s = RunById(dsn_, started);
  EXPECT_EQ(s.status, v1::RUN_STATUS_RUNNING);
  EXPECT_TRUE(s.has_start);
  EXPECT_FALSE(s.has_end);
  EXPECT_EQ(s.trigger_message, "route FIRST; executor: STARTED");
  RunRow d = RunById(dsn_, discarded);
  EXPECT_EQ(d.status, v1::RUN_STATUS_DISCARDED);
  EXPECT_TRUE(d.has_end);
  RunRow f = RunById(dsn_, finished_first);
  EXPECT_EQ(f.status, v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(f.trigger_message, "route FIRST; executor: STARTED");
}

TEST_F(PgDispatchStoreTest, ResultsRecordedOnceDuplicatesAndLateKeptUnknownRefused) {
  const int64_t a = PendingRun();
  const int64_t b = PendingRun();
  ASSERT_TRUE(store_
                  ->RecordTriggerOutcomes(
                      {TriggerOutcome{b, v1::RUN_STATUS_RUNNING, "; executor: STARTED", now_}})
                  .ok());
  auto first = store_->RecordResults({Result(a, v1::RUN_STATUS_SUCCEEDED, 0, "done"),
                                      Result(b, v1::RUN_STATUS_KILLED, 9, "killed"),
                                      Result(424242, v1::RUN_STATUS_FAILED, 1, "?")},
                                     now_, std::nullopt, {});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ((*first)[0].disposition, ResultDisposition::kRecorded);
  EXPECT_EQ((*first)[1].disposition, ResultDisposition::kRecorded);
  EXPECT_EQ((*first)[2].disposition, ResultDisposition::kUnknown);
  RunRow ra = RunById(dsn_, a);
  EXPECT_EQ(ra.status, v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(ra.result_message, "done");
  EXPECT_TRUE(ra.has_start);  // Never started per the trigger: start = end.
  EXPECT_TRUE(ra.has_end);

  // A duplicate changes nothing; a conflicting late result is kept beside the decided status.
  auto dup = store_->RecordResults({Result(a, v1::RUN_STATUS_SUCCEEDED, 0, "done"),
                                    Result(b, v1::RUN_STATUS_SUCCEEDED, 0, "late")},
                                   now_, std::nullopt, {});
  ASSERT_TRUE(dup.ok()) << dup.status();
  EXPECT_EQ((*dup)[0].disposition, ResultDisposition::kDuplicate);
  EXPECT_EQ((*dup)[1].disposition, ResultDisposition::kLate);
  EXPECT_EQ(RunById(dsn_, a).late_result, "");
  ra = RunById(dsn_, a);
  EXPECT_EQ(ra.status, v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(ra.result_code, 0);
  EXPECT_EQ(ra.result_message, "done");
  RunRow rb = RunById(dsn_, b);
  EXPECT_EQ(rb.status, v1::RUN_STATUS_KILLED);
  EXPECT_EQ(rb.result_code, 9);
}

// A success of a job without child jobs leaves nothing for the scheduler's follow-up monitor
// (retries, alarms and child jobs concern the others): it is marked done with the result.
TEST_F(PgDispatchStoreTest, SuccessWithoutChildJobsNeedsNoFollowUp) {
  const int64_t plain_ok = PendingRun();
  const int64_t plain_failed = PendingRun();
  const int64_t parent_ok = PendingRun();
  auto followup_done = [&](int64_t run_id) {
    pqxx::connection conn(dsn_);
    pqxx::nontransaction tx(conn);
    return tx.exec1(absl::StrCat("SELECT followup_done FROM runs WHERE id = ", run_id))[0]
        .as<bool>();
  };
  ASSERT_TRUE(store_
                  ->RecordResults({Result(plain_ok, v1::RUN_STATUS_SUCCEEDED, 0, "ok"),
                                   Result(plain_failed, v1::RUN_STATUS_FAILED, 1, "no")},
                                  now_, std::nullopt, {})
                  .ok());
  EXPECT_TRUE(followup_done(plain_ok));
  EXPECT_FALSE(followup_done(plain_failed));  // Retry or alarm: the monitor's business.
  {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    tx.exec(
        absl::StrCat("UPDATE jobs SET child_job_ids = '{", job_.id(), "}' WHERE id = ", job_.id()));
    tx.commit();
  }
  ASSERT_TRUE(store_
                  ->RecordResults({Result(parent_ok, v1::RUN_STATUS_SUCCEEDED, 0, "ok")}, now_,
                                  std::nullopt, {})
                  .ok());
  EXPECT_FALSE(followup_done(parent_ok));  // Its child jobs are still to be fired.
}

TEST_F(PgDispatchStoreTest, ResultMessagesAreEscaped) {
  const int64_t a = PendingRun();
  const std::string nasty = "it's \"quoted\"; DROP TABLE runs; --\\ ünï";
  ASSERT_TRUE(
      store_->RecordResults({Result(a, v1::RUN_STATUS_FAILED, 1, nasty)}, now_, std::nullopt, {})
          .ok());
  EXPECT_EQ(RunById(dsn_, a).result_message, nasty);
}

// (start_time, end_time) of a run; InfinitePast when NULL.
std::pair<absl::Time, absl::Time> RunTimes(const std::string& dsn, int64_t run_id) {
  pqxx::connection conn(dsn);
  pqxx::nontransaction tx(conn);
  pqxx::row r =
      tx.exec1(absl::StrCat("SELECT (EXTRACT(EPOCH FROM start_time)*1000000)::BIGINT, "
                            "(EXTRACT(EPOCH FROM end_time)*1000000)::BIGINT FROM runs WHERE id = ",
                            run_id));
  auto time = [](const pqxx::field& f) {
    return f.is_null() ? absl::InfinitePast() : absl::FromUnixMicros(f.as<int64_t>());
  };
  return {time(r[0]), time(r[1])};
}

// A trigger answer the dispatcher held is written by the result write of its run: one call
// sets status, times, result and the answer's message.
TEST_F(PgDispatchStoreTest, ResultWriteCarriesHeldTriggerAnswers) {
  const int64_t queued = PendingRun();    // The executor sends the real start.
  const int64_t started = PendingRun();   // No start from the executor: the trigger's.
  const int64_t plain = PendingRun();     // No held answer.
  const int64_t finished = PendingRun();  // Already terminal: its answer is not applied.
  ASSERT_TRUE(store_
                  ->RecordResults({Result(finished, v1::RUN_STATUS_KILLED, 9, "killed")}, now_,
                                  std::nullopt, {})
                  .ok());
  const absl::Time trigger_at = now_ + absl::Milliseconds(20);
  const absl::Time executor_start = now_ + absl::Milliseconds(300);
  v1::RunResult queued_result = Result(queued, v1::RUN_STATUS_SUCCEEDED, 0, "ok");
  *queued_result.mutable_start_time() = ToProto(executor_start);
  auto rec = store_->RecordResults(
      {queued_result, Result(started, v1::RUN_STATUS_FAILED, 2, "boom"),
       Result(plain, v1::RUN_STATUS_SUCCEEDED, 0, "ok"),
       Result(finished, v1::RUN_STATUS_SUCCEEDED, 0, "late")},
      now_, std::nullopt,
      {TriggerOutcome{queued, v1::RUN_STATUS_RUNNING, "; executor: QUEUED", trigger_at},
       TriggerOutcome{started, v1::RUN_STATUS_RUNNING, "; executor: STARTED", trigger_at},
       TriggerOutcome{finished, v1::RUN_STATUS_RUNNING, "; executor: STARTED", trigger_at}});
  ASSERT_TRUE(rec.ok()) << rec.status();
  ASSERT_EQ(rec->size(), 4u);
  EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kRecorded);
  EXPECT_EQ((*rec)[1].disposition, ResultDisposition::kRecorded);
  EXPECT_EQ((*rec)[2].disposition, ResultDisposition::kRecorded);
  EXPECT_EQ((*rec)[3].disposition, ResultDisposition::kLate);
  const absl::Time end = now_ + absl::Seconds(1);  // Result()'s end_time.

  RunRow q = RunById(dsn_, queued);
  EXPECT_EQ(q.status, v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(q.trigger_message, "route FIRST; executor: QUEUED");
  EXPECT_EQ(RunTimes(dsn_, queued), std::make_pair(executor_start, end));

  RunRow s = RunById(dsn_, started);
  EXPECT_EQ(s.status, v1::RUN_STATUS_FAILED);
  EXPECT_EQ(s.result_code, 2);
  EXPECT_EQ(s.result_message, "boom");
  EXPECT_EQ(s.trigger_message, "route FIRST; executor: STARTED");
  EXPECT_EQ(RunTimes(dsn_, started), std::make_pair(trigger_at, end));

  RunRow p = RunById(dsn_, plain);
  EXPECT_EQ(p.status, v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(p.trigger_message, "route FIRST");
  EXPECT_EQ(RunTimes(dsn_, plain), std::make_pair(end, end));  // Never started: start = end.

  RunRow f = RunById(dsn_, finished);
  EXPECT_EQ(f.status, v1::RUN_STATUS_KILLED);
  EXPECT_EQ(f.trigger_message, "route FIRST");  // The caller writes this answer itself.
  EXPECT_THAT(f.late_result, HasSubstr("SUCCEEDED code 0"));
}

// A held answer written after its run's result was recorded elsewhere (another replica) adds
// its message but never reopens the run or moves its times.
TEST_F(PgDispatchStoreTest, LateHeldAnswerDoesNotReopenFinishedRun) {
  const int64_t run = PendingRun();
  ASSERT_TRUE(
      store_
          ->RecordResults({Result(run, v1::RUN_STATUS_SUCCEEDED, 0, "ok")}, now_, std::nullopt, {})
          .ok());
  const auto times = RunTimes(dsn_, run);
  auto done = store_->RecordTriggerOutcomes({TriggerOutcome{
      run, v1::RUN_STATUS_RUNNING, "; executor: STARTED", now_ + absl::Seconds(5)}});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->empty());
  RunRow r = RunById(dsn_, run);
  EXPECT_EQ(r.status, v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(r.result_message, "ok");
  EXPECT_EQ(r.trigger_message, "route FIRST; executor: STARTED");
  EXPECT_EQ(RunTimes(dsn_, run), times);
}

}  // namespace
}  // namespace jobwheel::dispatcher

namespace jobwheel::dispatcher {
namespace {

// A per-app executor token records results only for runs of its apps.
TEST_F(PgDispatchStoreTest, ResultsOutsideTheReportersAppsAreForbidden) {
  const int64_t a = PendingRun();
  std::string app;
  {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    app = tx.exec1(absl::StrCat("SELECT app FROM runs WHERE id = ", a))[0].as<std::string>();
  }
  auto denied = store_->RecordResults({Result(a, v1::RUN_STATUS_SUCCEEDED, 0, "spoofed"),
                                       Result(424242, v1::RUN_STATUS_FAILED, 1, "?")},
                                      now_, std::vector<std::string>{"other", "x\"y"}, {});
  ASSERT_TRUE(denied.ok()) << denied.status();
  EXPECT_EQ((*denied)[0].disposition, ResultDisposition::kForbidden);
  EXPECT_EQ((*denied)[1].disposition, ResultDisposition::kUnknown);
  EXPECT_EQ(RunById(dsn_, a).status, v1::RUN_STATUS_PENDING);
  auto allowed = store_->RecordResults({Result(a, v1::RUN_STATUS_SUCCEEDED, 0, "ok")}, now_,
                                       std::vector<std::string>{"other", app}, {});
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ((*allowed)[0].disposition, ResultDisposition::kRecorded);
  EXPECT_EQ(RunById(dsn_, a).result_message, "ok");
}

// A held run moves to another executor only while PENDING.
TEST_F(PgDispatchStoreTest, RerouteMovesOnlyPendingRuns) {
  const int64_t pending = PendingRun();
  const int64_t done = PendingRun();
  ASSERT_TRUE(
      store_
          ->RecordResults({Result(done, v1::RUN_STATUS_SUCCEEDED, 0, "ok")}, now_, std::nullopt, {})
          .ok());
  auto moved = store_->RerouteRuns({Reroute{pending, "h:9", "; executor h:1 left"},
                                    Reroute{done, "h:9", "; executor h:1 left"}});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_THAT(*moved, ElementsAre(pending));
  EXPECT_EQ(RunById(dsn_, pending).address, "h:9");
  EXPECT_EQ(RunById(dsn_, pending).trigger_message, "route FIRST; executor h:1 left");
  EXPECT_EQ(RunById(dsn_, done).address, "h:1");
}

}  // namespace
}  // namespace jobwheel::dispatcher

namespace jobwheel::dispatcher {
namespace {

// The store's statements are planned once per connection (PlanMode::kIndexLookups), here on
// nearly empty tables, where a sequential scan is the cheapest plan: the cached plans must
// still reach rows only through indexes, or they would scan the whole table once it grows.
TEST_F(PgDispatchStoreTest, CachedPlansLookRowsUpByIndex) {
  PgPool one(dsn_, 1, nullptr, PgPool::PlanMode::kIndexLookups);
  PgDispatchStore store(one);
  auto plan = [](const v1::Fire&) {
    FirePlan p;
    p.runs.push_back(PlannedRun{"h:1", 0, 1, v1::RUN_STATUS_PENDING, "route FIRST"});
    return p;
  };
  v1::Fire fire = NewFire();
  auto dispatched = store.DispatchFires({fire}, now_, plan);
  ASSERT_TRUE(dispatched.ok()) << dispatched.status();
  ASSERT_TRUE(store.DispatchFires({fire}, now_, plan).ok());  // Duplicate: looks its runs up.
  const int64_t run = (*dispatched)[0].created.at(0).run_id;
  keys_[run] = (*dispatched)[0].created.at(0).planned.result_key;
  auto moved = store.RerouteRuns({Reroute{run, "h:2", "; moved"}});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_THAT(*moved, ElementsAre(run));
  ASSERT_TRUE(
      store.RecordTriggerOutcomes({TriggerOutcome{run, v1::RUN_STATUS_RUNNING, "", now_}}).ok());
  ASSERT_TRUE(
      store.RecordResults({Result(run, v1::RUN_STATUS_SUCCEEDED, 0, "ok")}, now_, std::nullopt, {})
          .ok());
  auto late =
      store.RecordResults({Result(run, v1::RUN_STATUS_FAILED, 1, "late")}, now_, std::nullopt, {});
  ASSERT_TRUE(late.ok()) << late.status();
  ASSERT_EQ((*late)[0].disposition, ResultDisposition::kLate);

  const std::string ids = "'{1,2}'";
  const std::string at = "now()";
  const std::vector<std::pair<std::string, std::string>> statements = {
      {"lock_fires", ids},
      {"update_fires", ids + ", '{2,2}', '{\"\",\"\"}', " + at},
      {"runs_of_fires", ids},
      {"lock_runs", ids},
      {"lock_reroute_runs", ids},
      {"reroute_runs", ids + ", '{a,b}', '{x,y}'"},
      {"record_trigger_outcomes", ids + ", '{2,2}', '{x,y}', ARRAY[now(), now()]"},
      {"lock_result_runs", ids},
      {"record_results", ids + ", '{3,3}', '{0,0}', '{a,b}', ARRAY[now(), now()], "
                               "ARRAY[now(), now()], '{\"\",\"\"}', ARRAY[now(), now()]"},
      {"record_late_results", ids + ", '{a,b}'"},
  };
  ASSERT_TRUE(one.Run("explain",
                      [&](pqxx::connection& conn) {
                        pqxx::nontransaction tx(conn);
                        for (const auto& [name, args] : statements) {
                          std::string text;
                          for (const auto& row :
                               tx.exec(absl::StrCat("EXPLAIN EXECUTE ", name, "(", args, ")"))) {
                            absl::StrAppend(&text, row[0].as<std::string>(), "\n");
                          }
                          EXPECT_THAT(text, ::testing::Not(HasSubstr("Seq Scan"))) << name;
                          EXPECT_THAT(text, HasSubstr("Index")) << name;
                          // A join filter compares every row of one side with every row of the
                          // other: quadratic in the batch size.
                          EXPECT_THAT(text, ::testing::Not(HasSubstr("Join Filter"))) << name;
                        }
                        // Each was planned generically (once), not for each execution.
                        for (const auto& row :
                             tx.exec("SELECT name, custom_plans FROM pg_prepared_statements")) {
                          EXPECT_EQ(row[1].as<int64_t>(), 0) << row[0].as<std::string>();
                        }
                      })
                  .ok());
}

}  // namespace
}  // namespace jobwheel::dispatcher

namespace jobwheel::dispatcher {
namespace {

// Every created run gets a result key; only its SHA-256 is stored, in the insert itself.
TEST_F(PgDispatchStoreTest, EveryCreatedRunHasItsKeysHash) {
  const int64_t run = PendingRun();
  ASSERT_EQ(keys_[run].size(), 32u);
  EXPECT_EQ(RunById(dsn_, run).result_key_hash, ResultKeyHash(keys_[run]));
  // A FAILED run (no executor) has one too: no result can be made up for it.
  auto r = store_->DispatchFires({NewFire()}, now_, [](const v1::Fire&) {
    FirePlan p;
    p.status = v1::FIRE_STATUS_FAILED;
    p.reason = "no executor online";
    p.runs.push_back(PlannedRun{"", 0, 1, v1::RUN_STATUS_FAILED, p.reason});
    return p;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  const CreatedRun& failed = (*r)[0].created[0];
  EXPECT_EQ(RunById(dsn_, failed.run_id).result_key_hash, ResultKeyHash(failed.planned.result_key));
}

TEST_F(PgDispatchStoreTest, ResultsWithoutTheRunsKeyAreRefusedAndLeaveTheRun) {
  const int64_t run = PendingRun();
  ASSERT_TRUE(store_
                  ->RecordTriggerOutcomes(
                      {TriggerOutcome{run, v1::RUN_STATUS_RUNNING, "; executor: STARTED", now_}})
                  .ok());
  v1::RunResult forged = Result(run, v1::RUN_STATUS_SUCCEEDED, 0, "forged");
  forged.clear_result_key();
  v1::RunResult wrong = forged;
  std::string key = keys_[run];
  key[17] ^= 0x40;
  wrong.set_result_key(key);
  v1::RunResult hash_as_key = forged;  // What a database reader could know.
  hash_as_key.set_result_key(ResultKeyHash(keys_[run]));
  for (const v1::RunResult& bad : {forged, wrong, hash_as_key}) {
    auto rec = store_->RecordResults({bad}, now_, std::nullopt,
                                     {TriggerOutcome{run, v1::RUN_STATUS_RUNNING, "; held", now_}});
    ASSERT_TRUE(rec.ok()) << rec.status();
    EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kBadKey);
  }
  RunRow row = RunById(dsn_, run);
  EXPECT_EQ(row.status, v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(row.result_message, "");
  EXPECT_EQ(row.trigger_message, "route FIRST; executor: STARTED");  // Answers not applied.
  EXPECT_FALSE(row.has_end);
  EXPECT_EQ(row.late_result, "");

  auto rec = store_->RecordResults({Result(run, v1::RUN_STATUS_SUCCEEDED, 0, "real")}, now_,
                                   std::nullopt, {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kRecorded);
  EXPECT_EQ(RunById(dsn_, run).result_message, "real");
  // After it is decided, a keyless result is still refused (not kept as late).
  rec = store_->RecordResults({forged}, now_, std::nullopt, {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kBadKey);
  EXPECT_EQ(RunById(dsn_, run).late_result, "");
}

// Runs written before result keys (no hash) take results without one.
TEST_F(PgDispatchStoreTest, RunsWithoutAKeyHashTakeResultsWithoutAKey) {
  const int64_t run = PendingRun();
  Sql(absl::StrCat("UPDATE runs SET result_key_hash = NULL WHERE id = ", run));
  v1::RunResult r = Result(run, v1::RUN_STATUS_FAILED, 1, "old executor");
  r.clear_result_key();
  auto rec = store_->RecordResults({r}, now_, std::nullopt, {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kRecorded);
  EXPECT_EQ(RunById(dsn_, run).status, v1::RUN_STATUS_FAILED);
}

// A run declared LOST (its executor went offline) keeps LOST; its executor's result, arriving
// later, is kept in words; the same result again changes nothing, nor does another.
TEST_F(PgDispatchStoreTest, LateResultsAreKeptBesideTheDecidedStatusOnce) {
  const int64_t run = PendingRun();
  Sql(absl::StrCat("UPDATE runs SET status = ", static_cast<int>(v1::RUN_STATUS_LOST),
                   ", result_message = 'executor offline' WHERE id = ", run));
  const v1::RunResult late = Result(run, v1::RUN_STATUS_SUCCEEDED, 0, "done after all");
  auto rec = store_->RecordResults({late}, now_, std::nullopt, {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kLate);
  RunRow row = RunById(dsn_, run);
  EXPECT_EQ(row.status, v1::RUN_STATUS_LOST);
  EXPECT_EQ(row.result_message, "executor offline");
  EXPECT_EQ(row.late_result, "SUCCEEDED code 0 at 2027-01-15T08:00:01Z from h:1: done after all");

  rec = store_->RecordResults({late}, now_ + absl::Minutes(1), std::nullopt, {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kDuplicate);
  rec = store_->RecordResults({Result(run, v1::RUN_STATUS_FAILED, 2, "other")}, now_, std::nullopt,
                              {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kDuplicate);
  row = RunById(dsn_, run);
  EXPECT_EQ(row.status, v1::RUN_STATUS_LOST);
  EXPECT_EQ(row.late_result, "SUCCEEDED code 0 at 2027-01-15T08:00:01Z from h:1: done after all");
  // The same status as decided is a plain duplicate (no late result for it).
  const int64_t lost = PendingRun();
  Sql(absl::StrCat("UPDATE runs SET status = ", static_cast<int>(v1::RUN_STATUS_LOST),
                   " WHERE id = ", lost));
  rec = store_->RecordResults({Result(lost, v1::RUN_STATUS_LOST, 1, "x")}, now_, std::nullopt, {});
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ((*rec)[0].disposition, ResultDisposition::kDuplicate);
  EXPECT_EQ(RunById(dsn_, lost).late_result, "");
}

}  // namespace
}  // namespace jobwheel::dispatcher
