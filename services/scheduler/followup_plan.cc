#include "services/scheduler/followup_plan.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"
#include "services/scheduler/schedule.h"

namespace jobwheel::scheduler {
namespace {

AlarmEvent RunAlarm(const FinishedRun& r, AlarmKind kind) {
  AlarmEvent e;
  e.kind = kind;
  e.job_id = r.job_id;
  e.job_name = r.job_name;
  e.app = r.app;
  e.run_id = r.run_id;
  e.status = jobwheel::v1::RunStatus_Name(r.status);
  e.message = r.result_message.empty() ? r.trigger_message : r.result_message;
  e.contacts = r.alarm_contacts;
  if (kind == AlarmKind::kNoExecutor) {
    const absl::Time window =
        absl::UnixEpoch() + absl::Floor(r.trigger_time - absl::UnixEpoch(), kNoExecutorAlarmWindow);
    e.key = absl::StrCat(AlarmKindName(kind), "/", r.job_id, "/", absl::ToUnixSeconds(window));
  } else {
    e.key = absl::StrCat(AlarmKindName(kind), "/", r.run_id);
  }
  return e;
}

}  // namespace

bool RunFailed(jobwheel::v1::RunStatus status) {
  return status == jobwheel::v1::RUN_STATUS_FAILED ||
         status == jobwheel::v1::RUN_STATUS_TIMED_OUT || status == jobwheel::v1::RUN_STATUS_LOST;
}

FollowupPlan PlanFollowups(const std::vector<FinishedRun>& runs) {
  FollowupPlan plan;
  plan.done.reserve(runs.size());
  for (const FinishedRun& r : runs) {
    plan.done.push_back(r.run_id);
    if (r.job_deleted) continue;  // Nothing to follow up.
    const bool failed = RunFailed(r.status);
    const bool retry_left = failed && r.attempt < r.fail_retry_count;
    if (retry_left) {
      RetryFire retry;
      retry.job_id = r.job_id;
      retry.parent_run_id = r.run_id;
      retry.attempt = r.attempt + 1;
      // A broadcast shard retries as that shard alone; other runs keep their manual shard.
      const bool broadcast =
          r.routing_strategy == jobwheel::v1::ROUTING_STRATEGY_SHARDING_BROADCAST;
      const bool shard = broadcast || r.shard_total > 1;
      retry.shard_index = shard ? r.shard_index : 0;
      retry.shard_total = shard ? r.shard_total : 0;
      retry.param = r.fire_param;
      plan.retries.push_back(std::move(retry));
    }
    if (r.status == jobwheel::v1::RUN_STATUS_FAILED && r.executor_address.empty()) {
      plan.alarms.push_back(RunAlarm(r, AlarmKind::kNoExecutor));
    } else if (r.status == jobwheel::v1::RUN_STATUS_LOST) {
      plan.alarms.push_back(RunAlarm(r, AlarmKind::kRunLost));
    } else if (failed && !retry_left) {
      plan.alarms.push_back(RunAlarm(r, AlarmKind::kRunFailed));
    } else if (r.status == jobwheel::v1::RUN_STATUS_SUCCEEDED) {
      for (int64_t child : r.child_job_ids) {
        plan.children.push_back({child, r.run_id, r.job_id});
      }
    }
  }
  return plan;
}

void PlanScheduleStops(const std::vector<jobwheel::v1::Job>& jobs, FollowupPlan& plan) {
  for (const jobwheel::v1::Job& job : jobs) {
    if (!job.enabled() || job.has_next_fire_time()) continue;
    auto schedule = Schedule::FromProto(job.schedule(), FromProto(job.create_time()));
    if (schedule.ok()) continue;  // Valid (ended, or nothing to fire on its own).
    const std::string error =
        absl::StrCat("stored schedule cannot be computed: ", schedule.status().message());
    plan.stops.push_back({job.id(), error});
    AlarmEvent e;
    e.kind = AlarmKind::kScheduleError;
    e.key = absl::StrCat(AlarmKindName(e.kind), "/", job.id(), "/",
                         absl::ToUnixMicros(FromProto(job.update_time())));
    e.job_id = job.id();
    e.job_name = job.name();
    e.app = job.app();
    e.message = absl::StrCat("job stopped: ", error);
    e.contacts.assign(job.alarm_contacts().begin(), job.alarm_contacts().end());
    plan.alarms.push_back(std::move(e));
  }
}

}  // namespace jobwheel::scheduler
