#include "sdk/internal/executor_metrics.h"

#include <string>

namespace jobwheel::sdk {

ExecutorMetrics::ExecutorMetrics(prometheus::Registry& registry)
    : run_duration_seconds(
          prometheus::BuildHistogram()
              .Name("jobwheel_executor_run_duration_seconds")
              .Help("Handler run time")
              .Register(registry)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30,
                                                               60, 300, 1800, 7200})),
      queue_depth(prometheus::BuildGauge()
                      .Name("jobwheel_executor_queue_depth")
                      .Help("Runs queued behind running ones")
                      .Register(registry)
                      .Add({})),
      running(prometheus::BuildGauge()
                  .Name("jobwheel_executor_running")
                  .Help("Runs executing now")
                  .Register(registry)
                  .Add({})),
      spool_size(prometheus::BuildGauge()
                     .Name("jobwheel_executor_spool_size")
                     .Help("Results spooled, not yet acknowledged")
                     .Register(registry)
                     .Add({})),
      results_refused(prometheus::BuildCounter()
                          .Name("jobwheel_executor_results_refused_total")
                          .Help("Results the dispatcher refused for good (no such run, or a "
                                "missing or wrong result key), dropped from the spool")
                          .Register(registry)
                          .Add({})),
      heartbeat_connected(prometheus::BuildGauge()
                              .Name("jobwheel_executor_heartbeat_connected")
                              .Help("1 while the registry stream is up")
                              .Register(registry)
                              .Add({})),
      runs_total_(prometheus::BuildCounter()
                      .Name("jobwheel_executor_runs_total")
                      .Help("Runs finished on this executor")
                      .Register(registry)) {
  // Every terminal status exists (at 0) from the first scrape, so rate() and ratios work
  // before the first run of each kind.
  for (const char* status : {"succeeded", "failed", "timed_out", "killed", "discarded"}) {
    runs_total_.Add({{"status", status}});
  }
}

prometheus::Counter& ExecutorMetrics::RunsTotal(absl::string_view status) {
  return runs_total_.Add({{"status", std::string(status)}});
}

}  // namespace jobwheel::sdk
