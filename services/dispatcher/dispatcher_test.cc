#include "services/dispatcher/dispatcher.h"

#include <map>
#include <memory>
#include <random>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/dispatcher/dispatch_test_util.h"
#include "services/dispatcher/fake_executor_clients.h"
#include "services/dispatcher/pg_dispatch_store.h"

namespace jobwheel::dispatcher {
namespace {

using ::jobwheel::testing::Eventually;
using ::testing::HasSubstr;
using namespace ::jobwheel::dispatcher::testing;  // NOLINT

constexpr absl::Duration kWait = absl::Seconds(10);

double CounterValue(prometheus::Registry& registry, const std::string& name,
                    const std::map<std::string, std::string>& labels) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      std::map<std::string, std::string> got;
      for (const auto& l : m.label) got[l.name] = l.value;
      if (got == labels) return m.counter.value;
    }
  }
  return 0;
}

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = jobwheel::testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 4, nullptr, PgPool::PlanMode::kIndexLookups);
    store_ = std::make_unique<PgDispatchStore>(*pool_);
    metrics_ = std::make_unique<DispatcherMetrics>(registry_);
    router_ = std::make_unique<Router>(clock_, gen_, executors_);
    pools_ = std::make_unique<TriggerPools>(clock_, TriggerPools::Options());
    // These tests look at each write in the database; holding STARTED answers for their
    // results (DispatcherFoldTest) would keep them off it while the FakeClock stands still.
    Dispatcher::Options options;
    options.trigger_write_delay = absl::ZeroDuration();
    options.max_trigger_hold = absl::Seconds(1);
    options.trigger_tick = absl::Milliseconds(5);
    dispatcher_ = std::make_unique<Dispatcher>(*store_, directory_, *router_, executors_, *pools_,
                                               metrics_.get(), clock_, options);
    dispatcher_->Start();
    SetExecutors({{"127.0.0.1:7201", {"echo"}},
                  {"127.0.0.1:7202", {"echo"}},
                  {"127.0.0.1:7203", {"echo", "sleep"}}});
  }
  void TearDown() override {
    if (dispatcher_) dispatcher_->Shutdown();
  }

  void SetExecutors(const std::vector<std::pair<std::string, std::vector<std::string>>>& list) {
    v1::WatchExecutorsResponse snap;
    snap.set_version(++version_);
    snap.set_type(v1::WATCH_EVENT_TYPE_SNAPSHOT);
    for (const auto& [address, handlers] : list) {
      v1::Executor* e = snap.add_executors();
      e->set_app("demo");
      e->set_address(address);
      for (const auto& h : handlers) e->add_handlers(h);
    }
    directory_.Apply(snap);
  }

  // A job row and a fire row as the scheduler writes them, and the matching Fire message.
  v1::Fire NewFire(v1::RoutingStrategy strategy, const std::string& handler = "echo") {
    const int64_t job_id = InsertJob(dsn_, "demo", handler, strategy);
    return MakeFire(InsertFire(dsn_, job_id), MakeJob(job_id, "demo", handler, strategy),
                    clock_.Now());
  }

  absl::StatusOr<v1::DispatchResponse> Dispatch(const std::vector<v1::Fire>& fires) {
    v1::DispatchRequest req;
    for (const auto& f : fires) *req.add_fires() = f;
    return dispatcher_->Dispatch(req);
  }

  bool RunHasStatus(int64_t run_id, v1::RunStatus status) {
    return Eventually([&] { return RunById(dsn_, run_id).status == status; }, kWait);
  }

  double Counter(const std::string& name, const std::map<std::string, std::string>& labels) {
    return CounterValue(registry_, name, labels);
  }

  std::string dsn_;
  FakeClock clock_;
  std::mt19937_64 gen_{1};
  FakeExecutorClients executors_;
  ExecutorDirectory directory_;
  prometheus::Registry registry_;
  int64_t version_ = 0;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgDispatchStore> store_;
  std::unique_ptr<DispatcherMetrics> metrics_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<TriggerPools> pools_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherTest, DispatchRoutesTriggersAndMarksRunning) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_LAST);
  fire.set_param("p1");
  auto r = Dispatch({fire});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outcomes_size(), 1);
  EXPECT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_DISPATCHED);
  ASSERT_EQ(r->outcomes(0).run_ids_size(), 1);
  const int64_t run_id = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_RUNNING));
  RunRow row = RunById(dsn_, run_id);
  EXPECT_EQ(row.address, "127.0.0.1:7203");
  EXPECT_EQ(row.trigger_message, "route LAST over 3 executors → 127.0.0.1:7203; executor: STARTED");
  EXPECT_TRUE(row.has_start);
  auto calls = executors_.runs();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].first, "127.0.0.1:7203");
  EXPECT_EQ(calls[0].second.run_id(), run_id);
  EXPECT_EQ(calls[0].second.param(), "p1");
  EXPECT_EQ(calls[0].second.handler(), "echo");
  EXPECT_EQ(calls[0].second.fire_id(), fire.fire_id());
  EXPECT_EQ(Counter("jobwheel_dispatcher_fires_total", {{"outcome", "dispatched"}}), 1);
  EXPECT_TRUE(Eventually(
      [&] {
        return Counter("jobwheel_dispatcher_runs_triggered_total",
                       {{"strategy", "last"}, {"outcome", "started"}}) == 1;
      },
      kWait));
}

