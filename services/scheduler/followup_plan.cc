#include "services/scheduler/followup_plan.h"

namespace jobwheel::scheduler {

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
    if (failed && r.attempt < r.fail_retry_count) {
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
    } else if (failed) {
      AlarmEvent e;
      e.job_id = r.job_id;
      e.job_name = r.job_name;
      e.app = r.app;
      e.run_id = r.run_id;
      e.status = jobwheel::v1::RunStatus_Name(r.status);
      e.message = r.result_message.empty() ? r.trigger_message : r.result_message;
      e.contacts = r.alarm_contacts;
      plan.alarms.push_back(std::move(e));
    } else if (r.status == jobwheel::v1::RUN_STATUS_SUCCEEDED) {
      for (int64_t child : r.child_job_ids) {
        plan.children.push_back({child, r.run_id, r.job_id});
      }
    }
  }
  return plan;
}

}  // namespace jobwheel::scheduler
