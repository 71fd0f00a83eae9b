// PgFireStore against a real PostgreSQL, through the FireEngine and Monitors that use it:
// claims, misfires, stale entries, fencing and takeover; follow-ups, lost runs and retention.
// The engine's and monitors' time is a SimulatedClock (the elector's is real: it talks to the
// database); the dispatcher is a recording fake that marks fire rows as a dispatcher does.
#include "services/scheduler/pg_fire_store.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/scheduler/fire_engine.h"
#include "services/scheduler/leader_elector.h"
#include "services/scheduler/monitors.h"

namespace jobwheel::scheduler {
namespace {

using ::jobwheel::testing::Eventually;

// Records batches and marks fires DISPATCHED as a real dispatcher would.
class RecordingDispatcher : public DispatchClient {
 public:
  explicit RecordingDispatcher(std::string dsn) : conn_(dsn) {}
  absl::StatusOr<jobwheel::v1::DispatchResponse> Dispatch(
      const jobwheel::v1::DispatchRequest& request) override {
    absl::MutexLock lock(&mu_);
    jobwheel::v1::DispatchResponse response;
    pqxx::work tx(conn_);
    // As a dispatcher does: only a PENDING fire row is dispatched; a missing one is
    // reported not_found.
    for (const auto& f : request.fires()) {
      auto* o = response.add_outcomes();
      o->set_fire_id(f.fire_id());
      const pqxx::result r = tx.exec_params(
          "UPDATE fires SET status = 2 WHERE id = $1 AND status = 1 RETURNING id", f.fire_id());
      if (!r.empty()) {
        ids_.push_back(f.fire_id());
        o->set_status(jobwheel::v1::FIRE_STATUS_DISPATCHED);
        continue;
      }
      o->set_status(jobwheel::v1::FIRE_STATUS_FAILED);
      if (tx.exec_params("SELECT 1 FROM fires WHERE id = $1", f.fire_id()).empty()) {
        o->set_not_found(true);
        ++not_found_;
      }
    }
    tx.commit();
    return response;
  }
  std::vector<int64_t> ids() {
    absl::MutexLock lock(&mu_);
    return ids_;
  }
  int not_found() {
    absl::MutexLock lock(&mu_);
    return not_found_;
  }

 private:
  absl::Mutex mu_;
  pqxx::connection conn_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> ids_ ABSL_GUARDED_BY(mu_);
  int not_found_ ABSL_GUARDED_BY(mu_) = 0;
};

// Fails the first call (UNAVAILABLE), then passes calls on; keeps every request it got.
class FlakyDispatcher : public DispatchClient {
 public:
  explicit FlakyDispatcher(DispatchClient& next) : next_(next) {}
  absl::StatusOr<jobwheel::v1::DispatchResponse> Dispatch(
      const jobwheel::v1::DispatchRequest& request) override {
    {
      absl::MutexLock lock(&mu_);
      requests_.push_back(request);
      if (requests_.size() == 1) return absl::UnavailableError("connection refused");
    }
    return next_.Dispatch(request);
  }
  std::vector<jobwheel::v1::DispatchRequest> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

 private:
  DispatchClient& next_;
  absl::Mutex mu_;
  std::vector<jobwheel::v1::DispatchRequest> requests_ ABSL_GUARDED_BY(mu_);
};

// One scheduler replica: elector + engine wired as main.cc wires them.
struct Replica {
  Replica(const std::string& dsn, const std::string& id, SimulatedClock& clock,
          DispatchClient& dispatcher, prometheus::Registry& registry,
          absl::Duration retry = absl::Milliseconds(50),
          FireEngine::Options options = FireEngine::Options())
      : metrics(registry),
        elector({dsn, id, retry, absl::Milliseconds(50)},
                {[this](int64_t e) { engine->OnElected(e); }, [this] { engine->OnDeposed(); }},
                RealClock::Get()),
        store(elector) {
    engine = std::make_unique<FireEngine>(options, store, dispatcher, clock, metrics);
  }
  // The elector calls into the engine until it is shut down.
  ~Replica() {
    elector.Shutdown();
    engine->Shutdown();
  }
  SchedulerMetrics metrics;
  LeaderElector elector;
  PgFireStore store;
  std::unique_ptr<FireEngine> engine;
};

class PgFireStoreEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    conn_ = std::make_unique<pqxx::connection>(dsn_);
    // Whole seconds, like cron times.
    clock_.Set(absl::FromUnixSeconds(absl::ToUnixSeconds(RealClock::Get().Now())));
    dispatcher_ = std::make_unique<RecordingDispatcher>(dsn_);
  }

