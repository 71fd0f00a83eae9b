#ifndef JOBWHEEL_SDK_INTERNAL_EXECUTOR_METRICS_H_
#define JOBWHEEL_SDK_INTERNAL_EXECUTOR_METRICS_H_

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace jobwheel::sdk {

// The executor's metrics (docs/metrics.md, "Executor SDK"), registered in the given registry.
// Thread-safe (prometheus-cpp metrics are).
class ExecutorMetrics {
 public:
  explicit ExecutorMetrics(prometheus::Registry& registry);

  // `status` is a lower-case RunStatus name: succeeded, failed, timed_out, killed, discarded.
  prometheus::Counter& RunsTotal(absl::string_view status);

  prometheus::Histogram& run_duration_seconds;
  prometheus::Gauge& queue_depth;
  prometheus::Gauge& running;
  prometheus::Gauge& spool_size;
  // Results the dispatcher refused for good (no such run, or a missing or wrong result key):
  // dropped from the spool.
  prometheus::Counter& results_refused;
  prometheus::Gauge& heartbeat_connected;

 private:
  prometheus::Family<prometheus::Counter>& runs_total_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_EXECUTOR_METRICS_H_
