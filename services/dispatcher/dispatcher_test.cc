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
// The executors SetUp makes known (the last one also runs "sleep").
constexpr const char* kExecutors[] = {"127.0.0.1:7201", "127.0.0.1:7202", "127.0.0.1:7203"};

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
                                               *metrics_, clock_, options);
    dispatcher_->Start();
    SetExecutors(
        {{kExecutors[0], {"echo"}}, {kExecutors[1], {"echo"}}, {kExecutors[2], {"echo", "sleep"}}});
  }
  void TearDown() override {
    // Runs still held go when due, even at shutdown: let their time come.
    clock_.Advance(absl::Seconds(2));
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

  // The result key the executor received for `run_id` (empty if it received none).
  std::string KeyOf(int64_t run_id) {
    for (const auto& [address, request] : executors_.runs()) {
      if (request.run_id() == run_id) return request.result_key();
    }
    return "";
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
  // The run's result key went to its executor; only its SHA-256 is in the row.
  EXPECT_EQ(calls[0].second.result_key().size(), 32u);
  EXPECT_EQ(row.result_key_hash.size(), 32u);
  EXPECT_NE(row.result_key_hash, calls[0].second.result_key());
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
  EXPECT_EQ(executors_.run_count(), 0u);
  EXPECT_EQ(dispatcher_->held_runs(), 1u);

  clock_.Advance(absl::Milliseconds(1));
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
  EXPECT_EQ(dispatcher_->held_runs(), 2u);
  clock_.Set(tick);
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
  std::thread stopper([&] { dispatcher_->Shutdown(); });
  clock_.AwaitWaiters(1);  // The held run waits for its time, shutdown or not.
  EXPECT_EQ(executors_.run_count(), 0u);
  clock_.Advance(absl::Milliseconds(500));
  stopper.join();
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

TEST_F(DispatcherTest, LongResultMessagesAreCutAtACharacterBoundary) {
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok());
  const int64_t run_id = r->outcomes(0).run_ids(0);
  v1::ReportResultsRequest req;
  v1::RunResult* res = req.add_results();
  res->set_run_id(run_id);
  res->set_status(v1::RUN_STATUS_FAILED);
  ASSERT_TRUE(Eventually([&] { return !KeyOf(run_id).empty(); }, kWait));
  res->set_result_key(KeyOf(run_id));
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
  Dispatcher d(*store_, empty, *router_, executors_, *pools_, *metrics_, clock_,
               Dispatcher::Options());
  v1::DispatchRequest req;
  *req.add_fires() = NewFire(v1::ROUTING_STRATEGY_FIRST);
  EXPECT_EQ(d.Dispatch(req).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(DispatcherTest, ReportResultsAcksKnownRunsRefusesOthersAndCounts) {
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
    res->set_result_key(KeyOf(run_id));
  }
  auto ack = dispatcher_->ReportResults(req);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_THAT(std::vector<int64_t>(ack->acked_run_ids().begin(), ack->acked_run_ids().end()),
              ::testing::ElementsAre(run_id));
  EXPECT_THAT(std::vector<int64_t>(ack->refused_run_ids().begin(), ack->refused_run_ids().end()),
              ::testing::ElementsAre(999999));
  EXPECT_EQ(RunById(dsn_, run_id).status, v1::RUN_STATUS_SUCCEEDED);
  ack = dispatcher_->ReportResults(req);  // The executor's spool retried: a duplicate.
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "recorded"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "duplicate"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_refused_total", {{"reason", "no_run"}}), 2);
  EXPECT_EQ(Counter("jobwheel_dispatcher_runs_finished_total", {{"status", "succeeded"}}), 1);
}

TEST_F(DispatcherTest, AResultWithoutTheRunsKeyLeavesTheRunRunning) {
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok());
  const int64_t run_id = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_RUNNING));
  v1::ReportResultsRequest req;
  v1::RunResult* res = req.add_results();
  res->set_run_id(run_id);
  res->set_status(v1::RUN_STATUS_SUCCEEDED);
  res->set_message("forged");
  auto ack = dispatcher_->ReportResults(req);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->acked_run_ids_size(), 0);
  EXPECT_THAT(std::vector<int64_t>(ack->refused_run_ids().begin(), ack->refused_run_ids().end()),
              ::testing::ElementsAre(run_id));
  EXPECT_EQ(RunById(dsn_, run_id).status, v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_refused_total", {{"reason", "bad_key"}}), 1);
}

