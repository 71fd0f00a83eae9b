#include "services/http_executor/http_executor_metrics.h"

#include <string>

namespace jobwheel::http_executor {

HttpExecutorMetrics::HttpExecutorMetrics(prometheus::Registry& registry)
    : call_duration_seconds(
          prometheus::BuildHistogram()
              .Name("jobwheel_http_executor_call_duration_seconds")
              .Help("Time of an HTTP job's call, redirects included")
              .Register(registry)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.05, 0.1, 0.5, 1, 5,
                                                               10, 30, 60, 300})),
      redirects_followed(prometheus::BuildCounter()
                             .Name("jobwheel_http_executor_redirects_total")
                             .Help("Redirects followed by HTTP jobs")
                             .Register(registry)
                             .Add({})),
      calls_(prometheus::BuildCounter()
                 .Name("jobwheel_http_executor_calls_total")
                 .Help("HTTP job calls by outcome")
                 .Register(registry)) {}

prometheus::Counter& HttpExecutorMetrics::Calls(absl::string_view outcome) {
  return calls_.Add({{"outcome", std::string(outcome)}});
}

}  // namespace jobwheel::http_executor
