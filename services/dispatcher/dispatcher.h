#ifndef JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/work_pool.h"
#include "common/time/clock.h"
#include "common/time/timer_queue.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/executor_clients.h"
#include "services/dispatcher/executor_directory.h"
#include "services/dispatcher/router.h"
#include "services/dispatcher/trigger_pools.h"

namespace jobwheel::dispatcher {

// The dispatcher's core: turns fires into runs and ingests results.
//
// Dispatch: one store transaction per batch locks the fires, routes the pending ones over the
// app's live executors (ExecutorDirectory + Router), writes runs and fire statuses, and
// commits; only then are the new runs triggered on the trigger pools: one
// ExecutorService.RunBatch call per (executor, trigger pool), or Run calls to an executor that
// predates RunBatch. Schedulers hand fires over a little ahead of their scheduled time (their
// --dispatch_lead): the runs of a fire not yet due are held and triggered when it is due (never
// earlier), so neither the hand-off nor the commit delays them. Trigger answers are written back in
// batches by a writer thread. Duplicated fires trigger nothing. An answer that leaves the run open
// (STARTED, QUEUED) is held for trigger_write_delay first: most runs are short, and a result that
// comes meanwhile carries the answer into its own write (one UPDATE of the run instead of two).
// Failure answers are written at once.
//
// ReportResults: validates and records terminal results idempotently. Retries and child jobs
// are not started here: the scheduler leader's monitors own them.
//
// Thread-safe. Start() before use; Shutdown() (idempotent, joining) drains the trigger pools
// and writes their answers, held ones included.
class Dispatcher {
 public:
  struct Options {
    absl::Duration run_deadline = absl::Seconds(3);  // Of each Run or RunBatch call.
    // The runs of one Dispatch call go to the executors as one RunBatch call per (executor,
    // trigger pool), split above this many runs (at most 1,000: the SDK's limit).
    size_t max_runs_per_batch = 256;
    // An executor that answers RunBatch with UNIMPLEMENTED (an older SDK) gets one Run call
    // per run for this long before RunBatch is tried on it again.
    absl::Duration legacy_executor_ttl = absl::Minutes(10);
    size_t max_fires_per_call = 1000;
    size_t max_results_per_call = 10000;
    // A longer result message is stored cut to this many bytes (at a UTF-8 boundary) with
    // " …(truncated)" appended, so one executor cannot fill the runs table.
    size_t max_result_message_bytes = 64 * 1024;
    size_t max_outcomes_per_write = 2000;
    absl::Duration write_retry = absl::Milliseconds(500);
    // How long a STARTED/QUEUED answer waits (after its arrival, on `clock`) for its run's
    // result to carry it; zero or less: written at once. The run shows PENDING meanwhile.
    absl::Duration trigger_write_delay = absl::Milliseconds(250);
    // Runs of a fire scheduled later than now are held and triggered at its scheduled time,
    // never earlier. A Dispatch with a fire further ahead than this is refused
    // (FAILED_PRECONDITION; the scheduler retries): clocks apart, or a lead above the hold.
    absl::Duration max_trigger_hold = absl::Seconds(2);
    // Held runs are triggered on multiples of this (a fire's scheduled time rounded up): the
    // runs of fires a few milliseconds apart share one RunBatch call instead of one call
    // each (at 5,000 fires/s spread over the second: p99 lateness 27 ms with 2 ms ticks,
    // 9 ms with 5 ms, the executors being less busy). Whole seconds (cron) are exact.
    absl::Duration trigger_tick = absl::Milliseconds(5);
  };

  Dispatcher(DispatchStore& store, const ExecutorDirectory& directory, Router& router,
             ExecutorClients& executors, TriggerPools& pools, DispatcherMetrics* metrics,
             Clock& clock, Options options);
  ~Dispatcher();

  void Start();
  void Shutdown();

  absl::StatusOr<v1::DispatchResponse> Dispatch(const v1::DispatchRequest& request);
  // `scope`: the apps the reporting executor's token covers (nullopt: every app). Results for
  // runs of other apps are neither recorded nor acknowledged.
  absl::StatusOr<v1::ReportResultsResponse> ReportResults(const v1::ReportResultsRequest& request,
                                                          const AppScope& scope = std::nullopt);

  // Trigger answers received but not yet written, held ones included (for tests and shutdown).
  size_t pending_outcomes() const;
  // Of those, the ones held for trigger_write_delay.
  size_t held_outcomes() const;
  // Runs recorded and waiting for their scheduled time to be triggered.
  size_t held_runs() const;
  // Makes the writer and the trigger timer look at the clock again now. Only needed with a
  // clock that jumps (tests' FakeClock): on a real clock they wake by themselves when a held
  // answer or run becomes due.
  void WakeWriter();

