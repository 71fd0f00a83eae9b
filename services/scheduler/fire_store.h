#ifndef JOBWHEEL_SERVICES_SCHEDULER_FIRE_STORE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FIRE_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/fire_plan.h"
#include "services/scheduler/followup_plan.h"

namespace jobwheel::scheduler {

// The leader's reads and writes of jobs, fires and runs: what FireEngine and Monitors need.
// Every operation is one transaction fenced by the schedule lock: it runs only while this
// replica leads (FAILED_PRECONDITION otherwise), and a write commits only in a transaction
// that proves leadership (see LeaderElector::RunFenced). Implementations are thread-safe.
class FireStore {
 public:
  virtual ~FireStore() = default;

  // Whether this replica leads (from memory; no query).
  virtual bool IsLeader() const = 0;

  // --- Claiming ---

  // Decides, inside the claim transaction, what to write for the jobs it locked. Returns a
  // plan that the caller owns and keeps alive until ClaimDueJobs returns.
  using ClaimPlanner = std::function<const ClaimPlan&(const std::vector<jobwheel::v1::Job>&)>;
  struct ClaimResult {
    // How many jobs were locked.
    int jobs = 0;
    // The PENDING fires the claim inserted (a fire already recorded, or a SKIPPED row, is not
    // here), each with its job and the fire's id, scheduled time and trigger type.
    std::vector<jobwheel::v1::Fire> fires;
  };
  // In one transaction: locks up to `limit` enabled jobs whose next fire time is at or before
  // `horizon`, earliest first, skipping jobs another transaction holds; asks `plan` for their
  // fires and next fire times; records the fires (a job's schedule-driven fire at a time
  // already recorded is not recorded again), with this term's epoch; and moves each job's
  // next fire time as planned.
  virtual absl::StatusOr<ClaimResult> ClaimDueJobs(absl::Time horizon, int limit,
                                                   const ClaimPlanner& plan) = 0;

  // --- Pending fires ---

  // Where a page of pending fires starts: after (scheduled, id).
  struct PendingCursor {
    absl::Time scheduled = absl::InfinitePast();
    int64_t id = 0;
  };
  struct PendingPage {
    // The page's fires whose job still exists, each with its job.
    std::vector<jobwheel::v1::Fire> fires;
    // How many rows the page read (fires of deleted jobs included).
    size_t rows = 0;
    // After the page's last row (unchanged when it read none).
    PendingCursor next;
  };
  // Decides, inside the transaction that reads them, what becomes of late pending fires
  // (PlanLateFires): it gets fires each with its job (at least the job's id and misfire
  // strategy) and returns a plan that the caller owns and keeps alive until the call returns.
  using LatePlanner = std::function<const LatePlan&(const std::vector<jobwheel::v1::Fire>&)>;
  // In one transaction: reads up to `limit` PENDING fires after `after`, ordered by
  // (scheduled time, id); `all_types`: every type, else only MANUAL, RETRY and PARENT fires due
  // within a second from the database's now. A fire whose job was deleted becomes FAILED
  // ("job was deleted before dispatch") in the same transaction. The page's fires go to `late`;
  // only when its plan is not empty (some were late) does the same transaction apply it: the
  // skipped rows become SKIPPED with their reason and leave the page, a fired-once row becomes a
  // MISFIRE fire (type and reason, in the page too).
  virtual absl::StatusOr<PendingPage> LoadPendingFires(const PendingCursor& after, bool all_types,
                                                       int limit, const LatePlanner& late) = 0;

  // Held fires whose hand-off came too late (an outage held them back). In one transaction:
  // locks the rows of `fire_ids` that are still PENDING (in id order, as a dispatcher does),
  // fails those whose job was deleted (as LoadPendingFires does), asks `late` about the others
  // and applies its plan as LoadPendingFires does. Returns the ids still PENDING afterwards:
  // the ones to hand off now (the fired-once ones among them). The rest are settled, or were
  // taken by a dispatcher or removed meanwhile.
  virtual absl::StatusOr<std::vector<int64_t>> SettleLateFires(const std::vector<int64_t>& fire_ids,
                                                               const LatePlanner& late) = 0;

  // --- Monitors ---