  int64_t InsertJob(absl::Time next_fire, int misfire = 1) {
    pqxx::work tx(*conn_);
    auto r = tx.exec_params(
        "INSERT INTO jobs (app, name, schedule_kind, cron_expression, handler, misfire_strategy, "
        "next_fire_at) VALUES ('demo', 'every-second', 'CRON', '* * * * * ?', 'echo', $1, "
        "$2::timestamptz) RETURNING id",
        misfire, ToPgTimestamp(next_fire));
    tx.commit();
    return r[0][0].as<int64_t>();
  }

  int64_t Count(const std::string& sql) {
    pqxx::nontransaction tx(*conn_);
    return tx.exec(sql)[0][0].as<int64_t>();
  }

  std::unique_ptr<Replica> Elect(const std::string& id,
                                 absl::Duration retry = absl::Milliseconds(50),
                                 FireEngine::Options options = FireEngine::Options()) {
    auto r = std::make_unique<Replica>(dsn_, id, clock_, *dispatcher_, registry_, retry, options);
    r->elector.Start();
    EXPECT_TRUE(Eventually([&] { return r->elector.is_leader() && r->engine->active(); }));
    return r;
  }

  std::string dsn_;
  std::unique_ptr<pqxx::connection> conn_;
  SimulatedClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<RecordingDispatcher> dispatcher_;
};

TEST_F(PgFireStoreEngineTest, ClaimRecordsEachDueSecondOnceAndAdvances) {
  const absl::Time now = clock_.Now();
  const int64_t job = InsertJob(now + absl::Seconds(1));
  auto leader = Elect("a");
  auto claimed = leader->engine->ClaimOnce();
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_EQ(*claimed, 1);
  // Due within the 5 s pre-read window, so claimed; recorded up to 5 s beyond it
  // (claim_ahead): now+1 .. now+10 inclusive.
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 1 AND trigger_type = 1"), 10);
  EXPECT_EQ(leader->engine->held(), 10u);
  EXPECT_EQ(Count(absl::StrCat("SELECT (EXTRACT(EPOCH FROM next_fire_at) * 1000000)::BIGINT "
                               "FROM jobs WHERE id = ",
                               job)),
            absl::ToUnixMicros(now + absl::Seconds(11)));
  // A second pass claims nothing new.
  auto again = leader->engine->ClaimOnce();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM fires"), 10);
  // The job is not claimed again until its next fire (now+11) is within the window: one row
  // rewrite per 5 fires, not one per fire.
  clock_.Advance(absl::Seconds(5));
  again = leader->engine->ClaimOnce();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
  clock_.Advance(absl::Seconds(1));
  again = leader->engine->ClaimOnce();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM fires"), 16);  // now+11 .. now+16 added.
  EXPECT_EQ(Count("SELECT count(DISTINCT scheduled_at) FROM fires"), 16);
}

TEST_F(PgFireStoreEngineTest, MisfireDoNothingSkipsAndRecordsIt) {
  const absl::Time now = clock_.Now();
  InsertJob(now - absl::Seconds(60), /*misfire=DO_NOTHING*/ 1);
  auto leader = Elect("a");
  ASSERT_TRUE(leader->engine->ClaimOnce().ok());
  // 55 missed times (older than 5 s) become one SKIPPED row; the last 5 s still fire.
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 3 AND reason LIKE 'misfire: 55 %'"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 1"), 16);  // now-5 .. now+10
}

TEST_F(PgFireStoreEngineTest, MisfireFireOnceNowFiresOnce) {
  const absl::Time now = clock_.Now();
  InsertJob(now - absl::Seconds(60), /*misfire=FIRE_ONCE_NOW*/ 2);
  auto leader = Elect("a");
  ASSERT_TRUE(leader->engine->ClaimOnce().ok());
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 1 AND trigger_type = 4"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 3"), 0);
}

