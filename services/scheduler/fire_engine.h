#ifndef JOBWHEEL_SERVICES_SCHEDULER_FIRE_ENGINE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FIRE_ENGINE_H_

#include <atomic>
#include <deque>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "common/time/timer_queue.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "services/scheduler/admission_pacer.h"
#include "services/scheduler/dispatch_client.h"
#include "services/scheduler/fire_plan.h"
#include "services/scheduler/fire_store.h"
#include "services/scheduler/misfire_coverage.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {

// The leader's firing loop. While this replica leads, it
//  1. claims jobs due within `preread_window`: in one fenced transaction it writes their fire
//     rows (unique per job and scheduled time) and advances next_fire_at;
//  2. holds the fires in a millisecond timer and hands them to a dispatcher in batches
//     `dispatch_lead` before they are due (whatever is ready when a dispatch thread is free
//     goes in one batch, so batches grow with the load). The dispatcher records the runs at
//     once and triggers them on the executors at the scheduled time, so the database commit
//     and this hand-off are not between a fire's time and its start. The dispatcher locks each fire
//     row and creates runs only for a PENDING one, so a fire an edit, pause or delete removed never
//     runs (it answers not_found, and the entry is dropped); a replica that is not the leader sends
//     nothing, and should a deposed leader still send a fire, the row lock dispatches it at most
//     once;
//  3. picks up PENDING fires it does not hold: all of them on takeover, and manual, retry and
//     child fires written by the admin API or the monitors.
// Under load the claim is paced by the hand-off (AdmissionPacer: a rate measured from how late the
// hand-offs come, not a fixed lead): it holds at most that rate's worth of fires and leaves the
// other due jobs for later. What is late then depends on whether the backlog shrinks:
//  - shrinking (after an outage: a database failover, a dispatcher unreachable; the hand-off
//    absorbs more than is offered): nothing is shed. The ready fires go oldest first, the jobs
//    left for later are claimed most behind first, and a fire is a misfire only once it is more
//    than misfire_threshold late — the threshold's promise ("a fire up to this late still
//    fires") holds for any backlog the capacity drains within it. Memory: the held fires stay
//    within the admission budget (rate × window) plus what a takeover loads; the jobs left for
//    later cost nothing until claimed.
//  - not shrinking (overload: more offered than the hand-off absorbs, AdmissionPacer::Shedding):
//    the late fires would reach the threshold anyway and make every fire behind them late, so
//    the claim sheds the due times it finds already past through each job's misfire strategy
//    (one row per job and range, fire_plan.h), the newest hand-offs go first, and held fires more
//    than shed_late_after late are shed oldest first: the capacity fires on time and no fire is
//    claimed only to be settled late.
// Misfires (more than `misfire_threshold` late) follow the job's strategy (fire_plan.h has
// the arithmetic): due times found late by the claim, pending fires found late when loaded
// (an old leader's, on takeover), and held fires whose hand-off comes late (an outage held
// them back). Fires on time pay nothing for the last two: no extra statement. A FIRE_ONCE_NOW job
// fires once per outage whichever plan sees its missed times first (MisfireCoverage keeps the
// ledger). Reads and writes go
// through a FireStore, each fenced by the schedule lock; leadership comes from LeaderElector:
// OnElected/OnDeposed must be wired to its callbacks. Time comes from `clock`: the loops wait on
// it, so a simulated clock drives them in tests.
class FireEngine {
 public:
  struct Options {
    absl::Duration preread_window = absl::Seconds(5);
    // A claimed job gets its fires up to preread_window + claim_ahead recorded, so a job
    // that fires every second is claimed (its row rewritten) once per claim_ahead, not once
    // per fire.
    absl::Duration claim_ahead = absl::Seconds(5);
    absl::Duration misfire_threshold = absl::Seconds(5);
    absl::Duration claim_interval = absl::Milliseconds(200);
    int claim_batch = 2000;
    // Pending fires read per page when loading them (takeover, manual/retry/child pick-up).
    int load_batch = 20000;
    int dispatch_batch = 500;
    // How long before its scheduled time a fire is handed to a dispatcher (which holds its
    // runs until then). Zero: at the scheduled time, as dispatchers before this existed did.
    absl::Duration dispatch_lead = absl::Milliseconds(300);
    // Hand-offs happen on multiples of this (a fire goes between dispatch_lead and
    // dispatch_lead + handoff_interval ahead): one batch carries this long's fires instead of
    // the few due in each millisecond.
    absl::Duration handoff_interval = absl::Milliseconds(100);
    int dispatch_threads = 4;
    // Admission under load: the claim holds at most what the hand-off absorbs (its window is
    // set to preread_window + claim_ahead).
    AdmissionPacer::Options admission;
    // While shedding (AdmissionPacer::Shedding: overload, the backlog does not shrink), a held
    // schedule-driven fire more than this past its scheduled time is shed through its job's
    // misfire strategy instead of handed off late, the newest hand-offs go first (what can still
    // be on time before what cannot), and the stale ones are settled by one thread at a time, up
    // to settle_batch per transaction. Not shedding, the threshold is misfire_threshold.
    absl::Duration shed_late_after = absl::Seconds(1);
    int settle_batch = 5000;
  };

