#ifndef JOBWHEEL_SERVICES_REGISTRY_REGISTRY_METRICS_H_
#define JOBWHEEL_SERVICES_REGISTRY_REGISTRY_METRICS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace jobwheel::registry {

// The registry's metrics (docs/metrics.md, registry section), built on an
// injected prometheus::Registry. Thread-safe (prometheus-cpp metrics are).
struct RegistryMetrics {
  explicit RegistryMetrics(prometheus::Registry& registry);

  // Sets jobwheel_registry_executors_online{app}.
  void SetExecutorsOnline(const std::string& app, int count);
  // Records one PostgreSQL round trip (PgPool observer).
  void ObserveDb(absl::string_view op, absl::Duration duration, bool ok);

  prometheus::Family<prometheus::Gauge>& executors_online;
  prometheus::Gauge& sessions_open;
  prometheus::Counter& beats;
  prometheus::Family<prometheus::Counter>& registrations;
  prometheus::Counter& registrations_accepted;
  prometheus::Counter& registrations_rejected;
  prometheus::Family<prometheus::Counter>& offline;
  prometheus::Counter& offline_stream_closed;
  prometheus::Counter& offline_deadline;
  prometheus::Counter& offline_goodbye;
  prometheus::Counter& offline_lease_expired;
  prometheus::Histogram& notify_lag;
  prometheus::Gauge& watchers;
  prometheus::Family<prometheus::Histogram>& db_duration;
  prometheus::Family<prometheus::Counter>& db_errors;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_REGISTRY_METRICS_H_