TEST_F(PgFireStoreEngineTest, DueFiresAreHandedOffAndStaleOnesAreNot) {
  const absl::Time now = clock_.Now();
  const int64_t job = InsertJob(now + absl::Seconds(1));
  FireEngine::Options options;
  options.misfire_threshold = absl::Minutes(1);  // Handed off up to 9 s late, not misfires.
  auto leader = Elect("a", absl::Milliseconds(50), options);
  leader->engine->Start();
  ASSERT_TRUE(leader->engine->ClaimOnce().ok());
  // As UpdateJob/PauseJob do: the future pending fires go away.
  {
    pqxx::work tx(*conn_);
    tx.exec_params(
        "DELETE FROM fires WHERE job_id = $1 AND status = 1 AND scheduled_at > $2::timestamptz",
        job, ToPgTimestamp(now + absl::Seconds(2)));
    tx.exec_params("UPDATE jobs SET enabled = false WHERE id = $1", job);
    tx.commit();
  }
  clock_.Advance(absl::Seconds(10));
  ASSERT_TRUE(Eventually([&] { return leader->engine->held() == 0; }));
  // Only now+1 and now+2 survived the edit; the other held fires (now+3 .. now+10) reach the
  // dispatcher, which finds their rows gone and runs nothing.
  EXPECT_EQ(dispatcher_->ids().size(), 2u);
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 2"), 2);
  EXPECT_EQ(dispatcher_->not_found(), 8);
  leader->engine->Shutdown();
}

// A fire goes to the dispatcher dispatch_lead before its scheduled time (the dispatcher holds
// its runs until then), and no earlier.
TEST_F(PgFireStoreEngineTest, FiresAreHandedOffTheLeadAheadOfTheirTime) {
  const absl::Time now = clock_.Now();
  InsertJob(now + absl::Seconds(1));
  auto leader = Elect("a");
  leader->engine->Start();
  ASSERT_TRUE(leader->engine->ClaimOnce().ok());
  const absl::Duration lead = FireEngine::Options().dispatch_lead;
  ASSERT_GT(lead, absl::ZeroDuration());
  clock_.Advance(absl::Seconds(1) - lead);
  ASSERT_TRUE(Eventually([&] { return dispatcher_->ids().size() == 1; }));
  EXPECT_EQ(Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 2 AND scheduled_at = ",
                               "'", ToPgTimestamp(now + absl::Seconds(1)), "'::timestamptz")),
            1);
  // now+2 .. now+10: not yet (the dispatcher saw the fire before the engine dropped it).
  EXPECT_TRUE(Eventually([&] { return leader->engine->held() == 9u; })) << leader->engine->held();
  leader->engine->Shutdown();
}

// A failed Dispatch is retried with the same fire, complete (its job fields included).
TEST_F(PgFireStoreEngineTest, FailedHandOffIsRetriedWithTheWholeFire) {
  const absl::Time now = clock_.Now();
  InsertJob(now + absl::Seconds(1));
  FlakyDispatcher flaky(*dispatcher_);
  Replica leader(dsn_, "a", clock_, flaky, registry_);
  leader.elector.Start();
  ASSERT_TRUE(Eventually([&] { return leader.elector.is_leader() && leader.engine->active(); }));
  leader.engine->Start();
  ASSERT_TRUE(leader.engine->ClaimOnce().ok());
  clock_.Advance(absl::Seconds(1));  // now+1 is due for hand-off; the retry backoff is 100 ms.
  ASSERT_TRUE(Eventually([&] { return flaky.requests().size() == 1; }));
  clock_.Advance(absl::Milliseconds(100));
  ASSERT_TRUE(Eventually([&] { return dispatcher_->ids().size() == 1; }));
  const auto requests = flaky.requests();
  ASSERT_GE(requests.size(), 2u);
  for (const auto& r : {requests[0], requests[1]}) {
    ASSERT_EQ(r.fires_size(), 1);
    EXPECT_EQ(r.fires(0).fire_id(), dispatcher_->ids()[0]);
    EXPECT_EQ(r.fires(0).job().app(), "demo");
    EXPECT_EQ(r.fires(0).job().handler(), "echo");
    EXPECT_EQ(FromProto(r.fires(0).scheduled_time()), now + absl::Seconds(1));
  }
  leader.engine->Shutdown();
}

