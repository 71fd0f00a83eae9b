#ifndef JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PASS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PASS_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/time/clock.h"
#include "services/scheduler/fire_store.h"
#include "services/scheduler/monitor_options.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {

// The follow-up pass: one fenced transaction (FireStore::RunMonitorPass) whose decisions are
// pure (followup_plan.h):
//  - lost runs (first, so the same pass writes their retries): RUNNING on an executor the
//    registry took offline at least `offline_grace` ago, however recently started (the same
//    process reconnecting within the grace keeps its runs), or on an executor whose current
//    process registered at least `restart_grace` ago, after the run started (it restarted)
//    → LOST; on an executor offline since an unknown time (no row, or no offline_since),
//    RUNNING longer than `lost_after` → LOST; PENDING (trigger never answered, e.g. its
//    dispatcher died) longer than `pending_timeout` → FAILED.
//  - follow-ups: a finished run that failed (FAILED, TIMED_OUT, LOST) with retries left gets a
//    RETRY fire; one with retries spent raises one alarm; a SUCCEEDED run triggers each child
//    job (PARENT fire) that is in the parent's app or in its child_scope (the apps the writer
//    of its child_job_ids may operate; see JobAdmin::CreateJob). Each run is followed up exactly
//    once (runs.followup_done, and a unique index on fires(parent_run_id, job_id)).
//  - alarms: queued in the outbox by the same transaction (one per key), never sent here
//    (AlarmSender sends them on its own thread): a run failed with retries spent, a LOST run,
//    a fire that found no executor, a job stopped because its schedule cannot be computed.
//  - stopped jobs: an enabled job whose stored schedule no longer parses is disabled with
//    its schedule_error set.
// The retry and child fires are picked up and dispatched by the FireEngine. The runs a pass
// made LOST go to the lost-runs listener (LostRunKiller tells their executors).
class FollowupPass {
 public:
  struct Counts {
    int retries = 0;
    int children = 0;
    int alarms = 0;  // Queued.
    int stopped_jobs = 0;
    int lost = 0;
    int stale_pending = 0;
    // The runs made LOST (lost of them).
    std::vector<FireStore::LostRun> lost_runs;
  };
  // Gets the runs a pass made LOST, on the pass's thread.
  using LostRunsListener = std::function<void(const std::vector<FireStore::LostRun>&)>;

  FollowupPass(const MonitorOptions& options, FireStore& store, Clock& clock,
               SchedulerMetrics& metrics)
      : options_(options), store_(store), clock_(clock), metrics_(metrics) {}

  // Before the first Run.
  void SetLostRunsListener(LostRunsListener listener) { lost_listener_ = std::move(listener); }

  absl::StatusOr<Counts> Run();

 private:
  FireStore::MonitorLimits LimitsAt(absl::Time now) const;
  // The pass's metrics and log lines.
  void Record(const FireStore::MonitorResult& result, const FollowupPlan& plan);

  const MonitorOptions& options_;
  FireStore& store_;
  Clock& clock_;
  SchedulerMetrics& metrics_;
  LostRunsListener lost_listener_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PASS_H_
