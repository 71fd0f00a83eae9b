// What follows a finished run: retries (attempt and shard arithmetic), alarms, children.
#include "services/scheduler/followup_plan.h"

#include "absl/time/time.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler {
namespace {

FinishedRun Finished(jobwheel::v1::RunStatus status, int attempt, int retries) {
  FinishedRun r;
  r.run_id = 10;
  r.job_id = 3;
  r.status = status;
  r.attempt = attempt;
  r.fail_retry_count = retries;
  r.app = "demo";
  r.executor_address = "127.0.0.1:7200";
  r.trigger_time = absl::FromUnixSeconds(1699999200 + 59);
  r.job_name = "nightly";
  r.alarm_contacts = {"ops@example.com"};
  r.routing_strategy = jobwheel::v1::ROUTING_STRATEGY_ROUND;
  return r;
}

TEST(FollowupPlanTest, FailedWithRetriesLeftRetriesAtTheNextAttempt) {
  for (auto status : {jobwheel::v1::RUN_STATUS_FAILED, jobwheel::v1::RUN_STATUS_TIMED_OUT,
                      jobwheel::v1::RUN_STATUS_LOST}) {
    FinishedRun run = Finished(status, 1, 2);
    run.fire_param = "p";
    const FollowupPlan plan = PlanFollowups({run});
    ASSERT_EQ(plan.retries.size(), 1u) << status;
    EXPECT_EQ(plan.retries[0].job_id, 3);
    EXPECT_EQ(plan.retries[0].parent_run_id, 10);
    EXPECT_EQ(plan.retries[0].attempt, 2);
    EXPECT_EQ(plan.retries[0].param, "p");
    EXPECT_EQ(plan.retries[0].shard_index, 0);
    EXPECT_EQ(plan.retries[0].shard_total, 0);
    // Only a LOST run alarms while it still has retries.
    EXPECT_EQ(plan.alarms.size(), status == jobwheel::v1::RUN_STATUS_LOST ? 1u : 0u) << status;
    EXPECT_EQ(plan.done, std::vector<int64_t>{10});
  }
}

TEST(FollowupPlanTest, NoParamOverrideStaysNone) {
  const FollowupPlan plan = PlanFollowups({Finished(jobwheel::v1::RUN_STATUS_FAILED, 0, 1)});
  ASSERT_EQ(plan.retries.size(), 1u);
  EXPECT_FALSE(plan.retries[0].param.has_value());
}

TEST(FollowupPlanTest, ShardsRetryAsThatShardAlone) {
  FinishedRun broadcast = Finished(jobwheel::v1::RUN_STATUS_FAILED, 0, 1);
  broadcast.routing_strategy = jobwheel::v1::ROUTING_STRATEGY_SHARDING_BROADCAST;
  broadcast.shard_index = 2;
  broadcast.shard_total = 1;  // A broadcast to one executor is still a shard.
  FinishedRun manual = Finished(jobwheel::v1::RUN_STATUS_FAILED, 0, 1);
  manual.shard_index = 1;
  manual.shard_total = 4;
  FinishedRun single = Finished(jobwheel::v1::RUN_STATUS_FAILED, 0, 1);
  single.shard_index = 0;
  single.shard_total = 1;
  const FollowupPlan plan = PlanFollowups({broadcast, manual, single});
  ASSERT_EQ(plan.retries.size(), 3u);
  EXPECT_EQ(plan.retries[0].shard_index, 2);
  EXPECT_EQ(plan.retries[0].shard_total, 1);
  EXPECT_EQ(plan.retries[1].shard_index, 1);
  EXPECT_EQ(plan.retries[1].shard_total, 4);
  EXPECT_EQ(plan.retries[2].shard_index, 0);
  EXPECT_EQ(plan.retries[2].shard_total, 0);
}

TEST(FollowupPlanTest, RetriesSpentRaiseOneAlarm) {
  FinishedRun run = Finished(jobwheel::v1::RUN_STATUS_LOST, 2, 2);
  run.trigger_message = "triggered on 127.0.0.1:7200";
  const FollowupPlan plan = PlanFollowups({run});
  EXPECT_TRUE(plan.retries.empty());
  ASSERT_EQ(plan.alarms.size(), 1u);
  const AlarmEvent& e = plan.alarms[0];
  EXPECT_EQ(e.job_id, 3);
  EXPECT_EQ(e.run_id, 10);
  EXPECT_EQ(e.job_name, "nightly");
  EXPECT_EQ(e.app, "demo");
  EXPECT_EQ(e.status, "RUN_STATUS_LOST");
  EXPECT_EQ(e.kind, AlarmKind::kRunLost);
  EXPECT_EQ(e.key, "run_lost/10");
  EXPECT_EQ(e.message, "triggered on 127.0.0.1:7200");  // No result message: the trigger's.
  EXPECT_EQ(e.contacts, std::vector<std::string>{"ops@example.com"});
  run.result_message = "exit 1";
  EXPECT_EQ(PlanFollowups({run}).alarms[0].message, "exit 1");
}

TEST(FollowupPlanTest, FailedOrTimedOutWithRetriesSpentRaiseARunFailedAlarm) {
  for (auto status : {jobwheel::v1::RUN_STATUS_FAILED, jobwheel::v1::RUN_STATUS_TIMED_OUT}) {
    const FollowupPlan plan = PlanFollowups({Finished(status, 2, 2)});
    ASSERT_EQ(plan.alarms.size(), 1u) << status;
    EXPECT_EQ(plan.alarms[0].kind, AlarmKind::kRunFailed);
    EXPECT_EQ(plan.alarms[0].key, "run_failed/10");
  }
  // Retries left: no alarm yet.
  EXPECT_TRUE(PlanFollowups({Finished(jobwheel::v1::RUN_STATUS_FAILED, 0, 2)}).alarms.empty());
}

TEST(FollowupPlanTest, NoExecutorAlarmsOncePerJobAndWindowRetriesLeftOrNot) {
  FinishedRun first = Finished(jobwheel::v1::RUN_STATUS_FAILED, 0, 1);
  first.executor_address = "";
  first.trigger_message = "job 3: no executor online for app demo";
  FinishedRun later = first;  // Same hour, retries spent.
  later.run_id = 11;
  later.attempt = 1;
  later.trigger_time = first.trigger_time + absl::Minutes(30);
  FinishedRun next_hour = first;
  next_hour.run_id = 12;
  next_hour.trigger_time = first.trigger_time + absl::Hours(1);
  const FollowupPlan plan = PlanFollowups({first, later, next_hour});
  ASSERT_EQ(plan.alarms.size(), 3u);
  EXPECT_EQ(plan.retries.size(), 2u);  // first and next_hour still retry.
  for (const AlarmEvent& e : plan.alarms) EXPECT_EQ(e.kind, AlarmKind::kNoExecutor);
  EXPECT_EQ(plan.alarms[0].key, "no_executor/3/1699999200");
  EXPECT_EQ(plan.alarms[1].key, plan.alarms[0].key);  // One row in the outbox.
  EXPECT_EQ(plan.alarms[2].key, "no_executor/3/1700002800");
  EXPECT_EQ(plan.alarms[0].message, "job 3: no executor online for app demo");
}

TEST(FollowupPlanTest, AJobWhoseScheduleNoLongerParsesStopsWithAnAlarm) {
  jobwheel::v1::Job bad;
  bad.set_id(7);
  bad.set_name("broken");
  bad.set_app("demo");
  bad.set_enabled(true);
  bad.add_alarm_contacts("ops@example.com");
  bad.mutable_schedule()->mutable_cron()->set_expression("not a cron");
  *bad.mutable_update_time() = ToProto(absl::FromUnixMicros(1700000000000001));
  jobwheel::v1::Job ended = bad;  // Valid; simply has no next fire time: left alone.
  ended.set_id(8);
  ended.mutable_schedule()->mutable_cron()->set_expression("0 0 0 1 1 ? 2001");
  jobwheel::v1::Job scheduled = bad;  // Has a next fire time: not considered.
  scheduled.set_id(9);
  *scheduled.mutable_next_fire_time() = ToProto(absl::FromUnixSeconds(1800000000));
  FollowupPlan plan;
  PlanScheduleStops({bad, ended, scheduled}, plan);
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].job_id, 7);
  EXPECT_NE(plan.stops[0].error.find("cannot be computed"), std::string::npos);
  ASSERT_EQ(plan.alarms.size(), 1u);
  EXPECT_EQ(plan.alarms[0].kind, AlarmKind::kScheduleError);
  EXPECT_EQ(plan.alarms[0].key, "schedule_error/7/1700000000000001");
  EXPECT_EQ(plan.alarms[0].run_id, 0);
  EXPECT_EQ(plan.alarms[0].contacts, std::vector<std::string>{"ops@example.com"});
}

