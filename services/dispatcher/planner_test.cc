#include "services/dispatcher/planner.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/dispatcher/fake_executor_clients.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::HasSubstr;

class PlannerTest : public ::testing::Test {
 protected:
  PlannerTest() {
    SetExecutors({{"127.0.0.1:7201", {"echo"}, false},
                  {"127.0.0.1:7202", {"echo"}, true},
                  {"127.0.0.1:7203", {"echo", "sleep"}, false}});
  }

  struct Exec {
    std::string address;
    std::vector<std::string> handlers;
    bool scripts;
    bool draining = false;
  };
  void SetExecutors(const std::vector<Exec>& list) {
    v1::WatchExecutorsResponse snap;
    snap.set_version(++version_);
    snap.set_type(v1::WATCH_EVENT_TYPE_SNAPSHOT);
    for (const Exec& x : list) {
      v1::Executor* e = snap.add_executors();
      e->set_app("demo");
      e->set_address(x.address);
      e->set_allow_scripts(x.scripts);
      e->set_draining(x.draining);
      e->set_instance(absl::StrCat("instance-of-", x.address));
      for (const auto& h : x.handlers) e->add_handlers(h);
    }
    directory_.Apply(snap);
  }

  v1::Fire Fire(v1::RoutingStrategy strategy, const std::string& handler = "echo") {
    v1::Fire f;
    f.set_fire_id(11);
    f.mutable_job()->set_id(5);
    f.mutable_job()->set_app("demo");
    f.mutable_job()->set_handler(handler);
    f.mutable_job()->set_routing_strategy(strategy);
    *f.mutable_scheduled_time() = ToProto(clock_.Now());
    return f;
  }

  FakeClock clock_;
  std::mt19937_64 gen_{1};
  FakeExecutorClients executors_;
  ExecutorDirectory directory_;
  int64_t version_ = 0;
  Router router_{clock_, gen_, executors_};
  TriggerPools pools_{clock_, TriggerPools::Options()};
  Planner planner_{directory_, router_, pools_, absl::Milliseconds(5)};
};

TEST_F(PlannerTest, RoutesOverTheExecutorsWithTheHandler) {
  FirePlan plan = planner_.Plan(Fire(v1::ROUTING_STRATEGY_LAST));
  EXPECT_EQ(plan.status, v1::FIRE_STATUS_DISPATCHED);
  ASSERT_EQ(plan.runs.size(), 1u);
  EXPECT_EQ(plan.runs[0].executor_address, "127.0.0.1:7203");
  EXPECT_EQ(plan.runs[0].status, v1::RUN_STATUS_PENDING);
  EXPECT_EQ(plan.runs[0].trigger_message, "route LAST over 3 executors → 127.0.0.1:7203");

  plan = planner_.Plan(Fire(v1::ROUTING_STRATEGY_FIRST, "sleep"));
  ASSERT_EQ(plan.runs.size(), 1u);
  EXPECT_EQ(plan.runs[0].executor_address, "127.0.0.1:7203");
  EXPECT_THAT(plan.runs[0].trigger_message, HasSubstr("over 1 executor →"));
}

TEST_F(PlannerTest, DrainedExecutorsGetNoNewRunsAndRunsNameTheirInstance) {
  SetExecutors({{"127.0.0.1:7201", {"echo"}, false, /*draining=*/true},
                {"127.0.0.1:7202", {"echo"}, false}});
  for (v1::RoutingStrategy s : {v1::ROUTING_STRATEGY_FIRST, v1::ROUTING_STRATEGY_ROUND,
                                v1::ROUTING_STRATEGY_SHARDING_BROADCAST}) {
    FirePlan plan = planner_.Plan(Fire(s));
    ASSERT_EQ(plan.status, v1::FIRE_STATUS_DISPATCHED) << plan.reason;
    ASSERT_EQ(plan.runs.size(), 1u) << v1::RoutingStrategy_Name(s);
    EXPECT_EQ(plan.runs[0].executor_address, "127.0.0.1:7202");
    EXPECT_EQ(plan.runs[0].executor_instance, "instance-of-127.0.0.1:7202");
  }
  v1::Fire manual = Fire(v1::ROUTING_STRATEGY_FIRST);
  manual.set_executor_address("127.0.0.1:7201");
  FirePlan refused = planner_.Plan(manual);
  EXPECT_EQ(refused.status, v1::FIRE_STATUS_FAILED);
  EXPECT_THAT(refused.reason, HasSubstr("executor 127.0.0.1:7201 is drained"));

  SetExecutors({{"127.0.0.1:7201", {"echo"}, false, true}});
  FirePlan none = planner_.Plan(Fire(v1::ROUTING_STRATEGY_FIRST));
  EXPECT_EQ(none.status, v1::FIRE_STATUS_FAILED);
  EXPECT_THAT(none.reason, HasSubstr("every executor online for app demo (1) is drained"));
}

