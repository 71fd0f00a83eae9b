#ifndef JOBWHEEL_SERVICES_CONSOLE_CONSOLE_METRICS_H_
#define JOBWHEEL_SERVICES_CONSOLE_CONSOLE_METRICS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace jobwheel::console {

// The console's metrics (docs/metrics.md, console section), built on an injected
// prometheus::Registry. Thread-safe (prometheus-cpp metrics are).
class ConsoleMetrics {
 public:
  // `procedures` ("jobwheel.v1.JobAdminService/ListJobs"): their code="ok" series and their
  // services' latency series are exported at 0 from the start.
  ConsoleMetrics(prometheus::Registry& registry, const std::vector<std::string>& procedures);

  // One finished gateway request: `code` is the Connect code name ("ok", "unauthenticated").
  void Request(const std::string& service, const std::string& method, absl::string_view code,
               absl::Duration latency);
  // A static page or health request, by outcome class ("2xx", "4xx"...).
  void Page(int http_status);

  // A connection closed at accept time: its client, or all clients together, at their cap.
  void ConnectionRefused() { connections_refused_.Increment(); }

  prometheus::Gauge& in_flight() { return in_flight_; }

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Gauge& in_flight_;
  prometheus::Family<prometheus::Counter>& pages_;
  prometheus::Counter& connections_refused_;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_CONSOLE_METRICS_H_