// A fire handed over ahead of its time: the run is recorded at once (PENDING, its trigger
// time the scheduled time) and triggered when the fire is due, not before.
TEST_F(DispatcherTest, FireHandedOverAheadIsTriggeredWhenDue) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_FIRST);
  const absl::Time due = clock_.Now() + absl::Milliseconds(300);
  *fire.mutable_scheduled_time() = ToProto(due);
  auto r = Dispatch({fire});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_DISPATCHED);
  const int64_t run_id = r->outcomes(0).run_ids(0);
  RunRow row = RunById(dsn_, run_id);
  EXPECT_EQ(row.status, v1::RUN_STATUS_PENDING);
  EXPECT_EQ(row.trigger_time, due);
  EXPECT_EQ(dispatcher_->held_runs(), 1u);

  clock_.Advance(absl::Milliseconds(299));
  dispatcher_->WakeWriter();
  EXPECT_EQ(executors_.run_count(), 0u);
  EXPECT_EQ(dispatcher_->held_runs(), 1u);

  clock_.Advance(absl::Milliseconds(1));
  dispatcher_->WakeWriter();
  ASSERT_TRUE(Eventually([&] { return executors_.run_count() == 1; }, kWait));
  EXPECT_EQ(executors_.runs()[0].second.run_id(), run_id);
  EXPECT_EQ(dispatcher_->held_runs(), 0u);
  EXPECT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_RUNNING));
}

// Fires due within one trigger tick (5 ms) go out together when the tick comes: one RunBatch
// call, the tick recorded as their trigger time.
TEST_F(DispatcherTest, HeldRunsDueWithinATickShareOneCall) {
  const absl::Time tick = clock_.Now() + absl::Milliseconds(305);
  v1::Fire a = NewFire(v1::ROUTING_STRATEGY_FIRST);
  v1::Fire b = NewFire(v1::ROUTING_STRATEGY_FIRST);
  *a.mutable_scheduled_time() = ToProto(tick - absl::Microseconds(4700));
  *b.mutable_scheduled_time() = ToProto(tick - absl::Microseconds(300));
  auto r = Dispatch({a, b});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(RunById(dsn_, r->outcomes(0).run_ids(0)).trigger_time, tick);
  EXPECT_EQ(RunById(dsn_, r->outcomes(1).run_ids(0)).trigger_time, tick);
  clock_.Set(tick - absl::Microseconds(1));
  dispatcher_->WakeWriter();
  EXPECT_EQ(dispatcher_->held_runs(), 2u);
  clock_.Set(tick);
  dispatcher_->WakeWriter();
  ASSERT_TRUE(Eventually([&] { return executors_.run_count() == 2; }, kWait));
  ASSERT_EQ(executors_.batch_calls().size(), 1u);
  EXPECT_EQ(executors_.batch_calls()[0].second, 2);
}

// The executor a held run was routed to leaves before the run is due: the run is routed again
// among the executors still online (its row first), and triggered there.
TEST_F(DispatcherTest, HeldRunOfADepartedExecutorIsRoutedAgain) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_LAST);
  const absl::Time due = clock_.Now() + absl::Milliseconds(300);
  *fire.mutable_scheduled_time() = ToProto(due);
  auto r = Dispatch({fire});
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t run_id = r->outcomes(0).run_ids(0);
  ASSERT_EQ(RunById(dsn_, run_id).address, "127.0.0.1:7203");  // LAST of the three.
  SetExecutors({{"127.0.0.1:7201", {"echo"}}, {"127.0.0.1:7202", {"echo"}}});
  clock_.Set(due);
  dispatcher_->WakeWriter();
  ASSERT_TRUE(Eventually([&] { return executors_.run_count() == 1; }, kWait));
  EXPECT_EQ(executors_.runs()[0].first, "127.0.0.1:7202");
  EXPECT_EQ(executors_.runs()[0].second.run_id(), run_id);
  ASSERT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_RUNNING));
  RunRow row = RunById(dsn_, run_id);
  EXPECT_EQ(row.address, "127.0.0.1:7202");
  EXPECT_THAT(row.trigger_message,
              HasSubstr("; executor 127.0.0.1:7203 left before the trigger: route LAST over 2 "
                        "executors → 127.0.0.1:7202"));
}

