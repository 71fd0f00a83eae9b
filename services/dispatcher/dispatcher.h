#ifndef JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/work_pool.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/dispatcher_options.h"
#include "services/dispatcher/executor_clients.h"
#include "services/dispatcher/executor_directory.h"
#include "services/dispatcher/held_runs.h"
#include "services/dispatcher/outcome_writer.h"
#include "services/dispatcher/planner.h"
#include "services/dispatcher/result_ingestion.h"
#include "services/dispatcher/router.h"
#include "services/dispatcher/trigger_pools.h"
#include "services/dispatcher/trigger_resolver.h"
#include "services/dispatcher/trigger_sender.h"

namespace jobwheel::dispatcher {

// The dispatcher's core: turns fires into runs and ingests results, wiring its parts.
//
// Dispatch: one store transaction per batch locks the fires, plans the pending ones (Planner:
// routing over the app's live executors), writes runs and fire statuses, and commits; only
// then are the new runs sent (TriggerSender: one asynchronous RunBatch call per executor and
// trigger pool). Schedulers hand fires over a little ahead of their scheduled time (their
// --dispatch_lead): the runs of a fire not yet due are held (HeldRuns) and sent when it is
// due, never earlier, so neither the hand-off nor the commit delays them. A held run whose
// executor left meanwhile is routed again (its row moved first), or FAILED with the reason.
// Duplicated fires trigger nothing. Trigger answers are written back in batches
// (OutcomeWriter), STARTED/QUEUED ones held briefly for their result to carry them. A RunBatch
// call whose answer is lost (deadline, cut connection) does not fail its runs: the executor is
// asked what became of them (TriggerResolver: GetRuns with fence), and they are FAILED only
// when it fenced them, so no run executes twice.
//
// ReportResults: ResultIngestion.
//
// Requests must have passed ValidateDispatchRequest / ValidateReportResultsRequest (the
// service checks them). Thread-safe. Start() before use; Shutdown() (idempotent, joining)
// sends the held runs when due, waits for the calls in flight and writes their answers, held
// ones included.
class Dispatcher {
 public:
  using Options = DispatcherOptions;

  Dispatcher(DispatchStore& store, const ExecutorDirectory& directory, Router& router,
             ExecutorClients& executors, TriggerPools& pools, DispatcherMetrics& metrics,
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
  size_t pending_outcomes() const { return writer_.pending(); }
  // RunBatch calls whose lost answers are being settled with the executor.
  size_t unresolved_triggers() const { return resolver_.pending(); }
  // Of those, the ones held for trigger_write_delay.
  size_t held_outcomes() const { return writer_.held(); }
  // Runs recorded and waiting for their scheduled time to be triggered.
  size_t held_runs() const { return held_.size(); }

 private:
  // Held runs that came due: sent to their executors if still online; the others are
  // routed again off the timer's thread.
  void SendDue(std::vector<RoutedRun> due);
  // Held runs whose executor left the directory while they were held: routed again among the
  // app's live executors (the run row moved first), or FAILED with the reason when none fits.
  void RerouteHeld(std::vector<RoutedRun> orphans);

  DispatchStore& store_;
  const ExecutorDirectory& directory_;
  TriggerPools& pools_;
  DispatcherMetrics& metrics_;
  Clock& clock_;
  const Options options_;

  Planner planner_;
  OutcomeWriter writer_;
  TriggerResolver resolver_;
  TriggerSender sender_;
  ResultIngestion results_;
  // Re-routes held runs whose executor left (RerouteHeld), off the timer's thread.
  WorkPool reroute_pool_{1};
  HeldRuns held_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_
