#include "services/registry/registry_metrics.h"

namespace jobwheel::registry {
namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  return *buckets;
}

}  // namespace

RegistryMetrics::RegistryMetrics(prometheus::Registry& registry)
    : executors_online(prometheus::BuildGauge()
                           .Name("jobwheel_registry_executors_online")
                           .Help("Executors online (all replicas), by app")
                           .Register(registry)),
      sessions_open(prometheus::BuildGauge()
                        .Name("jobwheel_registry_sessions_open")
                        .Help("Heartbeat streams open on this replica")
                        .Register(registry)
                        .Add({})),
      beats(prometheus::BuildCounter()
                .Name("jobwheel_registry_beats_total")
                .Help("Beats received")
                .Register(registry)
                .Add({})),
      registrations(prometheus::BuildCounter()
                        .Name("jobwheel_registry_registrations_total")
                        .Help("Executor registrations by outcome")
                        .Register(registry)),
      registrations_accepted(registrations.Add({{"outcome", "accepted"}})),
      registrations_rejected(registrations.Add({{"outcome", "rejected"}})),
      offline(prometheus::BuildCounter()
                  .Name("jobwheel_registry_offline_total")
                  .Help("Executors taken offline by this replica, by reason")
                  .Register(registry)),
      offline_stream_closed(offline.Add({{"reason", "stream_closed"}})),
      offline_deadline(offline.Add({{"reason", "deadline"}})),
      offline_goodbye(offline.Add({{"reason", "goodbye"}})),
      offline_lease_expired(offline.Add({{"reason", "lease_expired"}})),
      notify_lag(prometheus::BuildHistogram()
                     .Name("jobwheel_registry_notify_lag_seconds")
                     .Help("Change committed to seen through LISTEN/NOTIFY")
                     .Register(registry)
                     .Add({}, LatencyBuckets())),
      watchers(prometheus::BuildGauge()
                   .Name("jobwheel_registry_watchers")
                   .Help("Open WatchExecutors streams")
                   .Register(registry)
                   .Add({})),
      db_duration(prometheus::BuildHistogram()
                      .Name("jobwheel_registry_db_query_duration_seconds")
                      .Help("PostgreSQL round trips")
                      .Register(registry)),
      db_errors(prometheus::BuildCounter()
                    .Name("jobwheel_registry_db_errors_total")
                    .Help("Failed PostgreSQL round trips")
                    .Register(registry)) {}

void RegistryMetrics::SetExecutorsOnline(const std::string& app, int count) {
  executors_online.Add({{"app", app}}).Set(count);
}

void RegistryMetrics::ObserveDb(absl::string_view op, absl::Duration duration, bool ok) {
  const std::string name(op);
  db_duration.Add({{"op", name}}, LatencyBuckets()).Observe(absl::ToDoubleSeconds(duration));
  // Added on success too, so the error series of every operation exists (at 0) from its first
  // round trip: rate() and alerts need a series before the first error.
  prometheus::Counter& errors = db_errors.Add({{"op", name}});
  if (!ok) errors.Increment();
}

}  // namespace jobwheel::registry
