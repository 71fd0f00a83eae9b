// Dispatcher: how the runs of a Dispatch go to the executors (RunBatch per executor and
// trigger pool, the per-run fallback for executors without RunBatch).

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/dispatcher/dispatch_test_util.h"
#include "services/dispatcher/dispatcher.h"
#include "services/dispatcher/fake_executor_clients.h"
#include "services/dispatcher/pg_dispatch_store.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using namespace ::jobwheel::dispatcher::testing;  // NOLINT

constexpr char kA[] = "127.0.0.1:7201";
constexpr char kB[] = "127.0.0.1:7202";
constexpr char kC[] = "127.0.0.1:7203";

// The fake executors answer on the calling thread, so every answer is in (metrics counted,
// outcome queued) when Dispatch returns. Outcomes are read from the database after Drain(),
// which writes every answer (held ones included).
class DispatcherBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = jobwheel::testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pg_ = std::make_unique<PgPool>(dsn_, 4, nullptr, PgPool::PlanMode::kIndexLookups);
    store_ = std::make_unique<PgDispatchStore>(*pg_);
    metrics_ = std::make_unique<DispatcherMetrics>(registry_);
    router_ = std::make_unique<Router>(clock_, gen_, executors_);
    v1::WatchExecutorsResponse snap;
    snap.set_version(1);
    snap.set_type(v1::WATCH_EVENT_TYPE_SNAPSHOT);
    for (const char* address : {kA, kB, kC}) {
      v1::Executor* e = snap.add_executors();
      e->set_app("demo");
      e->set_address(address);
      e->add_handlers("echo");
    }
    directory_.Apply(snap);
    Restart(Dispatcher::Options());
  }
  void TearDown() override {
    if (dispatcher_) dispatcher_->Shutdown();
  }

  // A fresh dispatcher (and trigger pools) with `options`.
  void Restart(Dispatcher::Options options) {
    if (dispatcher_) dispatcher_->Shutdown();
    dispatcher_.reset();
    pools_ = std::make_unique<TriggerPools>(clock_, TriggerPools::Options());
    dispatcher_ = std::make_unique<Dispatcher>(*store_, directory_, *router_, executors_, *pools_,
                                               *metrics_, clock_, options);
    dispatcher_->Start();
  }
  // Waits for the calls in flight and writes every answer; then Restart() to go on.
  void Drain() { dispatcher_->Shutdown(); }

  v1::Fire NewFire(v1::RoutingStrategy strategy = v1::ROUTING_STRATEGY_FIRST) {
    const int64_t job_id = InsertJob(dsn_, "demo", "echo", strategy);
    return MakeFire(InsertFire(dsn_, job_id), MakeJob(job_id, "demo", "echo", strategy),
                    clock_.Now());
  }
  v1::Fire AnotherFire(const v1::Fire& of) {
    v1::Fire f = of;
    f.set_fire_id(InsertFire(dsn_, of.job().id()));
    return f;
  }

  // The run ids, fire by fire.
  std::vector<int64_t> Dispatch(const std::vector<v1::Fire>& fires) {
    v1::DispatchRequest req;
    for (const auto& f : fires) *req.add_fires() = f;
    auto r = dispatcher_->Dispatch(req);
    EXPECT_TRUE(r.ok()) << r.status();
    std::vector<int64_t> ids;
    if (!r.ok()) return ids;
    for (const auto& o : r->outcomes()) {
      EXPECT_EQ(o.status(), v1::FIRE_STATUS_DISPATCHED) << o.message();
      for (int64_t id : o.run_ids()) ids.push_back(id);
    }
    return ids;
  }

  const prometheus::ClientMetric* Metric(const std::string& name,
                                         const std::map<std::string, std::string>& labels) {
    collected_ = registry_.Collect();
    for (const auto& family : collected_) {
      if (family.name != name) continue;
      for (const auto& m : family.metric) {
        std::map<std::string, std::string> got;
        for (const auto& l : m.label) got[l.name] = l.value;
        if (got == labels) return &m;
      }
    }
    return nullptr;
  }
  double Triggered(const std::string& strategy, const std::string& outcome) {
    const auto* m = Metric("jobwheel_dispatcher_runs_triggered_total",
                           {{"strategy", strategy}, {"outcome", outcome}});
    return m == nullptr ? 0 : m->counter.value;
  }

  std::string dsn_;
  FakeClock clock_;
  std::mt19937_64 gen_{1};
  FakeExecutorClients executors_;
  ExecutorDirectory directory_;
  prometheus::Registry registry_;
  std::vector<prometheus::MetricFamily> collected_;
  std::unique_ptr<PgPool> pg_;
  std::unique_ptr<PgDispatchStore> store_;
  std::unique_ptr<DispatcherMetrics> metrics_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<TriggerPools> pools_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherBatchTest, RunsOfOneDispatchGoAsOneRunBatchPerExecutor) {
  v1::Fire proto = NewFire(v1::ROUTING_STRATEGY_ROUND);
  std::vector<v1::Fire> fires = {proto};
  for (int i = 1; i < 90; ++i) fires.push_back(AnotherFire(proto));
  const std::vector<int64_t> ids = Dispatch(fires);
  ASSERT_EQ(ids.size(), 90u);

  // ROUND spreads them 30/30/30: one call per executor.
  std::map<std::string, int> per_address;
  for (const auto& [address, n] : executors_.batch_calls()) per_address[address] += n;
  EXPECT_EQ(executors_.batch_calls().size(), 3u);
  EXPECT_THAT(per_address, ElementsAre(Pair(kA, 30), Pair(kB, 30), Pair(kC, 30)));
  // Every run went where the database says, exactly once.
  std::set<int64_t> sent;
  for (const auto& [address, req] : executors_.runs()) {
    EXPECT_TRUE(sent.insert(req.run_id()).second) << req.run_id();
    EXPECT_EQ(RunById(dsn_, req.run_id()).address, address);
    EXPECT_EQ(req.job_id(), proto.job().id());
    EXPECT_EQ(req.handler(), "echo");
  }
  EXPECT_EQ(sent, std::set<int64_t>(ids.begin(), ids.end()));
  // Metrics per run; the batch size per call.
  EXPECT_EQ(Triggered("round", "started"), 90);
  const auto* sizes = Metric("jobwheel_dispatcher_trigger_batch_size", {});
  ASSERT_NE(sizes, nullptr);
  EXPECT_EQ(sizes->histogram.sample_count, 3u);
  EXPECT_EQ(sizes->histogram.sample_sum, 90);

  Drain();
  for (int64_t id : ids) {
    RunRow row = RunById(dsn_, id);
    EXPECT_EQ(row.status, v1::RUN_STATUS_RUNNING) << id;
    EXPECT_THAT(row.trigger_message, HasSubstr("; executor: STARTED")) << id;
  }
}