// The RunBatch reached the executor, which started the run, but its answer was lost (the
// call's deadline passed): the run is the executor's, RUNNING, and takes its real result.
TEST_F(DispatcherTest, LostAnswerOfAStartedRunLeavesItRunningForItsResult) {
  for (const char* a : kExecutors) {
    executors_.SetLostAnswer(a, absl::DeadlineExceededError("Deadline Exceeded"));
  }
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t run_id = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_RUNNING));
  EXPECT_THAT(RunById(dsn_, run_id).trigger_message,
              HasSubstr("trigger answer lost (DEADLINE_EXCEEDED: Deadline Exceeded); executor "
                        "(GetRuns): RUNNING"));
  EXPECT_GE(executors_.get_runs_calls(), 1u);
  EXPECT_EQ(executors_.run_count(), 1u);

  v1::ReportResultsRequest req;
  v1::RunResult* res = req.add_results();
  res->set_run_id(run_id);
  res->set_status(v1::RUN_STATUS_SUCCEEDED);
  res->set_message("done on the executor");
  res->set_result_key(KeyOf(run_id));
  auto ack = dispatcher_->ReportResults(req);
  ASSERT_TRUE(ack.ok()) << ack.status();
  ASSERT_EQ(ack->acked_run_ids_size(), 1);
  const RunRow row = RunById(dsn_, run_id);
  EXPECT_EQ(row.status, v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(row.result_message, "done on the executor");
  EXPECT_EQ(executors_.run_count(), 1u);  // Executed once: no retry was triggered.
}

// The answer was lost and the run already ended on the executor (its result not in yet): the
// run is RUNNING, then its result decides it.
TEST_F(DispatcherTest, LostAnswerOfAnEndedRunWaitsForItsResult) {
  for (const char* a : kExecutors) {
    executors_.SetLostAnswer(a, absl::InternalError("stream cut"));
  }
  executors_.SetEnded(v1::RUN_STATUS_SUCCEEDED);
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t run_id = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_RUNNING));
  EXPECT_THAT(RunById(dsn_, run_id).trigger_message, HasSubstr("(GetRuns): ENDED SUCCEEDED"));
}

// The RunBatch never reached the executor (its deadline passed on the way): GetRuns fences the
// run, which is FAILED as a trigger error (the scheduler's retry follows), and a late trigger
// of it is refused by the executor.
TEST_F(DispatcherTest, LostTriggerThatNeverArrivedIsFencedAndFailed) {
  for (const char* a : kExecutors) {
    executors_.SetRunBatchError(a, absl::DeadlineExceededError("Deadline Exceeded"));
  }
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t run_id = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunHasStatus(run_id, v1::RUN_STATUS_FAILED));
  EXPECT_THAT(RunById(dsn_, run_id).trigger_message,
              HasSubstr("trigger error: DEADLINE_EXCEEDED: Deadline Exceeded; executor (GetRuns): "
                        "FENCED"));
  EXPECT_EQ(executors_.run_count(), 0u);
  // The lost call arrives after all: refused, not run.
  const std::string address = executors_.batch_calls().at(0).first;
  executors_.SetRunBatchError(address, absl::OkStatus());
  v1::RunBatchRequest late;
  late.add_runs()->set_run_id(run_id);
  absl::Notification answered;
  executors_.RunBatchAsync(
      "app", address, late, absl::Seconds(1), [&](absl::StatusOr<v1::RunBatchResponse> resp) {
        ASSERT_TRUE(resp.ok());
        EXPECT_EQ(resp->responses(0).disposition(), v1::RUN_DISPOSITION_REJECTED);
        answered.Notify();
      });
  ASSERT_TRUE(answered.HasBeenNotified());
  EXPECT_EQ(executors_.run_count(), 0u);
}

// Neither the trigger's answer nor GetRuns get through: after its attempts (with backoff on
// the clock) the run is left RUNNING, saying so; the executor's result or its loss decides.
TEST_F(DispatcherTest, UnreachableExecutorLeavesTheRunRunningWithAnUnknownAnswer) {
  for (const char* a : kExecutors) {
    executors_.SetRunBatchError(a, absl::UnavailableError("Socket closed"));
    executors_.SetGetRunsError(a, absl::DeadlineExceededError("Deadline Exceeded"));
  }
  auto r = Dispatch({NewFire(v1::ROUTING_STRATEGY_FIRST)});
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t run_id = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(Eventually(
      [&] {
        clock_.Advance(absl::Seconds(1));  // The backoff between attempts.
        return RunById(dsn_, run_id).trigger_message.find("trigger answer unknown") !=
               std::string::npos;
      },
      kWait));
  const RunRow row = RunById(dsn_, run_id);
  EXPECT_EQ(row.status, v1::RUN_STATUS_RUNNING);
  EXPECT_THAT(row.trigger_message,
              HasSubstr("trigger answer unknown: UNAVAILABLE: Socket closed (GetRuns failed 4 "
                        "time(s), last: DEADLINE_EXCEEDED: Deadline Exceeded)"));
  EXPECT_EQ(executors_.get_runs_calls(), 4u);
  EXPECT_EQ(dispatcher_->unresolved_triggers(), 0u);
}

}  // namespace
}  // namespace jobwheel::dispatcher