// ... and when no executor that fits is left, the run fails with the reason, untriggered.
TEST_F(DispatcherTest, HeldRunFailsWhenNoExecutorIsLeft) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_FIRST, "sleep");  // Only 127.0.0.1:7203.
  const absl::Time due = clock_.Now() + absl::Milliseconds(300);
  *fire.mutable_scheduled_time() = ToProto(due);
  auto r = Dispatch({fire});
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t run_id = r->outcomes(0).run_ids(0);
  SetExecutors({{"127.0.0.1:7201", {"echo"}}});
  clock_.Set(due);
  dispatcher_->WakeWriter();
  ASSERT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_FAILED));
  EXPECT_EQ(executors_.run_count(), 0u);
  EXPECT_THAT(RunById(dsn_, run_id).trigger_message,
              HasSubstr("; not triggered: executor 127.0.0.1:7203 left before the trigger: job "));
  EXPECT_EQ(dispatcher_->held_runs(), 0u);
}

// Further ahead than max_trigger_hold (clocks apart, or a scheduler lead above the hold): the
// call is refused and nothing is written, so nothing can start early; the scheduler retries.
TEST_F(DispatcherTest, FireTooFarAheadIsRefused) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_FIRST);
  *fire.mutable_scheduled_time() = ToProto(clock_.Now() + absl::Seconds(5));
  auto r = Dispatch({fire});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("fires[0].scheduled_time: 5s ahead of this dispatcher's clock"));
  EXPECT_EQ(std::get<0>(FireRow(dsn_, fire.fire_id())), v1::FIRE_STATUS_PENDING);
  EXPECT_TRUE(RunsOf(dsn_, fire.fire_id()).empty());
  EXPECT_EQ(executors_.run_count(), 0u);
  // Once within the hold it goes through, and is held until due.
  clock_.Advance(absl::Seconds(4));
  r = Dispatch({fire});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(dispatcher_->held_runs(), 1u);
  EXPECT_EQ(RunById(dsn_, r->outcomes(0).run_ids(0)).trigger_time,
            FromProto(fire.scheduled_time()));
}

TEST_F(DispatcherTest, ShutdownTriggersHeldRuns) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_FIRST);
  *fire.mutable_scheduled_time() = ToProto(clock_.Now() + absl::Milliseconds(500));
  auto r = Dispatch({fire});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(executors_.run_count(), 0u);
  dispatcher_->Shutdown();
  ASSERT_EQ(executors_.run_count(), 1u);
  EXPECT_EQ(dispatcher_->held_runs(), 0u);
  EXPECT_EQ(RunById(dsn_, r->outcomes(0).run_ids(0)).status, v1::RUN_STATUS_RUNNING);
}

TEST_F(DispatcherTest, RepeatedDispatchTriggersOnce) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
  auto first = Dispatch({fire});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->outcomes(0).run_ids_size(), 3);
  for (int64_t id : first->outcomes(0).run_ids())
    ASSERT_TRUE(RunHasStatus(id, v1::RUN_STATUS_RUNNING));
  auto second = Dispatch({fire});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->outcomes(0).status(), v1::FIRE_STATUS_DISPATCHED);
  EXPECT_EQ(std::vector<int64_t>(second->outcomes(0).run_ids().begin(),
                                 second->outcomes(0).run_ids().end()),
            std::vector<int64_t>(first->outcomes(0).run_ids().begin(),
                                 first->outcomes(0).run_ids().end()));
  dispatcher_->Shutdown();  // Drains the pools: any extra trigger would have run by now.
  EXPECT_EQ(executors_.run_count(), 3u);
  std::vector<RunRow> runs = RunsOf(dsn_, fire.fire_id());
  ASSERT_EQ(runs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(runs[i].shard_index, i);
    EXPECT_EQ(runs[i].shard_total, 3);
    EXPECT_THAT(runs[i].trigger_message,
                HasSubstr(absl::StrCat("shard ", i, "/3 → 127.0.0.1:720", i + 1)));
  }
  EXPECT_EQ(Counter("jobwheel_dispatcher_fires_total", {{"outcome", "duplicate"}}), 1);
}

