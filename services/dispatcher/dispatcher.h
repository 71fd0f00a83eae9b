#ifndef JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
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
// commits; only then are the new runs triggered (Executor.Run) on the trigger pools. Trigger
// answers are written back in batches by a writer thread. Duplicated fires trigger nothing.
//
// ReportResults: validates and records terminal results idempotently. Retries and child jobs
// are not started here: the scheduler leader's monitors own them.
//
// Thread-safe. Start() before use; Shutdown() (idempotent, joining) drains the trigger pools
// and writes their answers.
class Dispatcher {
 public:
  struct Options {
    absl::Duration run_deadline = absl::Seconds(3);
    size_t max_fires_per_call = 1000;
    size_t max_results_per_call = 10000;
    // A longer result message is stored cut to this many bytes (at a UTF-8 boundary) with
    // " …(truncated)" appended, so one executor cannot fill the runs table.
    size_t max_result_message_bytes = 64 * 1024;
    size_t max_outcomes_per_write = 2000;
    absl::Duration write_retry = absl::Milliseconds(500);
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
  absl::StatusOr<v1::ReportResultsResponse> ReportResults(
      const v1::ReportResultsRequest& request, const AppScope& scope = std::nullopt);

  // Trigger answers received but not yet written (for tests and shutdown).
  size_t pending_outcomes() const;

 private:
  FirePlan Plan(const v1::Fire& fire);
  void Trigger(const v1::Fire& fire, const CreatedRun& run);
  void Enqueue(TriggerOutcome outcome);
  void WriterLoop();

  DispatchStore& store_;
  const ExecutorDirectory& directory_;
  Router& router_;
  ExecutorClients& executors_;
  TriggerPools& pools_;
  DispatcherMetrics* const metrics_;
  Clock& clock_;
  const Options options_;

  mutable absl::Mutex mu_;
  std::vector<TriggerOutcome> outcomes_ ABSL_GUARDED_BY(mu_);
  size_t writing_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_H_
