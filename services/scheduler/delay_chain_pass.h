#ifndef JOBWHEEL_SERVICES_SCHEDULER_DELAY_CHAIN_PASS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_DELAY_CHAIN_PASS_H_

#include "absl/status/statusor.h"
#include "common/time/clock.h"
#include "services/scheduler/fire_store.h"
#include "services/scheduler/monitor_options.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {

// The delay-chain pass: a FIX_DELAY job whose fire (and retries) ended gets its next fire time,
// the last run's end plus its delay (FireStore::AdvanceDelayChains, up to `batch` jobs).
// Monitors runs it after each follow-up pass and, while any such job waits, every
// `delay_chain_interval` in between.
class DelayChainPass {
 public:
  DelayChainPass(const MonitorOptions& options, FireStore& store, Clock& clock,
                 SchedulerMetrics& metrics)
      : options_(options), store_(store), clock_(clock), metrics_(metrics) {}

  // A failure other than "not the leader" is also logged.
  absl::StatusOr<FireStore::DelayChainResult> Run();

 private:
  const MonitorOptions& options_;
  FireStore& store_;
  Clock& clock_;
  SchedulerMetrics& metrics_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_DELAY_CHAIN_PASS_H_