TEST_F(DispatcherTest, NoExecutorFailsFireWithReasonAndFailedRun) {
  SetExecutors({});
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_ROUND);
  auto r = Dispatch({fire});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_FAILED);
  const std::string reason =
      absl::StrCat("job ", fire.job().id(), ": no executor online for app demo");
  EXPECT_EQ(r->outcomes(0).message(), reason);
  auto [status, fire_reason, dispatched] = FireRow(dsn_, fire.fire_id());
  EXPECT_EQ(status, v1::FIRE_STATUS_FAILED);
  EXPECT_EQ(fire_reason, reason);
  EXPECT_TRUE(dispatched);
  std::vector<RunRow> runs = RunsOf(dsn_, fire.fire_id());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, v1::RUN_STATUS_FAILED);
  EXPECT_EQ(runs[0].trigger_message, reason);
  EXPECT_EQ(executors_.run_count(), 0u);
  EXPECT_EQ(Counter("jobwheel_dispatcher_fires_total", {{"outcome", "failed"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_runs_finished_total", {{"status", "failed"}}), 1);
}

TEST_F(DispatcherTest, CandidatesFilteredByHandler) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_FIRST, "sleep");
  auto r = Dispatch({fire});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_DISPATCHED);
  EXPECT_EQ(RunsOf(dsn_, fire.fire_id())[0].address, "127.0.0.1:7203");
  EXPECT_THAT(RunsOf(dsn_, fire.fire_id())[0].trigger_message, HasSubstr("over 1 executor →"));

  v1::Fire none = NewFire(v1::ROUTING_STRATEGY_FIRST, "nope");
  r = Dispatch({none});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_FAILED);
  EXPECT_THAT(r->outcomes(0).message(),
              HasSubstr("none of the 3 executors online for app demo has handler nope"));
}

TEST_F(DispatcherTest, ManualExecutorMustBeOnline) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_FIRST);
  fire.set_executor_address("10.9.9.9:1");
  auto r = Dispatch({fire});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_FAILED);
  EXPECT_THAT(r->outcomes(0).message(),
              HasSubstr("executor 10.9.9.9:1 is not online for app demo"));

  v1::Fire ok = NewFire(v1::ROUTING_STRATEGY_FIRST);
  ok.set_executor_address("127.0.0.1:7202");
  ok.set_shard_index(1);
  ok.set_shard_total(4);
  r = Dispatch({ok});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_DISPATCHED);
  ASSERT_TRUE(RunHasStatus(r->outcomes(0).run_ids(0), v1::RUN_STATUS_RUNNING));
  RunRow row = RunById(dsn_, r->outcomes(0).run_ids(0));
  EXPECT_EQ(row.address, "127.0.0.1:7202");
  EXPECT_EQ(row.shard_index, 1);
  EXPECT_EQ(row.shard_total, 4);
  // Only the online executor was ever called.
  for (const auto& [address, req] : executors_.runs()) EXPECT_EQ(address, "127.0.0.1:7202");
}

TEST_F(DispatcherTest, TriggerAnswersSetRunStatus) {
  executors_.SetDisposition(v1::RUN_DISPOSITION_DISCARDED, "job 1 is running");
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok());
  const int64_t discarded = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunHasStatus(discarded, v1::RUN_STATUS_DISCARDED));
  EXPECT_THAT(RunById(dsn_, discarded).trigger_message,
              HasSubstr("; executor: DISCARDED (job 1 is running)"));
  EXPECT_TRUE(RunById(dsn_, discarded).has_end);

  executors_.SetDisposition(v1::RUN_DISPOSITION_REJECTED, "unknown handler echo");
  r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(RunHasStatus(r->outcomes(0).run_ids(0), v1::RUN_STATUS_FAILED));
  EXPECT_THAT(RunById(dsn_, r->outcomes(0).run_ids(0)).trigger_message,
              HasSubstr("executor: REJECTED (unknown handler echo)"));

  executors_.SetDisposition(v1::RUN_DISPOSITION_QUEUED);
  r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(RunHasStatus(r->outcomes(0).run_ids(0), v1::RUN_STATUS_RUNNING));

  executors_.SetDown("127.0.0.1:7201", true);
  r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(RunHasStatus(r->outcomes(0).run_ids(0), v1::RUN_STATUS_FAILED));
  EXPECT_THAT(RunById(dsn_, r->outcomes(0).run_ids(0)).trigger_message,
              HasSubstr("; trigger error: UNAVAILABLE: connection refused"));
  EXPECT_TRUE(Eventually(
      [&] {
        return Counter("jobwheel_dispatcher_runs_finished_total", {{"status", "discarded"}}) == 1 &&
               Counter("jobwheel_dispatcher_runs_finished_total", {{"status", "failed"}}) == 2;
      },
      kWait));
}