 private:
  FirePlan Plan(const v1::Fire& fire);
  // A created run to trigger: its request, and its routing strategy's metric label.
  struct PendingRun {
    v1::RunRequest request;
    std::string strategy;
  };
  static PendingRun MakePendingRun(const v1::Fire& fire, const CreatedRun& run);
  // A created run and where it goes: triggered at once, or held for its fire's time.
  struct RoutedRun {
    std::string address;
    TriggerPool pool;
    PendingRun run;
    // Held runs only: to route it again should its executor leave.
    std::shared_ptr<const v1::Fire> fire;
  };

  // Sends `runs` (one executor, all in `pool`) as one RunBatch call in one slot of `pool`;
  // to an executor without RunBatch, as one Run call per run in that slot.
  void TriggerBatch(const std::string& address, TriggerPool pool, std::vector<PendingRun> runs);
  // One Run call per run, all at once; `done` after the last answer.
  void TriggerEach(const std::string& address, std::shared_ptr<const std::vector<PendingRun>> runs,
                   std::function<void()> done);
  // One run's answer (or call error) → its TriggerOutcome and metric.
  void Answer(const PendingRun& run, const absl::StatusOr<v1::RunResponse>& answer);
  bool IsLegacy(const std::string& address);
  void MarkLegacy(const std::string& address);
  void Enqueue(TriggerOutcome outcome);
  // Holds a RUNNING answer (unless holding is off, the writer is stopping, or the run already
  // has one held), else queues it for the next write.
  void HoldOrQueueLocked(TriggerOutcome outcome) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves held answers due by `now` (all of them when stopping) to outcomes_.
  void ReleaseDueLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the held answers of these runs out, for their result write to carry them.
  std::vector<TriggerOutcome> TakeHeld(const std::vector<v1::RunResult>& results);
  // Ends a TakeHeld of `taken` answers: `put_back`, the ones the write did not carry, are held
  // (or written) again.
  void EndFold(size_t taken, std::vector<TriggerOutcome> put_back);
  void WriterLoop();
  // When the runs of `fire` are to be triggered (see Options::max_trigger_hold).
  absl::Time TriggerTime(const v1::Fire& fire, absl::Time now) const;
  // Sends `runs` as RunBatch calls: one per (executor, trigger pool), split at
  // max_runs_per_batch.
  void TriggerGrouped(std::vector<RoutedRun> runs);
  // Holds runs until their time (the trigger thread sends them); after Shutdown, fails them.
  void Hold(std::vector<std::pair<RoutedRun, absl::Time>> runs, absl::Time now);
  // Triggers held runs as they come due; at shutdown, the rest when due (all of them after
  // max_trigger_hold + 1s of real time).
  void HeldTriggerLoop();
  // Held runs whose executor left the directory while they were held: routed again among the
  // app's live executors (the run row moved first), or FAILED with the reason when none fits.
  void RerouteHeld(std::vector<RoutedRun> orphans);

  DispatchStore& store_;
  const ExecutorDirectory& directory_;
  Router& router_;
  ExecutorClients& executors_;
  TriggerPools& pools_;
  DispatcherMetrics* const metrics_;
  Clock& clock_;
  const Options options_;

  // Executors that answered RunBatch with UNIMPLEMENTED: until when they get Run calls.
  absl::Mutex legacy_mu_;
  absl::flat_hash_map<std::string, absl::Time> legacy_until_ ABSL_GUARDED_BY(legacy_mu_);

  mutable absl::Mutex mu_;
  std::vector<TriggerOutcome> outcomes_ ABSL_GUARDED_BY(mu_);  // To write now, in order.
  size_t writing_ ABSL_GUARDED_BY(mu_) = 0;
  // Held answers by due time (arrival + trigger_write_delay), and by run id.
  using Held = std::multimap<absl::Time, TriggerOutcome>;
  Held held_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, Held::iterator> held_by_run_ ABSL_GUARDED_BY(mu_);
  // Answers taken by ReportResults calls still writing them; the writer outlives them.
  size_t folding_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t wakes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;

  // Runs held for their scheduled time, by run id; the timer orders them.
  TimerQueue trigger_timer_;
  mutable absl::Mutex held_runs_mu_;
  absl::flat_hash_map<int64_t, RoutedRun> held_runs_ ABSL_GUARDED_BY(held_runs_mu_);
  bool triggers_stopping_ ABSL_GUARDED_BY(held_runs_mu_) = false;
  std::thread trigger_thread_;
  // Re-routes held runs whose executor left (RerouteHeld), off the trigger thread.
  WorkPool reroute_pool_{1};
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_
