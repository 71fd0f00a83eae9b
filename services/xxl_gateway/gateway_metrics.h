#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_METRICS_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_METRICS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace jobwheel::xxl {

// The gateway's metrics (jobwheel_xxl_gateway_*), built on an injected prometheus::Registry.
// Thread-safe (prometheus-cpp metrics are).
class GatewayMetrics {
 public:
  explicit GatewayMetrics(prometheus::Registry& registry);

  // An admin-side request (/api/registry, /api/registryRemove, /api/callback) by endpoint
  // and outcome ("ok", "refused", "bad_request", "unavailable", "limited").
  void AdminRequest(absl::string_view endpoint, absl::string_view outcome);
  // A refused registration, by reason class ("token", "registry", "address", "invalid").
  void RegistrationRefused(absl::string_view reason);
  // A refused callback item, by reason ("token", "not_sent_here", "unknown_run").
  void CallbackRefused(absl::string_view reason);
  // A run handed to the gateway, by disposition ("started", "queued", "discarded", "rejected").
  void Run(absl::string_view disposition);
  // A result reported to a dispatcher, by status ("SUCCEEDED", ...) and outcome ("acked",
  // "refused", "failed").
  void Result(absl::string_view status, absl::string_view outcome);
  // A call to an XXL executor, by endpoint ("run", "kill", "log", "beat", "idleBeat") and
  // outcome ("ok", "error").
  void XxlCall(absl::string_view endpoint, absl::string_view outcome);

  // How long one stage of a run took, in seconds: "queue" (a RunBatch or Run waiting for a
  // gateway thread), "batch" (the handling of one RunBatch), "sync" (the run's ledger record
  // made durable), "xxl_run" (the /run call), "report" (one ReportResults of results).
  void Stage(absl::string_view stage, double seconds);
  prometheus::Gauge& identities_live() { return identities_live_; }
  prometheus::Counter& probe_offline() { return probe_offline_; }
  prometheus::Counter& auth_failures() { return auth_failures_; }

 private:
  prometheus::Family<prometheus::Counter>& admin_requests_;
  prometheus::Family<prometheus::Counter>& registrations_refused_;
  prometheus::Family<prometheus::Counter>& callbacks_refused_;
  prometheus::Family<prometheus::Counter>& runs_;
  prometheus::Family<prometheus::Counter>& results_;
  prometheus::Family<prometheus::Counter>& xxl_calls_;
  prometheus::Family<prometheus::Histogram>& stages_;
  prometheus::Gauge& identities_live_;
  prometheus::Counter& probe_offline_;
  prometheus::Counter& auth_failures_;
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_METRICS_H_