TEST_F(DispatcherBatchTest, LargeGroupsAreSplitAtMaxRunsPerBatch) {
  Dispatcher::Options options;
  options.max_runs_per_batch = 8;
  Restart(options);
  v1::Fire proto = NewFire(v1::ROUTING_STRATEGY_ROUND);
  std::vector<v1::Fire> fires = {proto};
  for (int i = 1; i < 90; ++i) fires.push_back(AnotherFire(proto));
  ASSERT_EQ(Dispatch(fires).size(), 90u);
  std::map<std::string, std::vector<int>> per_address;
  for (const auto& [address, n] : executors_.batch_calls()) per_address[address].push_back(n);
  EXPECT_THAT(per_address,
              ElementsAre(Pair(kA, ElementsAre(8, 8, 8, 6)), Pair(kB, ElementsAre(8, 8, 8, 6)),
                          Pair(kC, ElementsAre(8, 8, 8, 6))));
  EXPECT_EQ(executors_.run_count(), 90u);
  EXPECT_EQ(Triggered("round", "started"), 90);
}

TEST_F(DispatcherBatchTest, EachRunGetsItsOwnAnswerAndAFailedCallFailsEveryRunInIt) {
  v1::Fire started = NewFire();
  v1::Fire rejected = NewFire();
  v1::Fire discarded = NewFire();
  executors_.SetAnswer([&](const v1::RunRequest& r) {
    v1::RunResponse a;
    if (r.job_id() == rejected.job().id()) {
      a.set_disposition(v1::RUN_DISPOSITION_REJECTED);
      a.set_message("runs[1].handler: must not be empty");
    } else if (r.job_id() == discarded.job().id()) {
      a.set_disposition(v1::RUN_DISPOSITION_DISCARDED);
      a.set_message("job is running");
    } else {
      a.set_disposition(v1::RUN_DISPOSITION_STARTED);
    }
    return a;
  });
  const std::vector<int64_t> ids = Dispatch({started, rejected, discarded});
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_THAT(executors_.batch_calls(), ElementsAre(Pair(kA, 3)));  // FIRST: all to kA.
  EXPECT_EQ(Triggered("first", "started"), 1);
  EXPECT_EQ(Triggered("first", "rejected"), 1);
  EXPECT_EQ(Triggered("first", "discarded"), 1);
  Drain();
  EXPECT_EQ(RunById(dsn_, ids[0]).status, v1::RUN_STATUS_RUNNING);
  EXPECT_THAT(RunById(dsn_, ids[0]).trigger_message, HasSubstr("; executor: STARTED"));
  EXPECT_EQ(RunById(dsn_, ids[1]).status, v1::RUN_STATUS_FAILED);
  EXPECT_THAT(RunById(dsn_, ids[1]).trigger_message,
              HasSubstr("; executor: REJECTED (runs[1].handler: must not be empty)"));
  EXPECT_EQ(RunById(dsn_, ids[2]).status, v1::RUN_STATUS_DISCARDED);
  EXPECT_THAT(RunById(dsn_, ids[2]).trigger_message,
              HasSubstr("; executor: DISCARDED (job is running)"));

  // The call itself fails: every run of it gets the error.
  Restart(Dispatcher::Options());
  executors_.SetDown(kA, true);
  const std::vector<int64_t> failed = Dispatch({NewFire(), NewFire()});
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(executors_.batch_calls().size(), 2u);
  EXPECT_EQ(Triggered("first", "error"), 2);
  Drain();
  for (int64_t id : failed) {
    EXPECT_EQ(RunById(dsn_, id).status, v1::RUN_STATUS_FAILED) << id;
    EXPECT_THAT(RunById(dsn_, id).trigger_message,
                HasSubstr("; trigger error: UNAVAILABLE: connection refused"));
  }
}

