// FireEngine on a FakeFireStore, driven by a SimulatedClock: what it claims and holds, when it
// hands fires off, retries, takeover and fencing. No database, no real sleeps: the test waits
// for the engine's loops to wait on the clock (AwaitWaiters) or for the dispatcher to be called.
#include "services/scheduler/fire_engine.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/scheduler/fake_fire_store.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::DispatchRequest;
using jobwheel::v1::DispatchResponse;

// Answers as a dispatcher does: a PENDING fire row is dispatched, a missing one is not_found.
// Fails the first `fail_first` calls with UNAVAILABLE. Keeps every request.
class StoreDispatcher : public DispatchClient {
 public:
  StoreDispatcher(FakeFireStore& store, const Clock& clock) : store_(store), clock_(clock) {}
  void set_fail_first(int n) {
    absl::MutexLock lock(&mu_);
    fail_first_ = n;
  }
  // Fails every call before `t` with UNAVAILABLE (an outage), then every `every`-th call
  // before `flaky_until` (a dispatcher still reconnecting; 0: none).
  void set_down_until(absl::Time t, absl::Time flaky_until = absl::InfinitePast(), int every = 0) {
    absl::MutexLock lock(&mu_);
    down_until_ = t;
    flaky_until_ = flaky_until;
    flaky_every_ = every;
  }
  absl::StatusOr<DispatchResponse> Dispatch(const DispatchRequest& request) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    request_times_.push_back(clock_.Now());
    const bool flaky = flaky_every_ > 0 && clock_.Now() < flaky_until_ &&
                       requests_.size() % static_cast<size_t>(flaky_every_) == 0;
    if (static_cast<int>(requests_.size()) <= fail_first_ || clock_.Now() < down_until_ || flaky) {
      return absl::UnavailableError("connection refused");
    }
    DispatchResponse response;
    for (const auto& f : request.fires()) {
      auto* o = response.add_outcomes();
      o->set_fire_id(f.fire_id());
      if (store_.DispatchFire(f.fire_id())) {
        dispatched_.push_back(f.fire_id());
        o->set_status(jobwheel::v1::FIRE_STATUS_DISPATCHED);
        continue;
      }
      o->set_status(jobwheel::v1::FIRE_STATUS_FAILED);
      bool exists = false;
      for (const auto& row : store_.fires()) exists = exists || row.id == f.fire_id();
      o->set_not_found(!exists);
    }
    return response;
  }
  // Blocks until `n` requests arrived (false after 10 s of real time: a hang guard).
  bool AwaitRequests(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return requests_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  std::vector<DispatchRequest> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  std::vector<absl::Time> request_times() {
    absl::MutexLock lock(&mu_);
    return request_times_;
  }
  std::vector<int64_t> dispatched() {
    absl::MutexLock lock(&mu_);
    return dispatched_;
  }

 private:
  FakeFireStore& store_;
  const Clock& clock_;
  absl::Mutex mu_;
  int fail_first_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time down_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time flaky_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int flaky_every_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<DispatchRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> request_times_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> dispatched_ ABSL_GUARDED_BY(mu_);
};

class FireEngineTest : public ::testing::Test {
 protected:
  FireEngineTest() : store_(clock_), metrics_(registry_) {
    // On the hand-off grid (whole seconds), like cron times.
    clock_.Set(absl::FromUnixSeconds(1700000000));
    store_.SetLeader(true);
  }
  ~FireEngineTest() override {
    if (engine_) engine_->Shutdown();
  }

  // An every-second cron job next due at `next_fire`.
  int64_t AddJob(absl::Time next_fire, jobwheel::v1::MisfireStrategy misfire =
                                           jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING) {
    jobwheel::v1::Job job;
    job.set_app("demo");
    job.set_name("every-second");
    job.set_handler("echo");
    job.set_description("not sent to dispatchers");
    job.mutable_schedule()->mutable_cron()->set_expression("* * * * * ?");
    job.mutable_schedule()->mutable_cron()->set_time_zone("UTC");
    job.set_misfire_strategy(misfire);
    job.set_enabled(true);
    *job.mutable_next_fire_time() = ToProto(next_fire);
    return store_.AddJob(job);
  }

  FireEngine& Engine(FireEngine::Options options = {}) {
    engine_ = std::make_unique<FireEngine>(options, store_, dispatcher_, clock_, metrics_);
    return *engine_;
  }