TEST_F(PgFireStoreEngineTest, LosingTheLockSessionFencesTheLeader) {
  InsertJob(clock_.Now() + absl::Seconds(1));
  // A long retry interval so it cannot simply take the lock again during the test.
  auto leader = Elect("a", absl::Seconds(60));
  ASSERT_TRUE(leader->engine->ClaimOnce().ok());
  const int64_t before = Count("SELECT count(*) FROM fires");
  // Kill the session holding the advisory lock, as a network partition or server restart would.
  Count(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND "
      "granted AND pid <> pg_backend_pid()");
  {
    pqxx::work tx(*conn_);
    tx.exec("UPDATE jobs SET next_fire_at = now()");
    tx.commit();
  }
  auto claimed = leader->engine->ClaimOnce();
  EXPECT_FALSE(claimed.ok());
  EXPECT_EQ(leader->engine->held(), 0u);
  EXPECT_EQ(Count("SELECT count(*) FROM fires"), before);  // Nothing committed when deposed.
  leader->elector.Shutdown();
}

TEST_F(PgFireStoreEngineTest, NewLeaderTakesOverCommittedPendingFires) {
  InsertJob(clock_.Now() + absl::Seconds(1));
  auto a = Elect("a");
  ASSERT_TRUE(a->engine->ClaimOnce().ok());
  const int64_t epoch_a = a->elector.epoch();
  a->elector.Shutdown();  // Releases the lock; its fires were never handed off.
  auto b = Elect("b");
  EXPECT_GT(b->elector.epoch(), epoch_a);
  // on_elected runs right after the lock is taken.
  EXPECT_TRUE(Eventually([&] { return b->engine->held() == 10u; }));
  b->elector.Shutdown();
}

// Fires an old leader left PENDING that are more than misfire_threshold late when a new leader
// loads them follow their job's misfire strategy in the load's transaction: DO_NOTHING skips
// them all (SKIPPED, with the reason, counted), FIRE_ONCE_NOW hands the earliest off once as a
// MISFIRE fire and skips the rest. Fires on time are held as they are.
TEST_F(PgFireStoreEngineTest, TakeoverSettlesLatePendingFiresByTheJobsMisfireStrategy) {
  const absl::Time now = clock_.Now();
  const int64_t skip = InsertJob(now + absl::Hours(1), /*misfire=DO_NOTHING*/ 1);
  const int64_t once = InsertJob(now + absl::Hours(1), /*misfire=FIRE_ONCE_NOW*/ 2);
  {
    // As a leader of epoch 1 left them: 9 .. 6 s late, 2 s late, and 1 s ahead.
    pqxx::work tx(*conn_);
    tx.exec_params(
        "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, leader_epoch) "
        "SELECT j, $3::timestamptz + make_interval(secs => s), 1, 1, 1 "
        "FROM unnest(ARRAY[$1::bigint, $2::bigint]) AS j, "
        "unnest(ARRAY[-9, -8, -7, -6, -2, 1]) AS s",
        skip, once, ToPgTimestamp(now));
    tx.commit();
  }
  auto at = [&](int64_t job, int seconds) {
    return absl::StrCat(" AND job_id = ", job, " AND scheduled_at = '",
                        ToPgTimestamp(now + absl::Seconds(seconds)), "'::timestamptz");
  };
  FireEngine::Options options;
  options.load_batch = 3;  // The late fires span pages.
  auto leader = Elect("b", absl::Milliseconds(50), options);
  ASSERT_TRUE(Eventually([&] { return leader->engine->held() == 5u; })) << leader->engine->held();
  EXPECT_EQ(Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 3 AND job_id = ", skip,
                               " AND reason LIKE 'late: % skipped (DO_NOTHING)'")),
            4);
  EXPECT_EQ(Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 3 AND job_id = ", once,
                               " AND reason LIKE 'late: %(FIRE_ONCE_NOW)'")),
            3);
  EXPECT_EQ(Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 1 AND trigger_type = 4 "
                               "AND reason LIKE 'late: % fired once now (FIRE_ONCE_NOW)'",
                               at(once, -9))),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 1 AND trigger_type = 1"), 4);
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 1"), 5);
  double misfires = 0;
  for (const auto& family : registry_.Collect()) {
    if (family.name != "jobwheel_scheduler_misfires_total") continue;
    for (const auto& m : family.metric) misfires += m.counter.value;
  }
  EXPECT_EQ(misfires, 4 + 4);

  // Handed off: the fired-once fire and the fires on time, nothing skipped.
  leader->engine->Start();
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return dispatcher_->ids().size() == 5u; }))
      << dispatcher_->ids().size();
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 1"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM fires WHERE status = 2"), 5);
  EXPECT_EQ(Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 2", at(once, -9))), 1);
  leader->engine->Shutdown();
  leader->elector.Shutdown();
}