  // Given the finished runs it locked and the enabled jobs with a schedule of their own but no
  // next fire time (each with its schedule, create and update times), decides what follows.
  using FollowupPlanner = std::function<const FollowupPlan&(const std::vector<FinishedRun>&,
                                                            const std::vector<jobwheel::v1::Job>&)>;
  struct MonitorLimits {
    // Finished runs followed up per pass.
    int batch = 500;
    // A RUNNING run on an executor that the registry took offline (executors.offline_since)
    // at least this long ago by the database's clock becomes LOST, however recently it
    // started: the same process reconnecting within it keeps its runs.
    absl::Duration offline_grace = absl::Milliseconds(500);
    // A RUNNING run on an online executor whose current process registered (instance_since,
    // by the database's clock) more than a second after the run started, and at least this
    // long ago, becomes LOST: the new process has had this long to replay the results its
    // predecessor spooled.
    absl::Duration restart_grace = absl::Seconds(1);
    // A RUNNING run started before this on an executor that is not online, and that has no
    // offline_since (a row taken offline before the column existed, or no row), becomes LOST.
    absl::Time lost_started_before;
    // A RUNNING run on an online executor whose process (label jobwheel.process_start_us)
    // started more than a second after the run did, and before this, becomes LOST.
    absl::Time restarted_before;
    // A PENDING run triggered before this becomes FAILED (its trigger never completed).
    absl::Time pending_before;
  };
  // Why a run became LOST.
  enum class LostReason { kExecutorOffline, kExecutorRestarted };
  // A run the pass made LOST, and where it ran (ExecutorService.Kill goes there should the
  // executor come back).
  struct LostRun {
    int64_t run_id = 0;
    std::string app;
    std::string executor_address;
    LostReason reason = LostReason::kExecutorOffline;
    // For kExecutorOffline with a known offline_since: how long after the registry took the
    // executor offline the run became LOST (by the database's clock).
    std::optional<absl::Duration> after_offline;
  };
  struct MonitorResult {
    int64_t enabled_jobs = 0;
    // Rows written: retry fires, child fires, runs made LOST (offline or restarted executor),
    // PENDING runs made FAILED.
    int retries = 0;
    int children = 0;
    int lost = 0;
    int stale_pending = 0;
    // The runs made LOST (lost of them).
    std::vector<LostRun> lost_runs;
    // Alarms queued in the outbox (a key already there is not queued again); jobs stopped.
    int alarms_queued = 0;
    int stopped_jobs = 0;
  };
  // In one transaction: counts enabled jobs; locks up to `batch` finished runs not yet followed
  // up (oldest first, skipping locked ones) and asks `plan` what follows them; writes the retry
  // fires and the child fires (at most one per parent run and job; a child only in its
  // parent's app or child_scope) due now, marks the runs followed up (and, for FAILED,
  // TIMED_OUT and LOST, their alarm sent); locks up to `batch` enabled jobs of kind CRON or
  // FIX_RATE with no next fire time and no schedule_error (skipping locked ones) for the plan
  // too, and stops the planned ones (enabled = false, schedule_error set); queues the planned
  // alarms in the alarm outbox (ON CONFLICT on the key: nothing); and ends stale runs per
  // `limits`. Lost runs are ended first, per `limits`, so a run made LOST is followed up (its
  // retry fire written) by the same pass. It never sends an alarm (AlarmSender does).
  virtual absl::StatusOr<MonitorResult> RunMonitorPass(const MonitorLimits& limits,
                                                       const FollowupPlanner& plan) = 0;

  struct DelayChainResult {
    // FIX_DELAY jobs given their next fire time.
    int advanced = 0;
    // FIX_DELAY jobs still waiting for a fire or its runs.
    int waiting = 0;
  };
  // In one transaction: for up to `limit` enabled FIX_DELAY jobs waiting for a fire (skipping
  // locked ones) that is no longer PENDING, none of whose runs is open or not yet followed up
  // (so its retry, if any, has been written and is waited for instead), and with no open run
  // of the job at all: sets next_fire_at to the latest end time of that fire's runs (now when
  // it has none: skipped, or failed before any run) plus the job's delay, and ends the wait.
  virtual absl::StatusOr<DelayChainResult> AdvanceDelayChains(int limit) = 0;

  // In one transaction: deletes up to `limit` finished, followed-up runs triggered before
  // `cutoff` (except those of jobs with a max_age of their own), up to `limit` runs of jobs with
  // their own retention (Job.run_retention: older than their max_age by the database's clock,
  // or behind their keep_last newest runs) with their fires, and up to `limit` non-PENDING
  // fires created before `cutoff` that no run references.
  // Returns how many rows it deleted.
  virtual absl::StatusOr<int> DeleteHistory(absl::Time cutoff, int limit) = 0;

  // In one transaction: deletes up to `limit` audit events older than `cutoff` (the audit
  // trail's own retention). Returns how many.
  virtual absl::StatusOr<int> DeleteAuditHistory(absl::Time cutoff, int limit) = 0;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_FIRE_STORE_H_