  int CountFires(jobwheel::v1::FireStatus status) {
    int n = 0;
    for (const auto& f : store_.fires()) n += f.status == status;
    return n;
  }

  // jobwheel_scheduler_misfires_total{strategy=...}.
  double Misfires(const std::string& strategy) {
    double n = 0;
    for (const auto& family : registry_.Collect()) {
      if (family.name != "jobwheel_scheduler_misfires_total") continue;
      for (const auto& m : family.metric) {
        for (const auto& l : m.label) {
          if (l.name == "strategy" && l.value == strategy) n += m.counter.value;
        }
      }
    }
    return n;
  }

  // How many statements of kind `op` the engine timed (jobwheel_scheduler_db_query_duration).
  uint64_t DbOps(const std::string& op) {
    uint64_t n = 0;
    for (const auto& family : registry_.Collect()) {
      if (family.name != "jobwheel_scheduler_db_query_duration_seconds") continue;
      for (const auto& m : family.metric) {
        for (const auto& l : m.label) {
          if (l.name == "op" && l.value == op) n += m.histogram.sample_count;
        }
      }
    }
    return n;
  }

  // jobwheel_scheduler_db_errors_total{op=...}.
  double DbErrors(const std::string& op) {
    double n = 0;
    for (const auto& family : registry_.Collect()) {
      if (family.name != "jobwheel_scheduler_db_errors_total") continue;
      for (const auto& m : family.metric) {
        for (const auto& l : m.label) {
          if (l.name == "op" && l.value == op) n += m.counter.value;
        }
      }
    }
    return n;
  }

  // A PENDING cron fire of `job`, as a previous leader left it.
  int64_t AddPendingFire(int64_t job, absl::Time scheduled) {
    FakeFireStore::FireRow f;
    f.job_id = job;
    f.scheduled = scheduled;
    f.trigger_type = jobwheel::v1::TRIGGER_TYPE_CRON;
    f.epoch = 1;
    return store_.AddFire(f);
  }

  std::optional<FakeFireStore::FireRow> Fire(int64_t id) {
    for (const auto& f : store_.fires()) {
      if (f.id == id) return f;
    }
    return std::nullopt;
  }

  // Every fire id any request carried.
  std::vector<int64_t> RequestedIds() {
    std::vector<int64_t> out;
    for (const auto& r : dispatcher_.requests()) {
      for (const auto& f : r.fires()) out.push_back(f.fire_id());
    }
    return out;
  }

  SimulatedClock clock_;
  FakeFireStore store_;
  prometheus::Registry registry_;
  SchedulerMetrics metrics_;
  StoreDispatcher dispatcher_{store_, clock_};
  std::unique_ptr<FireEngine> engine_;
};

TEST_F(FireEngineTest, ClaimRecordsEachDueSecondOnceAndAdvances) {
  const absl::Time now = clock_.Now();
  const int64_t job = AddJob(now + absl::Seconds(1));
  FireEngine& engine = Engine();
  engine.OnElected(1);
  auto claimed = engine.ClaimOnce();
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_EQ(*claimed, 1);
  // now+1 .. now+10: the 5 s pre-read window and 5 s claim_ahead.
  EXPECT_EQ(CountFires(jobwheel::v1::FIRE_STATUS_PENDING), 10);
  EXPECT_EQ(engine.held(), 10u);
  EXPECT_EQ(FromProto(store_.job(job)->next_fire_time()), now + absl::Seconds(11));
  EXPECT_EQ(*engine.ClaimOnce(), 0);
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(*engine.ClaimOnce(), 0);  // now+11 is not yet within the window.
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(*engine.ClaimOnce(), 1);
  EXPECT_EQ(store_.fires().size(), 16u);
  EXPECT_EQ(engine.held(), 16u);
}

TEST_F(FireEngineTest, HeldFiresCarryOnlyWhatADispatcherNeeds) {
  AddJob(clock_.Now() + absl::Seconds(1));
  FireEngine::Options options;
  options.dispatch_threads = 1;
  FireEngine& engine = Engine(options);
  engine.OnElected(1);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  engine.Start();
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(dispatcher_.AwaitRequests(1));
  const jobwheel::v1::Job job = dispatcher_.requests()[0].fires(0).job();
  EXPECT_EQ(job.handler(), "echo");
  EXPECT_EQ(job.app(), "demo");
  EXPECT_EQ(job.description(), "");
  EXPECT_FALSE(job.has_schedule());
}