TEST_F(PlannerTest, AnExecutorListingTheAnyHandlerTakesEveryHandlerButNoScripts) {
  SetExecutors({{"127.0.0.1:7201", {"*"}, false}});
  FirePlan plan = planner_.Plan(Fire(v1::ROUTING_STRATEGY_FIRST, "whatever-it-is"));
  ASSERT_EQ(plan.status, v1::FIRE_STATUS_DISPATCHED) << plan.reason;
  EXPECT_EQ(plan.runs[0].executor_address, "127.0.0.1:7201");
  v1::Fire script = Fire(v1::ROUTING_STRATEGY_FIRST);
  script.mutable_job()->set_glue_type(v1::GLUE_TYPE_SCRIPT_SHELL);
  EXPECT_EQ(planner_.Plan(script).status, v1::FIRE_STATUS_FAILED);
}

TEST_F(PlannerTest, NoFittingExecutorFailsTheFireWithOneFailedRun) {
  FirePlan plan = planner_.Plan(Fire(v1::ROUTING_STRATEGY_FIRST, "nope"));
  EXPECT_EQ(plan.status, v1::FIRE_STATUS_FAILED);
  EXPECT_EQ(plan.reason, "job 5: none of the 3 executors online for app demo has handler nope");
  ASSERT_EQ(plan.runs.size(), 1u);
  EXPECT_EQ(plan.runs[0].status, v1::RUN_STATUS_FAILED);
  EXPECT_EQ(plan.runs[0].trigger_message, plan.reason);

  v1::Fire script = Fire(v1::ROUTING_STRATEGY_FIRST, "");
  script.mutable_job()->set_glue_type(v1::GLUE_TYPE_SCRIPT_PYTHON);
  plan = planner_.Plan(script);
  ASSERT_EQ(plan.status, v1::FIRE_STATUS_DISPATCHED);
  EXPECT_EQ(plan.runs[0].executor_address, "127.0.0.1:7202");  // The only one allowing scripts.

  SetExecutors({});
  v1::Fire shard = Fire(v1::ROUTING_STRATEGY_ROUND);
  shard.set_shard_index(1);
  shard.set_shard_total(3);
  plan = planner_.Plan(shard);
  EXPECT_EQ(plan.status, v1::FIRE_STATUS_FAILED);
  EXPECT_EQ(plan.reason, "job 5: no executor online for app demo");
  ASSERT_EQ(plan.runs.size(), 1u);
  EXPECT_EQ(plan.runs[0].shard_index, 1);  // The failed run keeps the fire's shard.
  EXPECT_EQ(plan.runs[0].shard_total, 3);
}

TEST_F(PlannerTest, ManualExecutorMustBeOnlineAndFit) {
  v1::Fire fire = Fire(v1::ROUTING_STRATEGY_FIRST);
  fire.set_executor_address("10.9.9.9:1");
  FirePlan plan = planner_.Plan(fire);
  EXPECT_EQ(plan.status, v1::FIRE_STATUS_FAILED);
  EXPECT_THAT(plan.reason, HasSubstr("executor 10.9.9.9:1 is not online for app demo"));

  fire = Fire(v1::ROUTING_STRATEGY_FIRST, "sleep");
  fire.set_executor_address("127.0.0.1:7201");
  plan = planner_.Plan(fire);
  EXPECT_EQ(plan.status, v1::FIRE_STATUS_FAILED);
  EXPECT_THAT(plan.reason, HasSubstr("executor 127.0.0.1:7201 has no handler sleep"));

  fire = Fire(v1::ROUTING_STRATEGY_FIRST);
  fire.set_executor_address("127.0.0.1:7202");
  fire.set_shard_index(1);
  fire.set_shard_total(4);
  plan = planner_.Plan(fire);
  ASSERT_EQ(plan.status, v1::FIRE_STATUS_DISPATCHED);
  ASSERT_EQ(plan.runs.size(), 1u);
  EXPECT_EQ(plan.runs[0].executor_address, "127.0.0.1:7202");
  EXPECT_EQ(plan.runs[0].shard_index, 1);
  EXPECT_EQ(plan.runs[0].shard_total, 4);
  EXPECT_EQ(plan.runs[0].trigger_message, "manual executor over 3 candidates → 127.0.0.1:7202");
}

