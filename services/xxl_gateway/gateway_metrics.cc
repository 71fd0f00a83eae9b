#include "services/xxl_gateway/gateway_metrics.h"

namespace jobwheel::xxl {
namespace {

prometheus::Family<prometheus::Counter>& Counter(prometheus::Registry& registry,
                                                 const std::string& name, const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

const prometheus::Histogram::BucketBoundaries& StageBuckets() {
  static const auto* const kBuckets = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5};
  return *kBuckets;
}

}  // namespace

GatewayMetrics::GatewayMetrics(prometheus::Registry& registry)
    : admin_requests_(Counter(registry, "jobwheel_xxl_gateway_admin_requests_total",
                              "XXL admin-side HTTP requests by endpoint and outcome")),
      registrations_refused_(Counter(registry, "jobwheel_xxl_gateway_registrations_refused_total",
                                     "XXL executor registrations refused, by reason")),
      callbacks_refused_(Counter(registry, "jobwheel_xxl_gateway_callbacks_refused_total",
                                 "XXL callback items refused, by reason")),
      runs_(Counter(registry, "jobwheel_xxl_gateway_runs_total",
                    "Runs handed to the gateway by disposition")),
      results_(Counter(registry, "jobwheel_xxl_gateway_results_total",
                       "Run results reported to dispatchers by status and outcome")),
      xxl_calls_(Counter(registry, "jobwheel_xxl_gateway_xxl_calls_total",
                         "Calls to XXL executors by endpoint and outcome")),
      stages_(prometheus::BuildHistogram()
                  .Name("jobwheel_xxl_gateway_stage_seconds")
                  .Help("Time of one stage of the run path (queue, batch, sync, xxl_run, report)")
                  .Register(registry)),
      identities_live_(prometheus::BuildGauge()
                           .Name("jobwheel_xxl_gateway_identities_live")
                           .Help("XXL executors currently registered as jobwheel executors")
                           .Register(registry)
                           .Add({})),
      probe_offline_(Counter(registry, "jobwheel_xxl_gateway_probe_offline_total",
                             "XXL executors taken offline after failed /beat probes")
                         .Add({})),
      auth_failures_(Counter(registry, "jobwheel_xxl_gateway_auth_failures_total",
                             "Admin-side requests refused for a missing or wrong token")
                         .Add({})) {
  // Every documented label value exists at 0 from the start (docs/metrics.md), so a dashboard
  // or an alert on it has a series before its first event.
  for (const char* e : {"registry", "registryRemove", "callback", "none"}) {
    for (const char* o : {"ok", "refused", "bad_request", "unavailable", "limited"}) {
      admin_requests_.Add({{"endpoint", e}, {"outcome", o}});
    }
  }
  for (const char* r : {"token", "registry", "address", "invalid", "ports"}) {
    registrations_refused_.Add({{"reason", r}});
  }
  for (const char* r : {"not_sent_here", "unknown_run"}) callbacks_refused_.Add({{"reason", r}});
  for (const char* d : {"started", "queued", "discarded", "rejected"}) {
    runs_.Add({{"disposition", d}});
  }
  for (const char* s : {"SUCCEEDED", "FAILED", "TIMED_OUT", "KILLED", "DISCARDED"}) {
    for (const char* o : {"acked", "refused", "failed"}) {
      results_.Add({{"status", s}, {"outcome", o}});
    }
  }
  for (const char* e : {"run", "kill", "log", "beat"}) {
    for (const char* o : {"ok", "error"}) xxl_calls_.Add({{"endpoint", e}, {"outcome", o}});
  }
  for (const char* st : {"queue", "batch", "sync", "xxl_run", "report"}) {
    stages_.Add({{"stage", st}}, StageBuckets());
  }
}

void GatewayMetrics::AdminRequest(absl::string_view endpoint, absl::string_view outcome) {
  admin_requests_.Add({{"endpoint", std::string(endpoint)}, {"outcome", std::string(outcome)}})
      .Increment();
}

void GatewayMetrics::RegistrationRefused(absl::string_view reason) {
  registrations_refused_.Add({{"reason", std::string(reason)}}).Increment();
}

void GatewayMetrics::CallbackRefused(absl::string_view reason) {
  callbacks_refused_.Add({{"reason", std::string(reason)}}).Increment();
}

void GatewayMetrics::Run(absl::string_view disposition) {
  runs_.Add({{"disposition", std::string(disposition)}}).Increment();
}

void GatewayMetrics::Result(absl::string_view status, absl::string_view outcome) {
  results_.Add({{"status", std::string(status)}, {"outcome", std::string(outcome)}}).Increment();
}

void GatewayMetrics::XxlCall(absl::string_view endpoint, absl::string_view outcome) {
  xxl_calls_.Add({{"endpoint", std::string(endpoint)}, {"outcome", std::string(outcome)}})
      .Increment();
}

void GatewayMetrics::Stage(absl::string_view stage, double seconds) {
  stages_.Add({{"stage", std::string(stage)}}, StageBuckets()).Observe(seconds);
}

}  // namespace jobwheel::xxl
