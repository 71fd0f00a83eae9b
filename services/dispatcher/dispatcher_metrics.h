#ifndef JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_METRICS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_METRICS_H_

#include <algorithm>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "jobwheel/v1/types.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace jobwheel::dispatcher {

// The dispatcher's metrics (docs/metrics.md, "Dispatcher"), registered on an injected registry.
// prometheus-cpp metrics are thread-safe.
class DispatcherMetrics {
 public:
  explicit DispatcherMetrics(prometheus::Registry& registry);

  // outcome: dispatched, failed, duplicate.
  void Fire(absl::string_view outcome) {
    fires_.Add({{"outcome", std::string(outcome)}}).Increment();
  }
  // outcome: started, queued, discarded, rejected, error.
  void Triggered(absl::string_view strategy, absl::string_view outcome) {
    triggered_.Add({{"strategy", std::string(strategy)}, {"outcome", std::string(outcome)}})
        .Increment();
  }
  void TriggerLatency(absl::string_view pool, absl::Duration d) {
    trigger_latency_.Add({{"pool", std::string(pool)}}, LatencyBuckets())
        .Observe(absl::ToDoubleSeconds(d));
  }
  // Runs per trigger call (one RunBatch call, or the Run calls standing in for it).
  void TriggerBatchSize(size_t runs) { trigger_batch_size_.Observe(static_cast<double>(runs)); }
  // The calls waiting for room in `pool` and the runs they carry.
  void PoolDepth(absl::string_view pool, size_t calls, size_t runs) {
    pool_depth_.Add({{"pool", std::string(pool)}}).Set(static_cast<double>(calls));
    pool_waiting_runs_.Add({{"pool", std::string(pool)}}).Set(static_cast<double>(runs));
  }
  void RunFinished(v1::RunStatus status);
  // outcome: recorded, duplicate, late, refused.
  void Result(absl::string_view outcome) {
    results_.Add({{"outcome", std::string(outcome)}}).Increment();
  }
  // A refused result (also counted as Result("refused")); reason: bad_key, no_run, forbidden.
  void ResultRefused(absl::string_view reason) {
    Result("refused");
    refused_.Add({{"reason", std::string(reason)}}).Increment();
  }
  // Runs of RunBatch calls whose answer was lost, by how GetRuns settled them (fenced,
  // queued, running, ended, refused; unknown: the executor could not be asked).
  void LostTriggersSettled(absl::string_view presence, size_t runs) {
    lost_triggers_.Add({{"presence", std::string(presence)}}).Increment(static_cast<double>(runs));
  }
  // STARTED/QUEUED answers written by their run's result write instead of on their own.
  void TriggerAnswersFolded(size_t n) { folded_.Increment(static_cast<double>(n)); }
  // When a run's trigger call starts, minus its fire's scheduled time.
  void TriggerLateness(absl::Duration d) {
    trigger_lateness_.Observe(std::max(0.0, absl::ToDoubleSeconds(d)));
  }
  // Runs recorded and waiting for their fire's scheduled time.
  void RunsHeld(size_t n) { runs_held_.Set(static_cast<double>(n)); }
  void ExecutorsKnown(size_t n) { executors_known_.Set(static_cast<double>(n)); }
  void DbQuery(absl::string_view op, absl::Duration d, bool ok);

 private:
  static const prometheus::Histogram::BucketBoundaries& LatencyBuckets();
  // "succeeded" for RUN_STATUS_SUCCEEDED, ...
  static std::string StatusLabel(v1::RunStatus status);

  prometheus::Family<prometheus::Counter>& fires_;
  prometheus::Family<prometheus::Counter>& triggered_;
  prometheus::Family<prometheus::Histogram>& trigger_latency_;
  prometheus::Histogram& trigger_batch_size_;
  prometheus::Family<prometheus::Gauge>& pool_depth_;
  prometheus::Family<prometheus::Gauge>& pool_waiting_runs_;
  prometheus::Family<prometheus::Counter>& finished_;
  prometheus::Family<prometheus::Counter>& results_;
  prometheus::Family<prometheus::Counter>& refused_;
  prometheus::Family<prometheus::Counter>& lost_triggers_;
  prometheus::Counter& folded_;
  prometheus::Histogram& trigger_lateness_;
  prometheus::Gauge& runs_held_;
  prometheus::Gauge& executors_known_;
  prometheus::Family<prometheus::Histogram>& db_duration_;
  prometheus::Family<prometheus::Counter>& db_errors_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_METRICS_H_
