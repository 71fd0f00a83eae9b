#ifndef JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_SENDER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_SENDER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/executor.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/executor_clients.h"
#include "services/dispatcher/routed_run.h"
#include "services/dispatcher/trigger_pools.h"

namespace jobwheel::dispatcher {

// Sends runs to their executors: one asynchronous ExecutorService.RunBatch call per (executor,
// trigger pool), split above max_runs_per_batch, each in one slot of its pool; no thread waits
// for an executor. An executor that answers RunBatch with UNIMPLEMENTED (an SDK that predates
// it) gets the same runs as one Run call each, and Run calls only for legacy_executor_ttl.
// Each run's answer (or the call's error) becomes its TriggerOutcome, handed to `answers` (on
// the thread that completes the call), with its metric. Runs refused by shut-down pools are
// answered FAILED "not triggered". Thread-safe.
class TriggerSender {
 public:
  struct Options {
    absl::Duration run_deadline = absl::Seconds(3);  // Of each Run or RunBatch call.
    size_t max_runs_per_batch = 256;                 // At most 1,000: the SDK's limit.
    absl::Duration legacy_executor_ttl = absl::Minutes(10);
  };
  using AnswerSink = std::function<void(TriggerOutcome)>;

  TriggerSender(ExecutorClients& executors, TriggerPools& pools, DispatcherMetrics* metrics,
                Clock& clock, Options options, AnswerSink answers);

  // Sends `runs` grouped by (executor, trigger pool) in the order the runs come; a group that
  // reaches max_runs_per_batch goes out at once, the rest at the end.
  void Send(std::vector<RoutedRun> runs);

 private:
  // Sends `runs` (one executor, all in `pool`) as one RunBatch call in one slot of `pool`; to
  // an executor without RunBatch, as one Run call per run in that slot.
  void SendBatch(const std::string& address, TriggerPool pool, std::vector<PendingRun> runs);
  // One Run call per run, all at once; `done` after the last answer.
  void SendEach(const std::string& address, std::shared_ptr<const std::vector<PendingRun>> runs,
                std::function<void()> done);
  // One run's answer (or call error) → its TriggerOutcome and metric.
  void Answer(const PendingRun& run, const absl::StatusOr<v1::RunResponse>& answer);
  bool IsLegacy(const std::string& address);
  void MarkLegacy(const std::string& address);

  ExecutorClients& executors_;
  TriggerPools& pools_;
  DispatcherMetrics* const metrics_;
  Clock& clock_;
  const Options options_;
  const AnswerSink answers_;

  // Executors that answered RunBatch with UNIMPLEMENTED: until when they get Run calls.
  absl::Mutex legacy_mu_;
  absl::flat_hash_map<std::string, absl::Time> legacy_until_ ABSL_GUARDED_BY(legacy_mu_);
};

// The run's new state from the executor's answer to Run; *label is the metric's outcome
// (started, queued, discarded, rejected, error).
TriggerOutcome OutcomeOf(int64_t run_id, const absl::StatusOr<v1::RunResponse>& answer,
                         absl::Time at, std::string* label);

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_SENDER_H_
