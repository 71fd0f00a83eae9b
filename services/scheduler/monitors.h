#ifndef JOBWHEEL_SERVICES_SCHEDULER_MONITORS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_MONITORS_H_

#include <cstdint>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "services/scheduler/fire_store.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {

// The leader's monitors, each a fenced transaction (FireStore; what follows a run is decided by
// followup_plan.h):
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
//  - lost runs (first, so the same pass writes their retries): RUNNING on an executor the
//    registry took offline at least `offline_grace` ago, however recently started (the same
//    process reconnecting within the grace keeps its runs), or on an executor whose current
//    process registered at least `restart_grace` ago, after the run started (it restarted)
//    → LOST; on an executor offline since an unknown time (no row, or no offline_since),
//    RUNNING longer than `lost_after` → LOST; PENDING (trigger never answered, e.g. its
//    dispatcher died) longer than `pending_timeout` → FAILED.
//  - delay chains: a FIX_DELAY job whose fire (and retries) ended gets its next fire time, the
//    last run's end plus its delay (FireStore::AdvanceDelayChains), after each pass and, while
//    any such job waits, every `delay_chain_interval` in between.
//  - retention: fires and runs older than `retention`, and audit events older than
//    `audit_retention`, are deleted in small batches.
// The retry and child fires are picked up and dispatched by the FireEngine. The loop runs a
// pass every `interval` (the safety net) and, after OnExecutorChanged (the registry announced
// an executor going offline or registering), once the offline grace and once the restart grace
// have passed, so runs become LOST as soon as the rules allow. The runs each pass made LOST go
// to the lost-runs listener (LostRunKiller tells their executors). Time comes from `clock`;
// the loop waits on it.
class Monitors {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(1);
    // For executors offline since an unknown time.
    absl::Duration lost_after = absl::Minutes(10);
    absl::Duration pending_timeout = absl::Seconds(60);
    // How long an executor the registry took offline has to reconnect (the same process)
    // before its runs become LOST.
    absl::Duration offline_grace = absl::Milliseconds(500);
    // How long a restarted executor has to replay its spooled results before its
    // predecessor's unfinished runs become LOST.
    absl::Duration restart_grace = absl::Seconds(1);
    // Added to each grace before a woken pass: the database's clock, which dates the registry's
    // change, may run a little ahead of ours.
    absl::Duration wake_margin = absl::Milliseconds(50);
    absl::Duration retention = absl::Hours(24 * 30);
    // The audit trail's own retention.
    absl::Duration audit_retention = absl::Hours(24 * 365);
    absl::Duration retention_interval = absl::Minutes(10);
    // How often waiting FIX_DELAY jobs are looked at between passes (only while some wait).
    absl::Duration delay_chain_interval = absl::Milliseconds(100);
    int batch = 500;
  };
  struct Counts {
    int retries = 0;
    int children = 0;
    int alarms = 0;  // Queued.
    int stopped_jobs = 0;
    int lost = 0;
    int stale_pending = 0;
    int deleted = 0;
    // FIX_DELAY jobs given their next fire time, and those still waiting.
    int delay_chains_advanced = 0;
    int delay_chains_waiting = 0;
    // The runs made LOST (lost of them).
    std::vector<FireStore::LostRun> lost_runs;
  };

  // Gets the runs a pass made LOST, on the pass's thread.
  using LostRunsListener = std::function<void(const std::vector<FireStore::LostRun>&)>;

  Monitors(Options options, FireStore& store, Clock& clock, SchedulerMetrics& metrics);
  ~Monitors();

  // Before Start.
  void SetLostRunsListener(LostRunsListener listener) { lost_listener_ = std::move(listener); }
  // The registry announced a change of an executor row: passes follow once the offline grace
  // and once the restart grace have passed (plus the margin).
  void OnExecutorChanged();

  void Start();
  void Shutdown();

  // One pass of follow-ups and lost-run detection (tests call it directly).
  absl::StatusOr<Counts> RunOnce();
  // One delay-chain pass alone (the loop runs it between passes while FIX_DELAY jobs wait).
  absl::StatusOr<FireStore::DelayChainResult> AdvanceDelayChains();
  // One retention pass.
  absl::StatusOr<int> Retain();

 private:
  void Loop();
  // Waits until `until` or the earliest wake-up, whichever is first; false when stopping.
  // `woken`: a wake-up came due.
  bool WaitForPass(absl::Time until, bool* woken);

  const Options options_;
  FireStore& store_;
  Clock& clock_;
  SchedulerMetrics& metrics_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Times woken passes are due, and how often the set gained one (wakes a waiting loop).
  std::set<absl::Time> wakes_ ABSL_GUARDED_BY(mu_);
  int64_t wake_version_ ABSL_GUARDED_BY(mu_) = 0;
  LostRunsListener lost_listener_;
  std::thread thread_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_MONITORS_H_