  FireEngine(Options options, FireStore& store, DispatchClient& dispatcher, Clock& clock,
             SchedulerMetrics& metrics);
  ~FireEngine();

  void Start();
  void Shutdown();

  void OnElected(int64_t epoch);
  void OnDeposed();

  // One claim pass; returns how many jobs it claimed (exposed for tests).
  absl::StatusOr<int> ClaimOnce();
  // Loads PENDING fires not yet held, page by page; `all_types` on takeover, else
  // manual/retry/child only. Fires more than misfire_threshold late follow their job's misfire
  // strategy in the same transaction (skipped, or one fired once). Returns how many it added.
  absl::StatusOr<int> LoadPending(bool all_types);
  size_t held() const;
  // Whether this replica leads and the engine took over (after OnElected).
  bool active() const;

 private:
  void ClaimLoop();
  void HandOffLoop();
  void DispatchLoop();
  // Hands the batch off; fires more than `late_after` past their time are settled first.
  void DispatchBatch(std::vector<int64_t> ids, absl::Duration late_after);
  // Takes the next batch off ready_ (non-empty); `*stale`: it is the shedding's stale front.
  std::vector<int64_t> TakeReadyLocked(absl::Time now, bool* stale)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the front of ready_ is past the shed threshold at `now`.
  bool FrontIsStaleLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The late ones of a batch about to be handed off at `now`: settled by the store per their
  // jobs' misfire strategies; the fires still to hand off are moved into `request`. On a store
  // error they are put back with a backoff.
  void SettleLate(const std::vector<int64_t>& late, absl::Time now, absl::Duration late_after,
                  jobwheel::v1::DispatchRequest& request);
  // Jobs with a MISFIRE fire held and not yet handed off are covered: their fire-once is on
  // its way (an outage longer than the threshold judges each newly late batch again).
  void CoverHeldMisfires(MisfireCoverage::Ledger& ledger, absl::Time now);
  // The claim's admission at `now` (window.max_pending_fires, window.shed_past_due).
  void Admit(absl::Time now, ClaimWindow& window);
  // The claim stopped at the admission budget at `now`.
  void HeldBack(absl::Time now);
  void Hold(jobwheel::v1::Fire fire);
  // When a fire scheduled at `scheduled` goes to the dispatcher.
  absl::Time HandOffAt(absl::Time scheduled) const;
  // Puts held fires back on the timer with a per-fire backoff (they stay PENDING).
  void Requeue(const std::vector<int64_t>& ids);
  bool stopping() const;

  const Options options_;
  FireStore& store_;
  DispatchClient& dispatcher_;
  Clock& clock_;
  SchedulerMetrics& metrics_;

  TimerQueue timer_;
  // Late fires are judged one plan at a time (a load's page, a settle or a claim). Its lock is
  // taken before mu_.
  MisfireCoverage coverage_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool active_ ABSL_GUARDED_BY(mu_) = false;
  // The epoch whose takeover load of all pending fires failed (0: none); the claim loop
  // retries it.
  int64_t load_due_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int64_t, jobwheel::v1::Fire> fires_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, int> retries_ ABSL_GUARDED_BY(mu_);
  AdmissionPacer pacer_ ABSL_GUARDED_BY(mu_);
  // A dispatch thread is settling the stale front of ready_ (one at a time).
  bool settling_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::vector<int64_t>> ready_ ABSL_GUARDED_BY(mu_);

  std::vector<std::thread> threads_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_FIRE_ENGINE_H_
