#include "services/scheduler/followup_pass.h"

#include <vector>

#include "services/scheduler/followup_plan.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

FireStore::MonitorLimits FollowupPass::LimitsAt(absl::Time now) const {
  FireStore::MonitorLimits limits;
  limits.batch = options_.batch;
  limits.lost_started_before = now - options_.lost_after;
  limits.restarted_before = now - options_.restart_grace;
  limits.offline_grace = options_.offline_grace;
  limits.restart_grace = options_.restart_grace;
  limits.pending_before = now - options_.pending_timeout;
  return limits;
}

absl::StatusOr<FollowupPass::Counts> FollowupPass::Run() {
  const FireStore::MonitorLimits limits = LimitsAt(clock_.Now());
  // The decision is pure (followup_plan.h); the store makes it inside the monitors'
  // transaction, on the runs it locked.
  FollowupPlan plan;
  const absl::Time start = clock_.Now();
  absl::StatusOr<FireStore::MonitorResult> result = store_.RunMonitorPass(
      limits,
      [&](const std::vector<FinishedRun>& runs,
          const std::vector<jobwheel::v1::Job>& unscheduled) -> const FollowupPlan& {
        plan = PlanFollowups(runs);
        PlanScheduleStops(unscheduled, plan);
        return plan;
      });
  metrics_.DbQuery("monitors", clock_.Now() - start, result.ok());
  if (!result.ok()) return result.status();
  Record(*result, plan);
  if (!result->lost_runs.empty() && lost_listener_) lost_listener_(result->lost_runs);
  Counts counts;
  counts.retries = result->retries;
  counts.children = result->children;
  counts.alarms = result->alarms_queued;
  counts.stopped_jobs = result->stopped_jobs;
  counts.lost = result->lost;
  counts.stale_pending = result->stale_pending;
  counts.lost_runs = std::move(result->lost_runs);
  return counts;
}

void FollowupPass::Record(const FireStore::MonitorResult& result, const FollowupPlan& plan) {
  metrics_.jobs.Set(static_cast<double>(result.enabled_jobs));
  metrics_.retries.Increment(result.retries);
  metrics_.child_fires.Increment(result.children);
  metrics_.lost_runs.Increment(result.lost + result.stale_pending);
  int offline = 0, restarted = 0;
  for (const FireStore::LostRun& run : result.lost_runs) {
    const bool was_offline = run.reason == FireStore::LostReason::kExecutorOffline;
    ++(was_offline ? offline : restarted);
    if (run.after_offline) metrics_.OfflineToLost(*run.after_offline);
    spdlog::warn("run {} LOST: executor {}/{} {}", run.run_id, run.app, run.executor_address,
                 was_offline ? "went offline" : "restarted");
  }
  if (offline > 0) metrics_.RunsLost("executor_offline", offline);
  if (restarted > 0) metrics_.RunsLost("executor_restarted", restarted);
  if (result.stale_pending > 0) metrics_.RunsLost("trigger_never_completed", result.stale_pending);
  metrics_.alarms_queued.Increment(result.alarms_queued);
  for (const ScheduleStop& stop : plan.stops) {
    spdlog::error("job {} stopped: {}", stop.job_id, stop.error);
  }
}

}  // namespace jobwheel::scheduler