// The store's late settle on its own: held fires whose hand-off comes late are locked, judged
// and settled in one transaction; a row no longer PENDING, or whose job is gone, is not handed
// off.
TEST_F(PgFireStoreEngineTest, SettleLateFiresSkipsFiresOnceAndFailsOrphans) {
  const absl::Time now = clock_.Now();
  const int64_t skip = InsertJob(now + absl::Hours(1), 1);
  const int64_t once = InsertJob(now + absl::Hours(1), 2);
  const int64_t gone = InsertJob(now + absl::Hours(1), 1);
  auto fire = [&](int64_t job, int seconds, int status = 1) {
    pqxx::work tx(*conn_);
    auto r = tx.exec_params(
        "INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES ($1, "
        "$2::timestamptz, 1, $3) RETURNING id",
        job, ToPgTimestamp(now + absl::Seconds(seconds)), status);
    tx.commit();
    return r[0][0].as<int64_t>();
  };
  const int64_t s1 = fire(skip, -20), s2 = fire(skip, -19), o1 = fire(once, -20),
                o2 = fire(once, -19), taken = fire(skip, -18, /*DISPATCHED*/ 2),
                orphan = fire(gone, -20);
  {
    pqxx::work tx(*conn_);
    tx.exec_params("DELETE FROM jobs WHERE id = $1", gone);
    tx.commit();
  }
  auto leader = Elect("a");
  LatePlan plan;
  auto pending = leader->store.SettleLateFires(
      {s1, s2, o1, o2, taken, orphan},
      [&](const std::vector<jobwheel::v1::Fire>& fires) -> const LatePlan& {
        plan = PlanLateFires(fires, now, absl::Seconds(5));
        return plan;
      });
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_EQ(*pending, std::vector<int64_t>{o1});
  auto status = [&](int64_t id) {
    return Count(absl::StrCat("SELECT status * 10 + trigger_type FROM fires WHERE id = ", id));
  };
  EXPECT_EQ(status(s1), 31);  // SKIPPED cron.
  EXPECT_EQ(status(s2), 31);
  EXPECT_EQ(status(o1), 14);  // PENDING misfire.
  EXPECT_EQ(status(o2), 31);
  EXPECT_EQ(status(taken), 21);   // Left alone.
  EXPECT_EQ(status(orphan), 41);  // FAILED: its job is gone.
  leader->elector.Shutdown();
}

// --- Monitors ---

class PgFireStoreMonitorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    conn_ = std::make_unique<pqxx::connection>(*dsn);
    clock_.Set(RealClock::Get().Now());
    elector_ = std::make_unique<LeaderElector>(
        LeaderElector::Options{*dsn, "m", absl::Milliseconds(20), absl::Milliseconds(50)},
        LeaderElector::Callbacks{}, RealClock::Get());
    elector_->Start();
    const absl::Time deadline = RealClock::Get().Now() + absl::Seconds(10);
    while (!elector_->is_leader() && RealClock::Get().Now() < deadline)
      absl::SleepFor(absl::Milliseconds(5));
    ASSERT_TRUE(elector_->is_leader());
    metrics_ = std::make_unique<SchedulerMetrics>(registry_);
    Monitors::Options options;
    options.lost_after = absl::Minutes(10);
    options.pending_timeout = absl::Seconds(60);
    options.retention = absl::Hours(24);
    store_ = std::make_unique<PgFireStore>(*elector_);
    monitors_ = std::make_unique<Monitors>(options, *store_, clock_, *metrics_);
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

  // The outbox's rows: "kind key run_id sent", oldest first.
  std::vector<std::string> Outbox() {
    pqxx::work tx(*conn_);
    std::vector<std::string> out;
    for (const pqxx::row& r :
         tx.exec("SELECT kind, idempotency_key, COALESCE(run_id, 0), sent_at IS NOT NULL "
                 "FROM alarm_outbox ORDER BY id")) {
      out.push_back(absl::StrCat(r[0].as<std::string>(), " ", r[1].as<std::string>(), " ",
                                 r[2].as<int64_t>(), r[3].as<bool>() ? " sent" : ""));
    }
    return out;
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
  SimulatedClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<SchedulerMetrics> metrics_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<PgFireStore> store_;
  std::unique_ptr<Monitors> monitors_;
};

