#ifndef JOBWHEEL_BENCH_HTTP_METRICS_H_
#define JOBWHEEL_BENCH_HTTP_METRICS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace jobwheel::bench {

// GET http://127.0.0.1:port/path (HTTP/1.0); the body.
absl::StatusOr<std::string> HttpGet(int port, absl::string_view path, int timeout_ms = 1000);

// The sum of every sample of metric `name` (any labels) in a Prometheus text body; nullopt
// when absent.
absl::optional<double> MetricSum(absl::string_view body, absl::string_view name);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_HTTP_METRICS_H_
