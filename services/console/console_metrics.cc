#include "services/console/console_metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace jobwheel::console {
namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return *buckets;
}

}  // namespace

ConsoleMetrics::ConsoleMetrics(prometheus::Registry& registry,
                               const std::vector<std::string>& procedures)
    : requests_(prometheus::BuildCounter()
                    .Name("jobwheel_console_requests_total")
                    .Help("Connect gateway requests by service, method and Connect code")
                    .Register(registry)),
      latency_(prometheus::BuildHistogram()
                   .Name("jobwheel_console_request_duration_seconds")
                   .Help("Connect gateway request time, body read to answer, by service")
                   .Register(registry)),
      in_flight_(prometheus::BuildGauge()
                     .Name("jobwheel_console_requests_in_flight")
                     .Help("Connect gateway requests being served")
                     .Register(registry)
                     .Add({})),
      pages_(prometheus::BuildCounter()
                 .Name("jobwheel_console_page_requests_total")
                 .Help("Static page and health requests by HTTP status class")
                 .Register(registry)),
      connections_refused_(prometheus::BuildCounter()
                               .Name("jobwheel_console_connections_refused_total")
                               .Help("Connections closed at accept time: their client (IP) or "
                                     "all clients together had as many open as allowed")
                               .Register(registry)
                               .Add({})) {
  for (const std::string& procedure : procedures) {
    std::pair<std::string, std::string> parts = absl::StrSplit(procedure, '/');
    absl::string_view service = parts.first;
    service = service.substr(service.rfind('.') + 1);
    requests_.Add({{"service", std::string(service)}, {"method", parts.second}, {"code", "ok"}});
    latency_.Add({{"service", std::string(service)}}, LatencyBuckets());
  }
  for (const char* status_class : {"2xx", "3xx", "4xx", "5xx"}) {
    pages_.Add({{"status", status_class}});
  }
}

void ConsoleMetrics::Request(const std::string& service, const std::string& method,
                             absl::string_view code, absl::Duration latency) {
  requests_.Add({{"service", service}, {"method", method}, {"code", std::string(code)}})
      .Increment();
  latency_.Add({{"service", service}}, LatencyBuckets()).Observe(absl::ToDoubleSeconds(latency));
}

void ConsoleMetrics::Page(int http_status) {
  if (http_status < 200 || http_status > 599) return;
  pages_.Add({{"status", absl::StrCat(http_status / 100, "xx")}}).Increment();
}

}  // namespace jobwheel::console