TEST_F(PgFireStoreMonitorsTest, FailedRunWithRetriesLeftGetsOneRetryFire) {
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
  EXPECT_TRUE(Outbox().empty());
}

TEST_F(PgFireStoreMonitorsTest, RetriesSpentQueuesOneAlarm) {
  const int64_t job = Job(/*retries=*/1);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_TIMED_OUT, /*attempt=*/1);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec("SELECT count(*) FROM fires WHERE trigger_type = 5"), 0);
  EXPECT_EQ(Outbox(),
            std::vector<std::string>{absl::StrCat("run_failed run_failed/", run, " ", run)});
  pqxx::work tx(*conn_);
  const std::string payload = tx.exec1("SELECT payload FROM alarm_outbox")[0].as<std::string>();
  EXPECT_NE(payload.find("\"status\":\"RUN_STATUS_TIMED_OUT\""), std::string::npos) << payload;
  EXPECT_NE(payload.find("\"contacts\":[\"ops@example.com\"]"), std::string::npos) << payload;
  EXPECT_NE(payload.find(absl::StrCat("\"key\":\"run_failed/", run, "\"")), std::string::npos);
}

TEST_F(PgFireStoreMonitorsTest, NoExecutorFailuresQueueOneAlarmPerJobAndHourInOnePass) {
  const int64_t job = Job(0);
  // As the dispatcher records a fire that found no executor: no executor address.
  for (int i = 0; i < 3; ++i) {
    const int64_t fire =
        Exec(absl::StrCat("INSERT INTO fires (job_id, scheduled_at, trigger_type, status) VALUES (",
                          job, ", now(), 1, 4) RETURNING id"));
    Exec(
        absl::StrCat("INSERT INTO runs (fire_id, job_id, app, trigger_type, status, "
                     "scheduled_time, trigger_time, trigger_message) VALUES (",
                     fire, ", ", job,
                     ", 'demo', 1, 4, now(), date_trunc('hour', now()), "
                     "'no executor online for app demo') RETURNING id"));
  }
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->alarms, 1);
  ASSERT_EQ(Outbox().size(), 1u);
  EXPECT_EQ(Outbox()[0].rfind(absl::StrCat("no_executor no_executor/", job, "/"), 0), 0u)
      << Outbox()[0];
}

TEST_F(PgFireStoreMonitorsTest, AJobWhoseScheduleCannotBeComputedStopsWithItsError) {
  const int64_t job = Exec(
      "INSERT INTO jobs (app, name, schedule_kind, cron_expression, handler, enabled) VALUES "
      "('demo', 'broken', 'CRON', 'not a cron', 'echo', true) RETURNING id");
  // A valid schedule without a next fire time (ended) and a NONE job are left alone.
  const int64_t ended = Exec(
      "INSERT INTO jobs (app, name, schedule_kind, cron_expression, handler, enabled) VALUES "
      "('demo', 'ended', 'CRON', '0 0 0 1 1 ? 2001', 'echo', true) RETURNING id");
  Job(0);
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->stopped_jobs, 1);
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM jobs WHERE id = ", job,
                              " AND NOT enabled AND schedule_error LIKE "
                              "'stored schedule cannot be computed: %'")),
            1);
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM jobs WHERE id = ", ended,
                              " AND enabled AND schedule_error IS NULL")),
            1);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  ASSERT_EQ(Outbox().size(), 1u);
  EXPECT_EQ(Outbox()[0].rfind(absl::StrCat("schedule_error schedule_error/", job, "/"), 0), 0u)
      << Outbox()[0];
}

