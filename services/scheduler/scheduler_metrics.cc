#include "services/scheduler/scheduler_metrics.h"

#include "absl/strings/ascii.h"
#include "common/model/proto_enums.h"

namespace jobwheel::scheduler {
namespace {

// Milliseconds to minutes: lateness is meant to show single milliseconds.
const prometheus::Histogram::BucketBoundaries& LatenessBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60};
  return *b;
}

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  return *b;
}

}  // namespace

std::string TriggerTypeLabel(jobwheel::v1::TriggerType type) {
  return absl::AsciiStrToLower(TriggerTypeShortName(type));
}

SchedulerMetrics::SchedulerMetrics(prometheus::Registry& registry)
    : retries(prometheus::BuildCounter()
                  .Name("jobwheel_scheduler_retries_total")
                  .Help("Retry fires created for failed runs.")
                  .Register(registry)
                  .Add({})),
      child_fires(prometheus::BuildCounter()
                      .Name("jobwheel_scheduler_child_fires_total")
                      .Help("Child-job fires created after successful runs.")
                      .Register(registry)
                      .Add({})),
      lost_runs(prometheus::BuildCounter()
                    .Name("jobwheel_scheduler_lost_runs_total")
                    .Help("Runs marked LOST or failed because their trigger never completed.")
                    .Register(registry)
                    .Add({})),
      alarms_queued(prometheus::BuildCounter()
                        .Name("jobwheel_scheduler_alarms_total")
                        .Help("Alarms by outcome: queued, sent, failed (delivery attempts).")
                        .Register(registry)
                        .Add({{"outcome", "queued"}})),
      alarms_sent(prometheus::BuildCounter()
                      .Name("jobwheel_scheduler_alarms_total")
                      .Help("Alarms by outcome: queued, sent, failed (delivery attempts).")
                      .Register(registry)
                      .Add({{"outcome", "sent"}})),
      alarms_failed(prometheus::BuildCounter()
                        .Name("jobwheel_scheduler_alarms_total")
                        .Help("Alarms by outcome: queued, sent, failed (delivery attempts).")
                        .Register(registry)
                        .Add({{"outcome", "failed"}})),
      is_leader(prometheus::BuildGauge()
                    .Name("jobwheel_scheduler_is_leader")
                    .Help("1 while this replica holds the schedule lock.")
                    .Register(registry)
                    .Add({})),
      leader_changes(prometheus::BuildCounter()
                         .Name("jobwheel_scheduler_leader_changes_total")
                         .Help("Times this replica became leader.")
                         .Register(registry)
                         .Add({})),
      wheel_entries(prometheus::BuildGauge()
                        .Name("jobwheel_scheduler_wheel_entries")
                        .Help("Fires waiting in the timer for their due time.")
                        .Register(registry)
                        .Add({})),
      admission_rate(prometheus::BuildGauge()
                         .Name("jobwheel_scheduler_admission_rate")
                         .Help("Fires per second the claim admits under load (0: unlimited).")
                         .Register(registry)
                         .Add({})),
      claims_held_back(prometheus::BuildCounter()
                           .Name("jobwheel_scheduler_claims_held_back_total")
                           .Help("Claims that left due jobs for later at the admission rate.")
                           .Register(registry)
                           .Add({})),
      fires_shed(prometheus::BuildCounter()
                     .Name("jobwheel_scheduler_fires_shed_total")
                     .Help("Due times shed under load through the jobs' misfire strategies.")
                     .Register(registry)
                     .Add({})),
      jobs(prometheus::BuildGauge()
               .Name("jobwheel_scheduler_jobs")
               .Help("Enabled jobs.")
               .Register(registry)
               .Add({})),
      executor_events(prometheus::BuildCounter()
                          .Name("jobwheel_scheduler_executor_events_total")
                          .Help("Executor changes announced by the registry, seen by the leader.")
                          .Register(registry)
                          .Add({})),
      fires_(prometheus::BuildCounter()
                 .Name("jobwheel_scheduler_fires_total")
                 .Help("Fires handed to a dispatcher, by trigger type and outcome.")
                 .Register(registry)),
      lateness_(prometheus::BuildHistogram()
                    .Name("jobwheel_scheduler_fire_lateness_seconds")
                    .Help("Hand-off time minus the time the fire was due for hand-off (its "
                          "scheduled time minus --dispatch_lead, on a 100 ms grid).")
                    .Register(registry)
                    .Add({}, LatenessBuckets())),
      dispatch_latency_(prometheus::BuildHistogram()
                            .Name("jobwheel_scheduler_dispatch_latency_seconds")
                            .Help("Dispatch RPC round trip per batch.")
                            .Register(registry)
                            .Add({}, LatencyBuckets())),
      misfires_(prometheus::BuildCounter()
                    .Name("jobwheel_scheduler_misfires_total")
                    .Help("Scheduled fires missed by more than the misfire threshold.")
                    .Register(registry)),
      db_duration_(prometheus::BuildHistogram()
                       .Name("jobwheel_scheduler_db_query_duration_seconds")
                       .Help("PostgreSQL round trips by operation.")
                       .Register(registry)),
      db_errors_(prometheus::BuildCounter()
                     .Name("jobwheel_scheduler_db_errors_total")
                     .Help("Failed PostgreSQL round trips by operation.")
                     .Register(registry)),
      runs_lost_(prometheus::BuildCounter()
                     .Name("jobwheel_scheduler_runs_lost_total")
                     .Help("Runs ended by the monitors, by reason.")
                     .Register(registry)),
      offline_to_lost_(prometheus::BuildHistogram()
                           .Name("jobwheel_scheduler_offline_to_lost_seconds")
                           .Help("From the registry taking an executor offline to its runs "
                                 "becoming LOST.")
                           .Register(registry)
                           .Add({}, LatenessBuckets())),
      lost_run_kills_(prometheus::BuildCounter()
                          .Name("jobwheel_scheduler_lost_run_kills_total")
                          .Help("Kill calls for LOST runs to their executors, by outcome.")
                          .Register(registry)) {
  for (const char* reason : {"executor_offline", "executor_restarted", "trigger_never_completed"}) {
    runs_lost_.Add({{"reason", reason}});
  }
  for (const char* outcome : {"killed", "not_running", "retried", "gave_up"}) {
    lost_run_kills_.Add({{"outcome", outcome}});
  }
  for (auto t : {jobwheel::v1::TRIGGER_TYPE_CRON, jobwheel::v1::TRIGGER_TYPE_FIX_RATE,
                 jobwheel::v1::TRIGGER_TYPE_MANUAL, jobwheel::v1::TRIGGER_TYPE_MISFIRE,
                 jobwheel::v1::TRIGGER_TYPE_RETRY, jobwheel::v1::TRIGGER_TYPE_PARENT}) {
    fires_.Add({{"trigger_type", TriggerTypeLabel(t)}, {"outcome", "dispatched"}});
    fires_.Add({{"trigger_type", TriggerTypeLabel(t)}, {"outcome", "failed"}});
  }
  misfires_.Add({{"strategy", "do_nothing"}});
  misfires_.Add({{"strategy", "fire_once_now"}});
}