TEST_F(DispatcherTest, RoundSpreadsFiresOfOneJob) {
  v1::Fire proto = NewFire(v1::ROUTING_STRATEGY_ROUND);
  std::vector<v1::Fire> fires;
  for (int i = 0; i < 90; ++i) {
    v1::Fire f = proto;
    f.set_fire_id(InsertFire(dsn_, proto.job().id()));
    fires.push_back(f);
  }
  auto r = Dispatch(fires);
  ASSERT_TRUE(r.ok()) << r.status();
  std::map<std::string, int> per_executor;
  for (const auto& o : r->outcomes()) {
    ASSERT_EQ(o.status(), v1::FIRE_STATUS_DISPATCHED);
    ++per_executor[RunById(dsn_, o.run_ids(0)).address];
  }
  EXPECT_EQ(per_executor.size(), 3u);
  for (const auto& [address, n] : per_executor) EXPECT_EQ(n, 30) << address;
}

TEST_F(DispatcherTest, InvalidRequestsNameTheField) {
  v1::Fire fire = NewFire(v1::ROUTING_STRATEGY_FIRST);
  fire.mutable_job()->clear_app();
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST), fire});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("fires[1].job.app"));
  v1::Fire shard = NewFire(v1::ROUTING_STRATEGY_FIRST);
  shard.set_shard_total(2);
  shard.set_shard_index(2);
  r = Dispatch({shard});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("fires[0].shard_index"));

  v1::ReportResultsRequest results;
  results.add_results()->set_run_id(1);
  results.mutable_results(0)->set_status(v1::RUN_STATUS_SUCCEEDED);
  results.add_results()->set_run_id(2);
  results.mutable_results(1)->set_status(v1::RUN_STATUS_RUNNING);
  auto rr = dispatcher_->ReportResults(results);
  EXPECT_EQ(rr.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rr.status().message(), HasSubstr("results[1].status"));
}

TEST_F(DispatcherTest, LongResultMessagesAreCutAtACharacterBoundary) {
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok());
  const int64_t run_id = r->outcomes(0).run_ids(0);
  v1::ReportResultsRequest req;
  v1::RunResult* res = req.add_results();
  res->set_run_id(run_id);
  res->set_status(v1::RUN_STATUS_FAILED);
  // "€" is 3 bytes; after "xy" they start at 2 + 3k, so byte 64 Ki is inside one.
  std::string huge = "xy";
  while (huge.size() < 200 * 1024) huge += "\xE2\x82\xAC";
  res->set_message(huge);
  auto ack = dispatcher_->ReportResults(req);
  ASSERT_TRUE(ack.ok()) << ack.status();
  const std::string stored = RunById(dsn_, run_id).result_message;
  EXPECT_LE(stored.size(), 64 * 1024 + 20u);
  EXPECT_TRUE(absl::EndsWith(stored, "(truncated)")) << stored.substr(stored.size() - 40);
  EXPECT_EQ(stored.substr(0, 4), huge.substr(0, 4));
}

TEST_F(DispatcherTest, NotReadyBeforeFirstSnapshot) {
  ExecutorDirectory empty;
  Dispatcher d(*store_, empty, *router_, executors_, *pools_, nullptr, clock_,
               Dispatcher::Options());
  v1::DispatchRequest req;
  *req.add_fires() = NewFire(v1::ROUTING_STRATEGY_FIRST);
  EXPECT_EQ(d.Dispatch(req).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(DispatcherTest, ReportResultsAcksEverythingAndCounts) {
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok());
  const int64_t run_id = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_RUNNING));
  v1::ReportResultsRequest req;
  for (int64_t id : {run_id, run_id, int64_t{999999}}) {
    v1::RunResult* res = req.add_results();
    res->set_run_id(id);
    res->set_status(v1::RUN_STATUS_SUCCEEDED);
    res->set_message("ok");
  }
  auto ack = dispatcher_->ReportResults(req);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_THAT(std::vector<int64_t>(ack->acked_run_ids().begin(), ack->acked_run_ids().end()),
              ::testing::UnorderedElementsAre(run_id, 999999));
  EXPECT_EQ(RunById(dsn_, run_id).status, v1::RUN_STATUS_SUCCEEDED);
  ack = dispatcher_->ReportResults(req);  // The executor's spool retried: a duplicate.
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "recorded"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "duplicate"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "unknown"}}), 2);
  EXPECT_EQ(Counter("jobwheel_dispatcher_runs_finished_total", {{"status", "succeeded"}}), 1);
}