TEST(FollowupPlanTest, AlarmJsonCarriesKindAndKeyEscaped) {
  AlarmEvent e;
  e.kind = AlarmKind::kRunLost;
  e.key = "run_lost/5";
  e.job_id = 1;
  e.job_name = "a\"b";
  e.app = "demo";
  e.run_id = 5;
  e.status = "RUN_STATUS_LOST";
  e.message = "line\nbreak";
  e.contacts = {"x@y"};
  EXPECT_EQ(AlarmJson(e),
            "{\"kind\":\"run_lost\",\"key\":\"run_lost/5\",\"job_id\":1,\"job_name\":\"a\\\"b\","
            "\"app\":\"demo\",\"run_id\":5,\"status\":\"RUN_STATUS_LOST\","
            "\"message\":\"line\\nbreak\",\"contacts\":[\"x@y\"]}");
}

TEST(FollowupPlanTest, SucceededTriggersEachChild) {
  FinishedRun run = Finished(jobwheel::v1::RUN_STATUS_SUCCEEDED, 0, 0);
  run.child_job_ids = {5, 6};
  const FollowupPlan plan = PlanFollowups({run});
  ASSERT_EQ(plan.children.size(), 2u);
  EXPECT_EQ(plan.children[0].job_id, 5);
  EXPECT_EQ(plan.children[1].job_id, 6);
  EXPECT_EQ(plan.children[0].parent_run_id, 10);
  EXPECT_EQ(plan.children[0].parent_job_id, 3);
  EXPECT_TRUE(plan.retries.empty());
  EXPECT_TRUE(plan.alarms.empty());
}