TEST_F(PlannerTest, BroadcastMakesOneRunPerExecutorWithItsShard) {
  FirePlan plan = planner_.Plan(Fire(v1::ROUTING_STRATEGY_SHARDING_BROADCAST));
  ASSERT_EQ(plan.runs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(plan.runs[i].shard_index, i);
    EXPECT_EQ(plan.runs[i].shard_total, 3);
    EXPECT_THAT(plan.runs[i].trigger_message,
                HasSubstr(absl::StrCat("shard ", i, "/3 → 127.0.0.1:720", i + 1)));
  }
}

TEST_F(PlannerTest, TriggerTimeIsNowOrTheScheduledTimeRoundedUpToATick) {
  const absl::Time now = clock_.Now();
  v1::Fire fire = Fire(v1::ROUTING_STRATEGY_FIRST);
  *fire.mutable_scheduled_time() = ToProto(now - absl::Seconds(1));
  EXPECT_EQ(planner_.TriggerTime(fire, now), now);  // Late: now.
  *fire.mutable_scheduled_time() = ToProto(now + absl::Milliseconds(301));
  EXPECT_EQ(planner_.TriggerTime(fire, now), now + absl::Milliseconds(305));
  *fire.mutable_scheduled_time() = ToProto(now + absl::Seconds(1));  // Whole seconds stay.
  EXPECT_EQ(planner_.TriggerTime(fire, now), now + absl::Seconds(1));
  Planner exact(directory_, router_, pools_, absl::ZeroDuration());
  *fire.mutable_scheduled_time() = ToProto(now + absl::Microseconds(301));
  EXPECT_EQ(exact.TriggerTime(fire, now), now + absl::Microseconds(301));
}

TEST_F(PlannerTest, CreatedRunsGoNowOrAreHeldWithTheirFire) {
  const absl::Time now = clock_.Now();
  v1::Fire fire = Fire(v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
  fire.set_param("p");
  FireResult result;
  for (int i = 0; i < 3; ++i) {
    PlannedRun p;
    p.executor_address = absl::StrCat("127.0.0.1:720", i + 1);
    p.shard_index = i;
    p.shard_total = 3;
    p.result_key = std::string(32, static_cast<char>('a' + i));
    result.created.push_back(CreatedRun{100 + i, p});
  }
  result.created[1].planned.status = v1::RUN_STATUS_FAILED;  // Not sent.
  std::vector<RoutedRun> now_runs;
  std::vector<std::pair<RoutedRun, absl::Time>> held;
  planner_.Route(fire, result, now, &now_runs, &held);
  ASSERT_EQ(now_runs.size(), 2u);
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(now_runs[0].address, "127.0.0.1:7201");
  EXPECT_EQ(now_runs[0].pool, TriggerPool::kFast);
  EXPECT_EQ(now_runs[0].run.request.run_id(), 100);
  EXPECT_EQ(now_runs[0].run.request.param(), "p");
  EXPECT_EQ(now_runs[0].run.request.handler(), "echo");
  EXPECT_EQ(now_runs[0].run.strategy, "sharding_broadcast");
  EXPECT_EQ(now_runs[1].run.request.run_id(), 102);
  EXPECT_EQ(now_runs[1].run.request.shard_index(), 2);
  // Each run's request carries its own result key.
  EXPECT_EQ(now_runs[0].run.request.result_key(), std::string(32, 'a'));
  EXPECT_EQ(now_runs[1].run.request.result_key(), std::string(32, 'c'));
  EXPECT_EQ(now_runs[0].fire, nullptr);

  now_runs.clear();
  *fire.mutable_scheduled_time() = ToProto(now + absl::Milliseconds(300));
  planner_.Route(fire, result, now, &now_runs, &held);
  EXPECT_TRUE(now_runs.empty());
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].second, now + absl::Milliseconds(300));
  ASSERT_NE(held[0].first.fire, nullptr);
  EXPECT_EQ(held[0].first.fire, held[1].first.fire);  // One copy of the fire for its runs.
  EXPECT_EQ(held[0].first.fire->fire_id(), fire.fire_id());
}

}  // namespace
}  // namespace jobwheel::dispatcher