// An in-memory DispatchStore that records every write, for the tests of held trigger answers.
class RecordingStore : public DispatchStore {
 public:
  struct ResultWrite {
    std::vector<int64_t> run_ids;
    std::vector<TriggerOutcome> answers;
  };

  absl::StatusOr<std::vector<FireResult>> DispatchFires(const std::vector<v1::Fire>& fires,
                                                        absl::Time,
                                                        const FirePlanner& plan) override {
    std::vector<FireResult> out;
    for (const v1::Fire& f : fires) {
      FirePlan p = plan(f);
      FireResult r;
      r.fire_id = f.fire_id();
      r.status = p.status;
      absl::MutexLock lock(&mu_);
      for (PlannedRun& run : p.runs) {
        CreatedRun c{next_run_id_++, std::move(run)};
        runs_.insert(c.run_id);
        if (c.planned.status != v1::RUN_STATUS_PENDING) finished_.insert(c.run_id);
        r.run_ids.push_back(c.run_id);
        r.created.push_back(std::move(c));
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  absl::StatusOr<std::vector<int64_t>> RecordTriggerOutcomes(
      const std::vector<TriggerOutcome>& outcomes) override {
    absl::MutexLock lock(&mu_);
    std::vector<int64_t> done;
    for (const TriggerOutcome& o : outcomes) {
      trigger_writes_.push_back(o);
      if (o.status != v1::RUN_STATUS_RUNNING && finished_.insert(o.run_id).second) {
        done.push_back(o.run_id);
      }
    }
    return done;
  }

  absl::StatusOr<std::vector<int64_t>> RerouteRuns(const std::vector<Reroute>& r) override {
    std::vector<int64_t> ids;
    for (const Reroute& x : r) ids.push_back(x.run_id);
    return ids;
  }
  absl::StatusOr<std::vector<ResultRecord>> RecordResults(
      const std::vector<v1::RunResult>& results, absl::Time, const AppScope&,
      const std::vector<TriggerOutcome>& answers) override {
    ResultWrite write{{}, answers};
    for (const v1::RunResult& r : results) write.run_ids.push_back(r.run_id());
    absl::Notification* gate;
    {
      absl::MutexLock lock(&mu_);
      result_writes_.push_back(write);
      gate = gate_;
    }
    if (gate != nullptr) {
      entered_.Notify();
      gate->WaitForNotification();
    }
    absl::MutexLock lock(&mu_);
    if (fail_results_) return absl::UnavailableError("database down");
    std::vector<ResultRecord> out;
    for (const v1::RunResult& r : results) {
      ResultDisposition d = !runs_.contains(r.run_id())           ? ResultDisposition::kUnknown
                            : finished_.insert(r.run_id()).second ? ResultDisposition::kRecorded
                                                                  : ResultDisposition::kDuplicate;
      out.push_back(ResultRecord{r.run_id(), d, r.status()});
    }
    return out;
  }

  void FailResults(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_results_ = fail;
  }
  void Finish(int64_t run_id) {
    absl::MutexLock lock(&mu_);
    finished_.insert(run_id);
  }
  // The next RecordResults calls stop inside until `gate` is notified; entered() then fires.
  void HoldResultsAt(absl::Notification* gate) {
    absl::MutexLock lock(&mu_);
    gate_ = gate;
  }
  absl::Notification& entered() { return entered_; }

  std::vector<TriggerOutcome> trigger_writes() const {
    absl::MutexLock lock(&mu_);
    return trigger_writes_;
  }
  bool TriggerWritten(int64_t run_id) const {
    absl::MutexLock lock(&mu_);
    for (const TriggerOutcome& o : trigger_writes_) {
      if (o.run_id == run_id) return true;
    }
    return false;
  }
  std::vector<ResultWrite> result_writes() const {
    absl::MutexLock lock(&mu_);
    return result_writes_;
  }

 private:
  mutable absl::Mutex mu_;
  int64_t next_run_id_ ABSL_GUARDED_BY(mu_) = 100;
  absl::flat_hash_set<int64_t> runs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> finished_ ABSL_GUARDED_BY(mu_);
  std::vector<TriggerOutcome> trigger_writes_ ABSL_GUARDED_BY(mu_);
  std::vector<ResultWrite> result_writes_ ABSL_GUARDED_BY(mu_);
  bool fail_results_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification* gate_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Notification entered_;
};

// STARTED/QUEUED answers wait trigger_write_delay (on the FakeClock) for their run's result to
// carry them; failures are written at once.
class DispatcherFoldTest : public ::testing::Test {
 protected:
  static constexpr absl::Duration kDelay = absl::Milliseconds(250);

  void SetUp() override {
    v1::WatchExecutorsResponse snap;
    snap.set_version(1);
    snap.set_type(v1::WATCH_EVENT_TYPE_SNAPSHOT);
    v1::Executor* e = snap.add_executors();
    e->set_app("demo");
    e->set_address("127.0.0.1:7201");
    e->add_handlers("echo");
    directory_.Apply(snap);
    Dispatcher::Options options;
    options.trigger_write_delay = kDelay;
    dispatcher_ = std::make_unique<Dispatcher>(store_, directory_, router_, executors_, pools_,
                                               &metrics_, clock_, options);
    dispatcher_->Start();
  }
  void TearDown() override { dispatcher_->Shutdown(); }

  // Dispatches one fire; the executor answers `answer`. Returns the run id.
  int64_t Trigger(v1::RunDisposition answer) {
    executors_.SetDisposition(answer);
    v1::DispatchRequest req;
    *req.add_fires() =
        MakeFire(++fire_id_, MakeJob(1, "demo", "echo", v1::ROUTING_STRATEGY_FIRST), clock_.Now());
    auto r = dispatcher_->Dispatch(req);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->outcomes_size() != 1 || r->outcomes(0).run_ids_size() != 1) return 0;
    return r->outcomes(0).run_ids(0);
  }

  absl::StatusOr<v1::ReportResultsResponse> Report(int64_t run_id) {
    v1::ReportResultsRequest req;
    v1::RunResult* res = req.add_results();
    res->set_run_id(run_id);
    res->set_status(v1::RUN_STATUS_SUCCEEDED);
    return dispatcher_->ReportResults(req);
  }

  bool HeldEventually(size_t n) {
    return Eventually([&] { return dispatcher_->held_outcomes() == n; }, kWait);
  }

  // Waits until the writer has written a failure answer enqueued now, i.e. has looked at the
  // clock after everything done before this call.
  void WriterBarrier() {
    const int64_t run = Trigger(v1::RUN_DISPOSITION_REJECTED);
    ASSERT_TRUE(Eventually([&] { return store_.TriggerWritten(run); }, kWait));
  }

  double Folded() {
    return CounterValue(registry_, "jobwheel_dispatcher_trigger_answers_folded_total", {});
  }

  RecordingStore store_;
  FakeClock clock_;
  std::mt19937_64 gen_{1};
  FakeExecutorClients executors_;
  ExecutorDirectory directory_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_};
  Router router_{clock_, gen_, executors_};
  TriggerPools pools_{clock_, TriggerPools::Options()};
  int64_t fire_id_ = 0;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherFoldTest, HeldAnswerRidesWithTheResultWrite) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(HeldEventually(1));
  WriterBarrier();
  EXPECT_FALSE(store_.TriggerWritten(run));  // Not due: the FakeClock has not moved.

