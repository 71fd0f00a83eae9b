#ifndef JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_SENDER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_SENDER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/executor.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/executor_clients.h"
#include "services/dispatcher/routed_run.h"
#include "services/dispatcher/trigger_pools.h"
#include "services/dispatcher/trigger_resolver.h"

namespace jobwheel::dispatcher {

// Sends runs to their executors: one asynchronous ExecutorService.RunBatch call per (executor,
// trigger pool), split above max_runs_per_batch, each in one slot of its pool; no thread waits
// for an executor. Each run's answer (or the call's error: UNIMPLEMENTED, a refused
// connection...) becomes its TriggerOutcome, handed to `answers` (on the thread that completes
// the call), with its metric. A call whose answer is unknown (TriggerAnswerUnknown: a deadline,
// a cut connection; the executor may have started its runs) is handed to `resolver` instead,
// which asks the executor (metric outcome "unknown"); without a resolver such runs are FAILED
// too. Runs refused by shut-down pools are answered FAILED "not triggered". Thread-safe.
class TriggerSender {
 public:
  struct Options {
    absl::Duration run_deadline = absl::Seconds(3);  // Of each RunBatch call.
    size_t max_runs_per_batch = 256;                 // At most 1,000: the SDK's limit.
  };
  using AnswerSink = std::function<void(TriggerOutcome)>;

  // `resolver` (may be null) must outlive the calls in flight.
  TriggerSender(ExecutorClients& executors, TriggerPools& pools, DispatcherMetrics& metrics,
                Clock& clock, Options options, AnswerSink answers,
                TriggerResolver* resolver = nullptr);

  // Sends `runs` grouped by (executor, trigger pool) in the order the runs come; a group that
  // reaches max_runs_per_batch goes out at once, the rest at the end.
  void Send(std::vector<RoutedRun> runs);

 private:
  // Sends `runs` (one executor, all in `pool`) as one RunBatch call in one slot of `pool`.
  void SendBatch(const std::string& app, const std::string& address, TriggerPool pool,
                 std::vector<PendingRun> runs);
  // One run's answer (or call error) → its TriggerOutcome and metric.
  void Answer(const PendingRun& run, const absl::StatusOr<v1::RunResponse>& answer);

  ExecutorClients& executors_;
  TriggerPools& pools_;
  DispatcherMetrics& metrics_;
  Clock& clock_;
  const Options options_;
  const AnswerSink answers_;
  TriggerResolver* const resolver_;
};

// The run's new state from the executor's answer for it (one RunResponse of a RunBatch); *label is
// the metric's outcome (started, queued, discarded, rejected, error).
TriggerOutcome OutcomeOf(int64_t run_id, const absl::StatusOr<v1::RunResponse>& answer,
                         absl::Time at, std::string* label);

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_SENDER_H_
