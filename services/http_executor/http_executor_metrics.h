#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_EXECUTOR_METRICS_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_EXECUTOR_METRICS_H_

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace jobwheel::http_executor {

// The HTTP executor's own metrics (docs/http-jobs.md), next to the SDK's jobwheel_executor_*.
// Thread-safe (prometheus-cpp metrics are).
class HttpExecutorMetrics {
 public:
  explicit HttpExecutorMetrics(prometheus::Registry& registry);

  // `outcome`: succeeded, unexpected_status, refused, timed_out, cancelled, failed, bad_spec.
  prometheus::Counter& Calls(absl::string_view outcome);

  prometheus::Histogram& call_duration_seconds;
  prometheus::Counter& redirects_followed;

 private:
  prometheus::Family<prometheus::Counter>& calls_;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_EXECUTOR_METRICS_H_