void SchedulerMetrics::FireHandedOff(jobwheel::v1::TriggerType type, bool dispatched,
                                     absl::Duration lateness) {
  fires_
      .Add({{"trigger_type", TriggerTypeLabel(type)},
            {"outcome", dispatched ? "dispatched" : "failed"}})
      .Increment();
  lateness_.Observe(std::max(0.0, absl::ToDoubleSeconds(lateness)));
}

void SchedulerMetrics::Misfires(jobwheel::v1::MisfireStrategy strategy, int64_t n) {
  const bool once = strategy == jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW;
  misfires_.Add({{"strategy", once ? "fire_once_now" : "do_nothing"}})
      .Increment(static_cast<double>(n));
}

void SchedulerMetrics::DbQuery(absl::string_view op, absl::Duration d, bool ok) {
  const std::string label(op);
  db_duration_.Add({{"op", label}}, LatencyBuckets()).Observe(absl::ToDoubleSeconds(d));
  // Added on success too, so the error series of every operation exists (at 0) from its first
  // round trip: rate() and alerts need a series before the first error.
  prometheus::Counter& errors = db_errors_.Add({{"op", label}});
  if (!ok) errors.Increment();
}

void SchedulerMetrics::RunsLost(absl::string_view reason, int64_t n) {
  runs_lost_.Add({{"reason", std::string(reason)}}).Increment(static_cast<double>(n));
}

void SchedulerMetrics::OfflineToLost(absl::Duration d) {
  offline_to_lost_.Observe(std::max(0.0, absl::ToDoubleSeconds(d)));
}

void SchedulerMetrics::LostRunKill(absl::string_view outcome) {
  lost_run_kills_.Add({{"outcome", std::string(outcome)}}).Increment();
}

}  // namespace jobwheel::scheduler