  auto ack = Report(run);
  ASSERT_TRUE(ack.ok()) << ack.status();
  ASSERT_EQ(ack->acked_run_ids_size(), 1);
  EXPECT_EQ(dispatcher_->held_outcomes(), 0u);
  EXPECT_EQ(dispatcher_->pending_outcomes(), 0u);
  std::vector<RecordingStore::ResultWrite> writes = store_.result_writes();
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_THAT(writes[0].run_ids, ::testing::ElementsAre(run));
  ASSERT_EQ(writes[0].answers.size(), 1u);
  EXPECT_EQ(writes[0].answers[0].run_id, run);
  EXPECT_EQ(writes[0].answers[0].status, v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(writes[0].answers[0].message_suffix, "; executor: STARTED");
  EXPECT_EQ(writes[0].answers[0].at, clock_.Now());
  EXPECT_EQ(Folded(), 1);

  clock_.Advance(absl::Hours(1));
  dispatcher_->WakeWriter();
  dispatcher_->Shutdown();
  EXPECT_FALSE(store_.TriggerWritten(run));  // Never written on its own.
}

TEST_F(DispatcherFoldTest, HeldAnswerIsWrittenWhenDueWithoutResult) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_QUEUED);
  ASSERT_TRUE(HeldEventually(1));
  clock_.Advance(kDelay - absl::Milliseconds(1));
  dispatcher_->WakeWriter();
  WriterBarrier();
  EXPECT_FALSE(store_.TriggerWritten(run));
  EXPECT_EQ(dispatcher_->held_outcomes(), 1u);

  clock_.Advance(absl::Milliseconds(1));
  dispatcher_->WakeWriter();
  ASSERT_TRUE(Eventually([&] { return store_.TriggerWritten(run); }, kWait));
  for (const TriggerOutcome& o : store_.trigger_writes()) {
    if (o.run_id != run) continue;
    EXPECT_EQ(o.status, v1::RUN_STATUS_RUNNING);
    EXPECT_EQ(o.message_suffix, "; executor: QUEUED");
  }
  EXPECT_TRUE(Eventually([&] { return dispatcher_->pending_outcomes() == 0; }, kWait));
  // Its result comes later: nothing is left to carry.
  ASSERT_TRUE(Report(run).ok());
  EXPECT_TRUE(store_.result_writes().back().answers.empty());
  EXPECT_EQ(Folded(), 0);
}

