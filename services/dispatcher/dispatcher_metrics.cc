#include "services/dispatcher/dispatcher_metrics.h"

#include "absl/strings/ascii.h"
#include "common/model/proto_enums.h"

namespace jobwheel::dispatcher {

DispatcherMetrics::DispatcherMetrics(prometheus::Registry& registry)
    : fires_(prometheus::BuildCounter()
                 .Name("jobwheel_dispatcher_fires_total")
                 .Help("Fires received, by outcome (dispatched, failed, duplicate, not_found).")
                 .Register(registry)),
      triggered_(prometheus::BuildCounter()
                     .Name("jobwheel_dispatcher_runs_triggered_total")
                     .Help("Runs sent to executors (by RunBatch or Run), by routing strategy "
                           "and the executor's answer.")
                     .Register(registry)),
      trigger_latency_(prometheus::BuildHistogram()
                           .Name("jobwheel_dispatcher_trigger_latency_seconds")
                           .Help("Trigger call round trip (one RunBatch call, or the Run calls "
                                 "standing in for it), by trigger pool.")
                           .Register(registry)),
      trigger_batch_size_(
          prometheus::BuildHistogram()
              .Name("jobwheel_dispatcher_trigger_batch_size")
              .Help("Runs per trigger call (one RunBatch call per executor and trigger pool "
                    "per Dispatch, split above --max_runs_per_batch).")
              .Register(registry)
              .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256,
                                                               512, 1000})),
      pool_depth_(prometheus::BuildGauge()
                      .Name("jobwheel_dispatcher_pool_queue_depth")
                      .Help("Trigger calls waiting for room in their pool (calls in flight are "
                            "bounded), by pool.")
                      .Register(registry)),
      pool_waiting_runs_(prometheus::BuildGauge()
                             .Name("jobwheel_dispatcher_pool_waiting_runs")
                             .Help("Runs of the trigger calls waiting for room in their pool, by "
                                   "pool (at most --trigger_max_waiting_runs; past that a call's "
                                   "runs fail as 'dispatcher overloaded').")
                             .Register(registry)),
      finished_(prometheus::BuildCounter()
                    .Name("jobwheel_dispatcher_runs_finished_total")
                    .Help("Runs reaching a terminal state through this dispatcher.")
                    .Register(registry)),
      results_(prometheus::BuildCounter()
                   .Name("jobwheel_dispatcher_results_total")
                   .Help("Results received via ReportResults (recorded, duplicate, late: kept "
                         "beside a status already decided, refused: see "
                         "jobwheel_dispatcher_results_refused_total).")
                   .Register(registry)),
      refused_(prometheus::BuildCounter()
                   .Name("jobwheel_dispatcher_results_refused_total")
                   .Help("Results refused for good, by reason (bad_key: missing or wrong result "
                         "key; no_run: no such run; forbidden: a run of an app the reporting token "
                         "does not "
                         "serve, answered as no_run). The run is left untouched.")
                   .Register(registry)),
      lost_triggers_(prometheus::BuildCounter()
                         .Name("jobwheel_dispatcher_lost_triggers_settled_total")
                         .Help("Runs of RunBatch calls whose answer was lost, by how GetRuns "
                               "settled them (unknown: the executor could not be asked; the "
                               "runs stay RUNNING).")
                         .Register(registry)),
      folded_(prometheus::BuildCounter()
                  .Name("jobwheel_dispatcher_trigger_answers_folded_total")
                  .Help("Executor STARTED/QUEUED answers written together with their run's "
                        "result (one write instead of two).")
                  .Register(registry)
                  .Add({})),
      trigger_lateness_(
          prometheus::BuildHistogram()
              .Name("jobwheel_dispatcher_trigger_lateness_seconds")
              .Help("When a run's trigger call started minus its fire's scheduled time.")
              .Register(registry)
              // Single milliseconds to minutes.
              .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.002, 0.005, 0.01, 0.02,
                                                               0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30,
                                                               60, 300})),
      runs_held_(prometheus::BuildGauge()
                     .Name("jobwheel_dispatcher_runs_held")
                     .Help("Runs recorded and waiting for their fire's scheduled time to be "
                           "triggered (fires handed over ahead of time).")
                     .Register(registry)
                     .Add({})),
      executors_known_(prometheus::BuildGauge()
                           .Name("jobwheel_dispatcher_executors_known")
                           .Help("Executors in the watch cache.")
                           .Register(registry)
                           .Add({})),
      db_duration_(prometheus::BuildHistogram()
                       .Name("jobwheel_dispatcher_db_query_duration_seconds")
                       .Help("PostgreSQL round trips, by operation.")
                       .Register(registry)),
      db_errors_(prometheus::BuildCounter()
                     .Name("jobwheel_dispatcher_db_errors_total")
                     .Help("Failed PostgreSQL round trips, by operation.")
                     .Register(registry)) {
  // Every documented label value exists (at 0) from the first scrape, so rate() and ratios
  // work before the first event of each kind.
  for (const char* pool : {"fast", "slow"}) {
    PoolDepth(pool, 0, 0);
    trigger_latency_.Add({{"pool", pool}}, LatencyBuckets());
  }
  for (const char* outcome : {"dispatched", "failed", "duplicate", "not_found"}) {
    fires_.Add({{"outcome", outcome}});
  }
  for (const char* outcome : {"recorded", "duplicate", "late", "refused"}) {
    results_.Add({{"outcome", outcome}});
  }
  for (const char* reason : {"bad_key", "no_run", "forbidden"}) refused_.Add({{"reason", reason}});
  for (const char* presence : {"fenced", "queued", "running", "ended", "refused", "unknown"}) {
    lost_triggers_.Add({{"presence", presence}});
  }
  for (v1::RunStatus status :
       {v1::RUN_STATUS_SUCCEEDED, v1::RUN_STATUS_FAILED, v1::RUN_STATUS_TIMED_OUT,
        v1::RUN_STATUS_KILLED, v1::RUN_STATUS_LOST, v1::RUN_STATUS_DISCARDED}) {
    finished_.Add({{"status", StatusLabel(status)}});
  }
}

const prometheus::Histogram::BucketBoundaries& DispatcherMetrics::LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return *buckets;
}

std::string DispatcherMetrics::StatusLabel(v1::RunStatus status) {
  return absl::AsciiStrToLower(RunStatusShortName(status));
}

void DispatcherMetrics::RunFinished(v1::RunStatus status) {
  finished_.Add({{"status", StatusLabel(status)}}).Increment();
}

void DispatcherMetrics::DbQuery(absl::string_view op, absl::Duration d, bool ok) {
  const std::string label(op);
  db_duration_.Add({{"op", label}}, LatencyBuckets()).Observe(absl::ToDoubleSeconds(d));
  // Added on success too, so the error series of every operation exists (at 0) from its first
  // round trip: rate() and alerts need a series before the first error.
  prometheus::Counter& errors = db_errors_.Add({{"op", label}});
  if (!ok) errors.Increment();
}

}  // namespace jobwheel::dispatcher