TEST(FollowupPlanTest, KilledDiscardedAndDeletedAreOnlyMarkedDone) {
  FinishedRun killed = Finished(jobwheel::v1::RUN_STATUS_KILLED, 0, 3);
  killed.run_id = 1;
  FinishedRun discarded = Finished(jobwheel::v1::RUN_STATUS_DISCARDED, 0, 3);
  discarded.run_id = 2;
  FinishedRun deleted = Finished(jobwheel::v1::RUN_STATUS_FAILED, 0, 3);
  deleted.run_id = 3;
  deleted.job_deleted = true;
  FinishedRun deleted_parent = Finished(jobwheel::v1::RUN_STATUS_SUCCEEDED, 0, 0);
  deleted_parent.run_id = 4;
  deleted_parent.job_deleted = true;
  deleted_parent.child_job_ids = {9};
  const FollowupPlan plan = PlanFollowups({killed, discarded, deleted, deleted_parent});
  EXPECT_EQ(plan.done, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(plan.retries.empty());
  EXPECT_TRUE(plan.children.empty());
  EXPECT_TRUE(plan.alarms.empty());
}

TEST(FollowupPlanTest, RunFailedMeansFailedTimedOutOrLost) {
  EXPECT_TRUE(RunFailed(jobwheel::v1::RUN_STATUS_FAILED));
  EXPECT_TRUE(RunFailed(jobwheel::v1::RUN_STATUS_TIMED_OUT));
  EXPECT_TRUE(RunFailed(jobwheel::v1::RUN_STATUS_LOST));
  EXPECT_FALSE(RunFailed(jobwheel::v1::RUN_STATUS_KILLED));
  EXPECT_FALSE(RunFailed(jobwheel::v1::RUN_STATUS_DISCARDED));
  EXPECT_FALSE(RunFailed(jobwheel::v1::RUN_STATUS_SUCCEEDED));
}

}  // namespace
}  // namespace jobwheel::scheduler