TEST_F(DispatcherFoldTest, FailureAnswersAreWrittenAtOnce) {
  const int64_t rejected = Trigger(v1::RUN_DISPOSITION_REJECTED);
  const int64_t discarded = Trigger(v1::RUN_DISPOSITION_DISCARDED);
  executors_.SetDown("127.0.0.1:7201", true);
  const int64_t error = Trigger(v1::RUN_DISPOSITION_STARTED);
  // The FakeClock never moves: only answers that are not held can be written.
  EXPECT_TRUE(Eventually(
      [&] {
        return store_.TriggerWritten(rejected) && store_.TriggerWritten(discarded) &&
               store_.TriggerWritten(error);
      },
      kWait));
  EXPECT_EQ(dispatcher_->held_outcomes(), 0u);
}

TEST_F(DispatcherFoldTest, FailedResultWriteGivesTheAnswerBack) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(HeldEventually(1));
  store_.FailResults(true);
  EXPECT_EQ(Report(run).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_EQ(store_.result_writes().size(), 1u);
  EXPECT_EQ(store_.result_writes()[0].answers.size(), 1u);  // It was offered...
  EXPECT_EQ(dispatcher_->held_outcomes(), 1u);              // ...and is held again.
  EXPECT_EQ(dispatcher_->pending_outcomes(), 1u);

  store_.FailResults(false);  // The executor retries its report.
  ASSERT_TRUE(Report(run).ok());
  ASSERT_EQ(store_.result_writes().size(), 2u);
  ASSERT_EQ(store_.result_writes()[1].answers.size(), 1u);
  EXPECT_EQ(store_.result_writes()[1].answers[0].run_id, run);
  EXPECT_EQ(dispatcher_->pending_outcomes(), 0u);
  EXPECT_EQ(Folded(), 1);
  dispatcher_->Shutdown();
  EXPECT_FALSE(store_.TriggerWritten(run));
}

TEST_F(DispatcherFoldTest, AnswerOfAnUnrecordedResultIsWrittenOnItsOwn) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(HeldEventually(1));
  store_.Finish(run);  // E.g. the scheduler marked it LOST first: the result is a duplicate.
  ASSERT_TRUE(Report(run).ok());
  EXPECT_EQ(store_.result_writes()[0].answers.size(), 1u);
  EXPECT_EQ(dispatcher_->held_outcomes(), 1u);
  EXPECT_EQ(Folded(), 0);
  clock_.Advance(kDelay);
  dispatcher_->WakeWriter();
  EXPECT_TRUE(Eventually([&] { return store_.TriggerWritten(run); }, kWait));
}

TEST_F(DispatcherFoldTest, ShutdownWritesEveryHeldAnswer) {
  std::vector<int64_t> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(Trigger(v1::RUN_DISPOSITION_STARTED));
  ASSERT_TRUE(HeldEventually(5));
  dispatcher_->Shutdown();  // The FakeClock never moved: none was due.
  for (int64_t run : runs) EXPECT_TRUE(store_.TriggerWritten(run)) << run;
  EXPECT_EQ(dispatcher_->pending_outcomes(), 0u);
}

// A result write carrying a held answer fails while the dispatcher shuts down: the writer
// waits for it and writes the answer it gives back.
TEST_F(DispatcherFoldTest, ShutdownWaitsForAnswersInAResultWrite) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(HeldEventually(1));
  absl::Notification gate;
  store_.HoldResultsAt(&gate);
  store_.FailResults(true);
  std::thread reporter([&] { EXPECT_FALSE(Report(run).ok()); });
  store_.entered().WaitForNotification();
  EXPECT_EQ(dispatcher_->held_outcomes(), 0u);  // Taken by the result write.
  std::thread stopper([&] { dispatcher_->Shutdown(); });
  gate.Notify();
  reporter.join();
  stopper.join();
  EXPECT_TRUE(store_.TriggerWritten(run));
  EXPECT_EQ(dispatcher_->pending_outcomes(), 0u);
}

}  // namespace
}  // namespace jobwheel::dispatcher