TEST_F(PgFireStoreMonitorsTest, SucceededRunTriggersEachChildOnce) {
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

TEST_F(PgFireStoreMonitorsTest, ChildrenInAnotherAppFireOnlyWithinTheParentsChildScope) {
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

TEST_F(PgFireStoreMonitorsTest, KilledAndDiscardedRunsAreNotRetried) {
  const int64_t job = Job(3);
  Run(job, jobwheel::v1::RUN_STATUS_KILLED);
  Run(job, jobwheel::v1::RUN_STATUS_DISCARDED);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec("SELECT count(*) FROM fires WHERE trigger_type = 5"), 0);
  EXPECT_TRUE(Outbox().empty());
}

TEST_F(PgFireStoreMonitorsTest, RunningOnAnOfflineExecutorBecomesLostAfterTheLimit) {
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

TEST_F(PgFireStoreMonitorsTest, RunsOfAnExecutorThatRestartedBecomeLostAfterTheGrace) {
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
  register_executor(absl::Milliseconds(500));
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

TEST_F(PgFireStoreMonitorsTest, RunsOfAnExecutorTakenOfflineAreLostAfterTheGraceAndRetried) {
  const int64_t job = Job(1);
  // Started a second ago: far from --lost_run_after, which no longer matters here.
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_RUNNING, 0,
                          ", now() - interval '1 second', now() - interval '1 second'");
  auto executor = [&](const std::string& online, const std::string& offline_since) {
    Exec("DELETE FROM executors");
    Exec(absl::StrCat(
        "INSERT INTO executors (app, address, replica_id, session_id, lease_until, online, "
        "offline_since, instance_since) VALUES ('demo', '127.0.0.1:7200', 'r', 's', now(), ",
        online, ", ", offline_since, ", now() - interval '1 hour')"));
  };
  executor("false", "now() - interval '400 milliseconds'");  // Within the 500 ms grace.
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->lost, 0);
  // The same process reconnected: online again, offline_since cleared.
  executor("true", "NULL");
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", run)), 2);
  executor("false", "now() - interval '600 milliseconds'");
  counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->lost, 1);
  EXPECT_EQ(counts->retries, 1);  // Followed up by the same pass.
  ASSERT_EQ(counts->lost_runs.size(), 1u);
  EXPECT_EQ(counts->lost_runs[0].run_id, run);
  EXPECT_EQ(counts->lost_runs[0].app, "demo");
  EXPECT_EQ(counts->lost_runs[0].executor_address, "127.0.0.1:7200");
  ASSERT_TRUE(counts->lost_runs[0].after_offline.has_value());
  EXPECT_GE(*counts->lost_runs[0].after_offline, absl::Milliseconds(600));
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", run)),
            jobwheel::v1::RUN_STATUS_LOST);
  EXPECT_EQ(Exec(absl::StrCat("SELECT count(*) FROM fires WHERE trigger_type = 5 AND "
                              "attempt = 1 AND parent_run_id = ",
                              run)),
            1);
}

TEST_F(PgFireStoreMonitorsTest, ANewProcessUnderTheAddressLosesItsPredecessorsRuns) {
  const int64_t job = Job(0);
  const int64_t orphan = Run(job, jobwheel::v1::RUN_STATUS_RUNNING, 0,
                             ", now() - interval '10 seconds', now() - interval '10 seconds'");
  const int64_t current = Run(job, jobwheel::v1::RUN_STATUS_RUNNING, 0,
                              ", now() - interval '1 second', now() - interval '1 second'");
  auto registered = [&](const std::string& ago) {
    Exec("DELETE FROM executors");
    Exec(absl::StrCat(
        "INSERT INTO executors (app, address, replica_id, session_id, lease_until, "
        "instance_since) VALUES ('demo', '127.0.0.1:7200', 'r', 's', now() + interval '1 hour', "
        "now() - interval '",
        ago, "')"));
  };
  registered("900 milliseconds");  // Within the 1 s restart grace.
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", orphan)), 2);
  registered("1100 milliseconds");
  auto counts = monitors_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->lost, 1);
  ASSERT_EQ(counts->lost_runs.size(), 1u);
  EXPECT_EQ(counts->lost_runs[0].reason, FireStore::LostReason::kExecutorRestarted);
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", orphan)),
            jobwheel::v1::RUN_STATUS_LOST);
  // Started after the new process registered (its clock a second ahead at most): kept.
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", current)), 2);
}

TEST_F(PgFireStoreMonitorsTest, PendingRunWhoseTriggerNeverCompletedFails) {
  const int64_t job = Job(0);
  const int64_t run = Run(job, jobwheel::v1::RUN_STATUS_PENDING);
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", run)), 1);
  clock_.Advance(absl::Seconds(61));
  ASSERT_TRUE(monitors_->RunOnce().ok());
  EXPECT_EQ(Exec(absl::StrCat("SELECT status FROM runs WHERE id = ", run)),
            jobwheel::v1::RUN_STATUS_FAILED);
}

TEST_F(PgFireStoreMonitorsTest, RetentionDeletesOnlyOldFinishedHistory) {
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