// Every executor implements RunBatch: UNIMPLEMENTED fails the runs of the call as any failed
// trigger does (no Run calls instead), and the next Dispatch tries RunBatch again.
TEST_F(DispatcherBatchTest, RunBatchUnimplementedFailsTheRunsLikeAnyFailedTrigger) {
  executors_.SetRunBatchError(kA, absl::UnimplementedError("unknown method RunBatch"));
  v1::Fire manual = NewFire();
  manual.set_executor_address(kB);
  const std::vector<int64_t> failed = Dispatch({NewFire(), NewFire()});
  const std::vector<int64_t> started = Dispatch({manual});
  ASSERT_EQ(failed.size(), 2u);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_THAT(executors_.batch_calls(), ElementsAre(Pair(kA, 2), Pair(kB, 1)));
  ASSERT_EQ(executors_.run_count(), 1u);  // Only the run for kB reached an executor.
  EXPECT_EQ(executors_.runs()[0].second.run_id(), started[0]);
  EXPECT_EQ(Triggered("first", "error"), 2);
  EXPECT_EQ(Triggered("manual", "started"), 1);

  const std::vector<int64_t> again = Dispatch({NewFire()});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_THAT(executors_.batch_calls(), ElementsAre(Pair(kA, 2), Pair(kB, 1), Pair(kA, 1)));
  EXPECT_EQ(Triggered("first", "error"), 3);

  Drain();
  for (int64_t id : {failed[0], failed[1], again[0]}) {
    EXPECT_EQ(RunById(dsn_, id).status, v1::RUN_STATUS_FAILED) << id;
    EXPECT_THAT(RunById(dsn_, id).trigger_message,
                HasSubstr("; trigger error: UNIMPLEMENTED: unknown method RunBatch"))
        << id;
  }
  EXPECT_EQ(RunById(dsn_, started[0]).status, v1::RUN_STATUS_RUNNING);
}

TEST_F(DispatcherBatchTest, JobsOfTheSlowPoolGoInTheirOwnBatch) {
  clock_.Set(absl::FromUnixSeconds(1700000040));  // A minute boundary: the counts hold.
  v1::Fire fast = NewFire();
  v1::Fire slow = NewFire();
  // Eleven trigger calls of more than 500 ms this minute: the slow job's pool is the slow one.
  for (int i = 0; i < 11; ++i) {
    pools_->SubmitAsync(slow.job().id(), [&](std::function<void()> done) {
      clock_.Advance(absl::Milliseconds(600));
      done();
    });
  }
  ASSERT_EQ(pools_->PoolFor(slow.job().id()), TriggerPool::kSlow);
  ASSERT_EQ(pools_->PoolFor(fast.job().id()), TriggerPool::kFast);

  const std::vector<int64_t> ids = Dispatch({fast, slow, AnotherFire(fast)});
  ASSERT_EQ(ids.size(), 3u);
  // Same executor, two pools: two calls, the fast group first (created first).
  EXPECT_THAT(executors_.batch_calls(), ElementsAre(Pair(kA, 2), Pair(kA, 1)));
  auto runs = executors_.runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].second.run_id(), ids[0]);
  EXPECT_EQ(runs[1].second.run_id(), ids[2]);
  EXPECT_EQ(runs[2].second.run_id(), ids[1]);
  EXPECT_EQ(runs[2].second.job_id(), slow.job().id());
}

}  // namespace
}  // namespace jobwheel::dispatcher