TEST_F(FireEngineTest, MisfiresFollowTheStrategyAndAreCounted) {
  const absl::Time now = clock_.Now();
  AddJob(now - absl::Seconds(60), jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  AddJob(now - absl::Seconds(60), jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  FireEngine& engine = Engine();
  engine.OnElected(1);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  EXPECT_EQ(CountFires(jobwheel::v1::FIRE_STATUS_SKIPPED), 1);
  // DO_NOTHING: now-5 .. now+10; FIRE_ONCE_NOW: one MISFIRE fire and the same 16.
  EXPECT_EQ(CountFires(jobwheel::v1::FIRE_STATUS_PENDING), 16 + 17);
  EXPECT_EQ(engine.held(), 33u);  // SKIPPED rows are not held.
  bool counted = false;
  for (const auto& family : registry_.Collect()) {
    if (family.name != "jobwheel_scheduler_misfires_total") continue;
    double total = 0;
    for (const auto& m : family.metric) total += m.counter.value;
    EXPECT_EQ(total, 2 * 55);
    counted = true;
  }
  EXPECT_TRUE(counted);
}

// A fire goes to the dispatcher dispatch_lead before its time, on the hand-off grid, and not a
// millisecond earlier.
TEST_F(FireEngineTest, FiresAreHandedOffTheLeadAheadOfTheirTime) {
  const absl::Time now = clock_.Now();
  AddJob(now + absl::Seconds(1));
  FireEngine& engine = Engine();
  engine.OnElected(1);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  engine.Start();
  const absl::Duration lead = FireEngine::Options().dispatch_lead;
  ASSERT_GT(lead, absl::ZeroDuration());
  clock_.AwaitWaiters(2);  // The claim loop and the hand-off loop wait on the clock.
  clock_.Advance(absl::Seconds(1) - lead - absl::Milliseconds(1));
  clock_.AwaitWaiters(2);
  EXPECT_TRUE(dispatcher_.requests().empty());
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(dispatcher_.AwaitRequests(1));
  const auto request = dispatcher_.requests()[0];
  ASSERT_EQ(request.fires_size(), 1);
  EXPECT_EQ(FromProto(request.fires(0).scheduled_time()), now + absl::Seconds(1));
}

// Everything due for hand-off at one grid point goes in one request.
TEST_F(FireEngineTest, FiresDueTogetherGoInOneBatch) {
  const absl::Time now = clock_.Now();
  for (int i = 0; i < 5; ++i) AddJob(now + absl::Seconds(1));
  FireEngine& engine = Engine();
  engine.OnElected(1);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  engine.Start();
  clock_.AwaitWaiters(2);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(dispatcher_.AwaitRequests(1));
  EXPECT_EQ(dispatcher_.requests()[0].fires_size(), 5);
}

TEST_F(FireEngineTest, FailedHandOffIsRetriedAfterItsBackoffWithTheWholeFire) {
  const absl::Time now = clock_.Now();
  AddJob(now + absl::Seconds(1));
  dispatcher_.set_fail_first(1);
  FireEngine& engine = Engine();
  engine.OnElected(1);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  engine.Start();
  clock_.AwaitWaiters(2);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(dispatcher_.AwaitRequests(1));
  const absl::Time failed_at = clock_.Now();
  const int64_t fire_id = dispatcher_.requests()[0].fires(0).fire_id();
  // The request that retries the failed fire (the next second's fire may come first when the
  // clock outruns the dispatch thread's requeue).
  auto retry = [&]() -> int {
    const auto requests = dispatcher_.requests();
    for (size_t i = 1; i < requests.size(); ++i) {
      for (const auto& f : requests[i].fires()) {
        if (f.fire_id() == fire_id) return static_cast<int>(i);
      }
    }
    return -1;
  };
  // Millisecond by millisecond until the retry: it comes no sooner than its backoff.
  for (int i = 0; i < 2000 && retry() < 0; ++i) {
    clock_.AwaitWaiters(2);
    if (retry() >= 0) break;
    clock_.Advance(absl::Milliseconds(1));
  }
  const int r = retry();
  ASSERT_GT(r, 0);
  EXPECT_GE(dispatcher_.request_times()[r] - failed_at, absl::Milliseconds(100));
  const auto requests = dispatcher_.requests();
  for (const auto& req : {requests[0], requests[r]}) {
    ASSERT_EQ(req.fires_size(), 1);
    EXPECT_EQ(req.fires(0).fire_id(), fire_id);
    EXPECT_EQ(req.fires(0).job().app(), "demo");
    EXPECT_EQ(req.fires(0).job().handler(), "echo");
    EXPECT_EQ(FromProto(req.fires(0).scheduled_time()), now + absl::Seconds(1));
  }
  const std::vector<int64_t> dispatched = dispatcher_.dispatched();
  EXPECT_EQ(std::count(dispatched.begin(), dispatched.end(), fire_id), 1);
}

TEST_F(FireEngineTest, FiresRemovedMeanwhileAreDropped) {
  const absl::Time now = clock_.Now();
  const int64_t job = AddJob(now + absl::Seconds(1));
  FireEngine::Options options;
  options.misfire_threshold = absl::Minutes(1);  // Handed off up to 9 s late, not misfires.
  FireEngine& engine = Engine(options);
  engine.OnElected(1);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  // As UpdateJob/PauseJob do: the future pending fires go away.
  for (const auto& f : store_.fires()) {
    if (f.scheduled > now + absl::Seconds(2)) store_.DeleteFire(f.id);
  }
  store_.UpdateJob(job, [](jobwheel::v1::Job& j) { j.set_enabled(false); });
  engine.Start();
  clock_.AwaitWaiters(2);
  clock_.Advance(absl::Seconds(10));  // Within the misfire threshold set above.
  // All ten are due at once: one request. Two run; eight are not found and dropped.
  ASSERT_TRUE(dispatcher_.AwaitRequests(1));
  engine.Shutdown();  // Waits for the hand-off in flight.
  ASSERT_EQ(dispatcher_.requests().size(), 1u);
  EXPECT_EQ(dispatcher_.requests()[0].fires_size(), 10);
  EXPECT_EQ(dispatcher_.dispatched().size(), 2u);
  EXPECT_EQ(CountFires(jobwheel::v1::FIRE_STATUS_DISPATCHED), 2);
  EXPECT_EQ(engine.held(), 0u);
}

TEST_F(FireEngineTest, TakeoverLoadsPendingFiresPageByPage) {
  const absl::Time now = clock_.Now();
  const int64_t job = AddJob(now + absl::Seconds(100));
  for (int i = 1; i <= 7; ++i) {
    FakeFireStore::FireRow f;
    f.job_id = job;
    f.scheduled = now + absl::Seconds(i);
    f.trigger_type = jobwheel::v1::TRIGGER_TYPE_CRON;
    store_.AddFire(f);
  }
  FireEngine::Options options;
  options.load_batch = 3;
  FireEngine& engine = Engine(options);
  const int before = store_.operations();
  engine.OnElected(2);
  EXPECT_EQ(engine.held(), 7u);
  EXPECT_EQ(store_.operations() - before, 3);  // Pages of 3, 3 and 1.
}

TEST_F(FireEngineTest, FailedTakeoverLoadIsRetriedByTheClaimLoop) {
  const absl::Time now = clock_.Now();
  const int64_t job = AddJob(now + absl::Seconds(100));
  FakeFireStore::FireRow f;
  f.job_id = job;
  f.scheduled = now + absl::Seconds(2);
  f.trigger_type = jobwheel::v1::TRIGGER_TYPE_CRON;
  store_.AddFire(f);
  FireEngine& engine = Engine();
  store_.FailNext(absl::UnavailableError("connection lost"));
  engine.OnElected(2);
  EXPECT_EQ(engine.held(), 0u);
  engine.Start();
  clock_.AwaitWaiters(2);  // The claim loop's first pass is done.
  EXPECT_EQ(engine.held(), 1u);
}

TEST_F(FireEngineTest, ManualFiresArePickedUpByTheClaimLoop) {
  const int64_t job = AddJob(clock_.Now() + absl::Hours(1));
  FireEngine& engine = Engine();
  engine.OnElected(1);
  engine.Start();
  clock_.AwaitWaiters(2);
  FakeFireStore::FireRow manual;
  manual.job_id = job;
  manual.scheduled = clock_.Now();
  manual.trigger_type = jobwheel::v1::TRIGGER_TYPE_MANUAL;
  manual.param = "override";
  const int64_t id = store_.AddFire(manual);
  clock_.Advance(FireEngine::Options().claim_interval);
  ASSERT_TRUE(dispatcher_.AwaitRequests(1));
  const auto fire = dispatcher_.requests()[0].fires(0);
  EXPECT_EQ(fire.fire_id(), id);
  EXPECT_EQ(fire.param(), "override");
  EXPECT_EQ(fire.trigger_type(), jobwheel::v1::TRIGGER_TYPE_MANUAL);
}

TEST_F(FireEngineTest, AFullClaimBatchIsFollowedByAnotherAtOnce) {
  const absl::Time now = clock_.Now();
  for (int i = 0; i < 5; ++i) AddJob(now + absl::Seconds(1));
  FireEngine::Options options;
  options.claim_batch = 2;
  FireEngine& engine = Engine(options);
  engine.OnElected(1);
  engine.Start();
  clock_.AwaitWaiters(2);  // Without the clock moving: claims of 2, 2 and 1.
  EXPECT_EQ(engine.held(), 50u);
}

TEST_F(FireEngineTest, ADeposedEngineClaimsAndHoldsNothing) {
  AddJob(clock_.Now() + absl::Seconds(1));
  FireEngine& engine = Engine();
  engine.OnElected(1);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  EXPECT_EQ(engine.held(), 10u);
  store_.SetLeader(false);
  engine.OnDeposed();
  EXPECT_FALSE(engine.active());
  EXPECT_EQ(engine.held(), 0u);
  store_.UpdateJob(
      1, [&](jobwheel::v1::Job& j) { *j.mutable_next_fire_time() = ToProto(clock_.Now()); });
  auto claimed = engine.ClaimOnce();
  EXPECT_EQ(claimed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_.fires().size(), 10u);
  EXPECT_EQ(engine.held(), 0u);
}

// A takeover finds the old leader's PENDING fires, some more than misfire_threshold late: a
// DO_NOTHING job's late fires are skipped, a FIRE_ONCE_NOW job's earliest late fire is handed
// off once (as a MISFIRE fire) and the rest skipped, even across pages of the load; fires on
// time are held as usual. The skipped ones never reach a dispatcher.
TEST_F(FireEngineTest, TakeoverSettlesLatePendingFiresByTheJobsMisfireStrategy) {
  const absl::Time now = clock_.Now();
  const int64_t skip = AddJob(now + absl::Hours(1), jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  const int64_t once = AddJob(now + absl::Hours(1), jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  std::vector<int64_t> skip_late, once_late, on_time;
  for (int s = 9; s >= 6; --s) {
    skip_late.push_back(AddPendingFire(skip, now - absl::Seconds(s)));
    once_late.push_back(AddPendingFire(once, now - absl::Seconds(s)));
  }
  for (const absl::Duration d : {-absl::Seconds(2), absl::Seconds(1)}) {
    on_time.push_back(AddPendingFire(skip, now + d));
    on_time.push_back(AddPendingFire(once, now + d));
  }
  FireEngine::Options options;
  options.load_batch = 3;  // The late fires span pages.
  FireEngine& engine = Engine(options);
  engine.OnElected(2);

  for (int64_t id : skip_late) {
    EXPECT_EQ(Fire(id)->status, jobwheel::v1::FIRE_STATUS_SKIPPED) << id;
    EXPECT_TRUE(absl::StrContains(Fire(id)->reason, "(DO_NOTHING)")) << Fire(id)->reason;
  }
  // The earliest is fired once; the other three are skipped.
  EXPECT_EQ(Fire(once_late[0])->status, jobwheel::v1::FIRE_STATUS_PENDING);
  EXPECT_EQ(Fire(once_late[0])->trigger_type, jobwheel::v1::TRIGGER_TYPE_MISFIRE);
  EXPECT_TRUE(absl::StrContains(Fire(once_late[0])->reason, "fired once now"));
  for (size_t i = 1; i < once_late.size(); ++i) {
    EXPECT_EQ(Fire(once_late[i])->status, jobwheel::v1::FIRE_STATUS_SKIPPED) << once_late[i];
  }
  for (int64_t id : on_time) {
    EXPECT_EQ(Fire(id)->status, jobwheel::v1::FIRE_STATUS_PENDING) << id;
    EXPECT_EQ(Fire(id)->trigger_type, jobwheel::v1::TRIGGER_TYPE_CRON) << id;
  }
  EXPECT_EQ(engine.held(), 1u + on_time.size());
  EXPECT_EQ(Misfires("do_nothing"), 4);
  EXPECT_EQ(Misfires("fire_once_now"), 4);

  // What is handed off: the fired-once fire, as a MISFIRE fire, and the fires on time.
  engine.Start();
  // Due now: the fired-once fire and now-2's; then, a second later, now+1's.
  ASSERT_TRUE(dispatcher_.AwaitRequests(1));
  clock_.AwaitWaiters(2);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(dispatcher_.AwaitRequests(2));
  std::vector<int64_t> dispatched = dispatcher_.dispatched();
  std::sort(dispatched.begin(), dispatched.end());
  std::vector<int64_t> expected = on_time;
  expected.push_back(once_late[0]);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(dispatched, expected);
  std::vector<int64_t> requested = RequestedIds();
  std::sort(requested.begin(), requested.end());
  EXPECT_EQ(requested, expected);  // No skipped fire was ever sent.
  for (const auto& r : dispatcher_.requests()) {
    for (const auto& f : r.fires()) {
      EXPECT_EQ(f.trigger_type(), f.fire_id() == once_late[0] ? jobwheel::v1::TRIGGER_TYPE_MISFIRE
                                                              : jobwheel::v1::TRIGGER_TYPE_CRON);
    }
  }
}

// A dispatcher outage holds fires back past misfire_threshold: when their hand-off finally
// comes, they follow their job's misfire strategy (DO_NOTHING: all skipped; FIRE_ONCE_NOW: one
// handed off), and fires on time never pay for that step.
TEST_F(FireEngineTest, FiresHeldBackByAnOutageFollowTheMisfireStrategyWhenHandedOffLate) {
  const absl::Time now = clock_.Now();
  const int64_t skip = AddJob(now + absl::Seconds(1), jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  const int64_t once = AddJob(now + absl::Seconds(1), jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  FireEngine& engine = Engine();
  engine.OnElected(1);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  ASSERT_EQ(engine.held(), 20u);  // now+1 .. now+10 of each.
  // Claim nothing more: only the held fires are counted.
  for (int64_t job : {skip, once}) {
    store_.UpdateJob(job, [](jobwheel::v1::Job& j) { j.set_enabled(false); });
  }
  dispatcher_.set_fail_first(1);
  engine.Start();
  clock_.AwaitWaiters(2);
  clock_.Advance(absl::Seconds(1));  // now+1's fires: the dispatcher is down.
  ASSERT_TRUE(dispatcher_.AwaitRequests(1));
  EXPECT_EQ(DbOps("settle_late"), 0u);  // On time: no extra statement.
  // The outage lasts: every held fire is more than 5 s late when it goes again.
  clock_.Advance(absl::Seconds(19));
  for (int i = 0; i < 100 && engine.held() > 0; ++i) {
    clock_.AwaitWaiters(2);
    clock_.Advance(absl::Milliseconds(100));
  }
  ASSERT_EQ(engine.held(), 0u);
  engine.Shutdown();

  int skipped_of_skip = 0, skipped_of_once = 0;
  std::vector<int64_t> misfire_fires;
  for (const auto& f : store_.fires()) {
    if (f.status == jobwheel::v1::FIRE_STATUS_SKIPPED) {
      ++(f.job_id == skip ? skipped_of_skip : skipped_of_once);
    }
    if (f.trigger_type == jobwheel::v1::TRIGGER_TYPE_MISFIRE) {
      EXPECT_EQ(f.job_id, once);
      // The earliest late fire of the first settle: now+1, or now+2 when now+1's retry came
      // in a settle of its own (then skipped: the fire-once covered it).
      EXPECT_GE(f.scheduled, now + absl::Seconds(1));
      EXPECT_LE(f.scheduled, now + absl::Seconds(2));
      EXPECT_EQ(f.status, jobwheel::v1::FIRE_STATUS_DISPATCHED);
      misfire_fires.push_back(f.id);
    }
  }
  EXPECT_EQ(skipped_of_skip, 10);
  EXPECT_EQ(skipped_of_once, 9);
  ASSERT_EQ(misfire_fires.size(), 1u);
  EXPECT_EQ(dispatcher_.dispatched(), misfire_fires);
  EXPECT_EQ(CountFires(jobwheel::v1::FIRE_STATUS_PENDING), 0);
  EXPECT_EQ(Misfires("do_nothing"), 10);
  EXPECT_EQ(Misfires("fire_once_now"), 10);
  EXPECT_GE(DbOps("settle_late"), 1u);
  // After the failed request, only the fired-once fire was sent.
  const auto requests = dispatcher_.requests();
  ASSERT_GE(requests.size(), 2u);
  for (size_t i = 1; i < requests.size(); ++i) {
    for (const auto& f : requests[i].fires()) {
      EXPECT_EQ(f.fire_id(), misfire_fires[0]);
      EXPECT_EQ(f.trigger_type(), jobwheel::v1::TRIGGER_TYPE_MISFIRE);
    }
  }
}

// The misfire threshold's promise: a backlog an outage left, which the hand-off drains within
// the threshold, is fired late, not shed as overload. 100 every-second jobs (more than the
// admission's floor holds: the claim is held back while the dispatcher is down), the dispatcher
// unreachable for 12 s and then failing every third call for 4 s more (fires requeued out of
// order), misfire_threshold 120 s: every due second is dispatched once, none is SKIPPED and
// nothing counts as shed.
TEST_F(FireEngineTest, ABacklogAfterAnOutageIsFiredLateNotShed) {
  const absl::Time start = clock_.Now();
  constexpr int kJobs = 100;
  std::vector<int64_t> jobs;
  for (int i = 0; i < kJobs; ++i) jobs.push_back(AddJob(start + absl::Seconds(1)));
  dispatcher_.set_down_until(start + absl::Seconds(12), start + absl::Seconds(16), 3);
  FireEngine::Options options;
  options.misfire_threshold = absl::Seconds(120);
  options.admission.min_rate = 10;  // A floor of 100 held fires: the claim is held back.
  FireEngine& engine = Engine(options);
  engine.OnElected(1);
  engine.Start();
  // 30 s in 100 ms steps, then the jobs stop and the held fires drain.
  for (int i = 0; i < 300; ++i) {
    clock_.AwaitWaiters(2);
    clock_.Advance(absl::Milliseconds(100));
  }
  for (int64_t job : jobs) {
    store_.UpdateJob(job, [](jobwheel::v1::Job& j) { j.set_enabled(false); });
  }
  for (int i = 0; i < 200 && engine.held() > 0; ++i) {
    clock_.AwaitWaiters(2);
    clock_.Advance(absl::Milliseconds(100));
  }
  ASSERT_EQ(engine.held(), 0u);
  engine.Shutdown();

  // Each job: one DISPATCHED fire for every second from start+1 to its last one.
  absl::flat_hash_map<int64_t, std::vector<absl::Time>> seconds;
  int skipped = 0, late = 0;
  for (const auto& f : store_.fires()) {
    if (f.status == jobwheel::v1::FIRE_STATUS_SKIPPED) {
      ++skipped;
      continue;
    }
    EXPECT_EQ(f.status, jobwheel::v1::FIRE_STATUS_DISPATCHED) << f.id;
    EXPECT_EQ(f.trigger_type, jobwheel::v1::TRIGGER_TYPE_CRON) << f.id;
    seconds[f.job_id].push_back(f.scheduled);
  }
  EXPECT_EQ(skipped, 0);
  ASSERT_EQ(seconds.size(), static_cast<size_t>(kJobs));
  for (auto& [job, times] : seconds) {
    std::sort(times.begin(), times.end());
    ASSERT_GE(times.size(), 25u) << job;  // At least the 30 s of the run less the window's end.
    for (size_t i = 0; i < times.size(); ++i) {
      EXPECT_EQ(times[i], start + absl::Seconds(1 + static_cast<int64_t>(i))) << job;
    }
  }
  // The fires due in the outage went out after it.
  const auto requests = dispatcher_.requests();
  const auto times = dispatcher_.request_times();
  for (size_t i = 0; i < requests.size(); ++i) {
    if (times[i] < start + absl::Seconds(12)) continue;
    for (const auto& f : requests[i].fires()) {
      late += FromProto(f.scheduled_time()) < start + absl::Seconds(11);
    }
  }
  EXPECT_GE(late, 10 * kJobs);
  EXPECT_EQ(metrics_.fires_shed.Value(), 0);
  EXPECT_EQ(Misfires("do_nothing"), 0);
}

// A settle that cannot reach the database keeps the late fires held and PENDING; they are
// settled on a later try.
TEST_F(FireEngineTest, AFailedSettleKeepsTheLateFiresForTheNextTry) {
  const absl::Time now = clock_.Now();
  const int64_t job = AddJob(now + absl::Hours(1), jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  const int64_t id = AddPendingFire(job, now + absl::Seconds(1));
  FireEngine& engine = Engine();
  engine.OnElected(2);
  ASSERT_EQ(engine.held(), 1u);
  clock_.Advance(absl::Seconds(10));  // Held past its hand-off time: 9 s late.
  store_.FailNextOf("settle late fires", absl::UnavailableError("connection lost"));
  engine.Start();
  for (int i = 0; i < 100 && engine.held() > 0; ++i) {
    clock_.AwaitWaiters(2);
    clock_.Advance(absl::Milliseconds(100));
  }
  EXPECT_EQ(engine.held(), 0u);
  EXPECT_EQ(DbErrors("settle_late"), 1);  // The first settle failed; the retry settled it.
  EXPECT_GE(DbOps("settle_late"), 2u);
  EXPECT_EQ(Fire(id)->status, jobwheel::v1::FIRE_STATUS_SKIPPED);
  EXPECT_TRUE(dispatcher_.requests().empty());
}

// A takeover after an outage longer than the claim-ahead: the old leader's PENDING fires are
// late (the takeover load), and so are the jobs' next fire times (the claim). A FIRE_ONCE_NOW
// job fires once for the whole outage: the claim's misfire row is SKIPPED as already fired
// once, and every missed time is counted.
TEST_F(FireEngineTest, TakeoverAfterAnOutageFiresOnceNowOnceAcrossLoadAndClaim) {
  const absl::Time now = clock_.Now();
  // The old leader claimed now-30 .. now-21 and advanced next_fire_at to now-20.
  const int64_t skip = AddJob(now - absl::Seconds(20), jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  const int64_t once =
      AddJob(now - absl::Seconds(20), jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  for (int s = 30; s >= 21; --s) {
    AddPendingFire(skip, now - absl::Seconds(s));
    AddPendingFire(once, now - absl::Seconds(s));
  }
  FireEngine& engine = Engine();
  engine.OnElected(2);
  ASSERT_TRUE(engine.ClaimOnce().ok());
  int misfire_fires = 0;
  for (const auto& f : store_.fires()) {
    if (f.job_id != once) continue;
    if (f.trigger_type == jobwheel::v1::TRIGGER_TYPE_MISFIRE) ++misfire_fires;
    if (f.scheduled == now - absl::Seconds(20)) {
      EXPECT_EQ(f.status, jobwheel::v1::FIRE_STATUS_SKIPPED);
      EXPECT_EQ(f.trigger_type, jobwheel::v1::TRIGGER_TYPE_CRON);
      EXPECT_TRUE(absl::StartsWith(f.reason, "misfire: 15 fire(s) from ")) << f.reason;
      EXPECT_TRUE(absl::EndsWith(f.reason, "skipped, the job fired once (FIRE_ONCE_NOW)"))
          << f.reason;
    }
  }
  EXPECT_EQ(misfire_fires, 1);  // The earliest late pending fire, from the load.
  // 10 late pending fires + 15 missed times (now-20 .. now-6) per job.
  EXPECT_EQ(Misfires("do_nothing"), 25);
  EXPECT_EQ(Misfires("fire_once_now"), 25);

  // Another outage later in the same term (the claim did not run for a minute) fires once again.
  clock_.Advance(absl::Seconds(60));
  store_.UpdateJob(once, [&](jobwheel::v1::Job& j) {
    *j.mutable_next_fire_time() = ToProto(clock_.Now() - absl::Seconds(20));
  });
  ASSERT_TRUE(engine.ClaimOnce().ok());
  misfire_fires = 0;
  for (const auto& f : store_.fires()) {
    misfire_fires += f.job_id == once && f.trigger_type == jobwheel::v1::TRIGGER_TYPE_MISFIRE;
  }
  EXPECT_EQ(misfire_fires, 2);
}

TEST_F(FireEngineTest, DeposedInsideAStoreCallDoesNotDeadlock) {
  // A fenced transaction that finds leadership lost calls on_deposed on the calling thread,
  // which may be inside a store call the engine made holding its late-fire lock.
  AddJob(clock_.Now() + absl::Seconds(1));
  FireEngine& engine = Engine();
  store_.OnNextOperation([&engine] { engine.OnDeposed(); });
  engine.OnElected(1);  // Loads the pending fires: the store call deposes it.
  store_.OnNextOperation([&engine] { engine.OnDeposed(); });
  engine.OnElected(2);
  EXPECT_EQ(engine.held(), 0u);
}

}  // namespace
}  // namespace jobwheel::scheduler
