#ifndef JOBWHEEL_SERVICES_SCHEDULER_SCHEDULER_METRICS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_SCHEDULER_METRICS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "jobwheel/v1/types.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace jobwheel::scheduler {

// The scheduler's Prometheus metrics (names in docs/metrics.md). Thread-safe.
class SchedulerMetrics {
 public:
  explicit SchedulerMetrics(prometheus::Registry& registry);

  void FireHandedOff(jobwheel::v1::TriggerType type, bool dispatched, absl::Duration lateness);
  void DispatchLatency(absl::Duration d) { dispatch_latency_.Observe(absl::ToDoubleSeconds(d)); }
  void Misfires(jobwheel::v1::MisfireStrategy strategy, int64_t n);
  void DbQuery(absl::string_view op, absl::Duration d, bool ok);
  // jobwheel_scheduler_runs_lost_total{reason}: executor_offline, executor_restarted,
  // trigger_never_completed (PENDING runs made FAILED).
  void RunsLost(absl::string_view reason, int64_t n);
  // jobwheel_scheduler_offline_to_lost_seconds: from the registry taking an executor offline
  // to its runs becoming LOST.
  void OfflineToLost(absl::Duration d);
  // jobwheel_scheduler_lost_run_kills_total{outcome}: killed, not_running (the executor
  // answered without the run), retried (an attempt that found it unreachable), gave_up.
  void LostRunKill(absl::string_view outcome);

  prometheus::Counter& retries;
  prometheus::Counter& child_fires;
  prometheus::Counter& lost_runs;
  // jobwheel_scheduler_alarms_total{outcome}: queued (in the outbox), sent (delivered),
  // failed (a delivery attempt that failed; the alarm is retried).
  prometheus::Counter& alarms_queued;
  prometheus::Counter& alarms_sent;
  prometheus::Counter& alarms_failed;
  prometheus::Gauge& is_leader;
  prometheus::Counter& leader_changes;
  prometheus::Gauge& wheel_entries;
  // Admission under load (AdmissionPacer): the rate the claim admits (0: unlimited), claims
  // held back at it, and due times shed under load (also counted in misfires_total).
  prometheus::Gauge& admission_rate;
  prometheus::Counter& claims_held_back;
  prometheus::Counter& fires_shed;
  prometheus::Gauge& jobs;
  // Executor changes the registry announced (each may wake the monitor pass).
  prometheus::Counter& executor_events;

 private:
  prometheus::Family<prometheus::Counter>& fires_;
  prometheus::Histogram& lateness_;
  prometheus::Histogram& dispatch_latency_;
  prometheus::Family<prometheus::Counter>& misfires_;
  prometheus::Family<prometheus::Histogram>& db_duration_;
  prometheus::Family<prometheus::Counter>& db_errors_;
  prometheus::Family<prometheus::Counter>& runs_lost_;
  prometheus::Histogram& offline_to_lost_;
  prometheus::Family<prometheus::Counter>& lost_run_kills_;
};

// Lower-case trigger type name for labels ("cron", "manual", ...).
std::string TriggerTypeLabel(jobwheel::v1::TriggerType type);

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_SCHEDULER_METRICS_H_
