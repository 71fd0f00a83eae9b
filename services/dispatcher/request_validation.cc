#include "services/dispatcher/request_validation.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/model/proto_enums.h"

namespace jobwheel::dispatcher {
namespace {

absl::Status ValidateFire(const v1::Fire& f, int i) {
  const std::string at = absl::StrCat("fires[", i, "]");
  if (f.fire_id() <= 0)
    return absl::InvalidArgumentError(absl::StrCat(at, ".fire_id: must be positive"));
  if (!f.has_job() || f.job().id() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".job.id: must be positive (fire ", f.fire_id(), ")"));
  }
  if (f.job().app().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".job.app: must not be empty (fire ", f.fire_id(), ")"));
  }
  if (!IsScript(f.job().glue_type()) && f.job().handler().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".job.handler: must not be empty (fire ", f.fire_id(), ")"));
  }
  if (f.shard_total() < 0 ||
      (f.shard_total() > 0 && (f.shard_index() < 0 || f.shard_index() >= f.shard_total()))) {
    return absl::InvalidArgumentError(absl::StrCat(at, ".shard_index: ", f.shard_index(), "/",
                                                   f.shard_total(), " is not a valid shard (fire ",
                                                   f.fire_id(), ")"));
  }
  if (f.attempt() < 0)
    return absl::InvalidArgumentError(absl::StrCat(at, ".attempt: must not be negative"));
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateDispatchRequest(const v1::DispatchRequest& request,
                                     const RequestLimits& limits) {
  if (static_cast<size_t>(request.fires_size()) > limits.max_fires_per_call) {
    return absl::InvalidArgumentError(absl::StrCat("fires: at most ", limits.max_fires_per_call,
                                                   " per call, got ", request.fires_size()));
  }
  for (int i = 0; i < request.fires_size(); ++i) {
    absl::Status s = ValidateFire(request.fires(i), i);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ValidateReportResultsRequest(const v1::ReportResultsRequest& request,
                                          const RequestLimits& limits) {
  if (static_cast<size_t>(request.results_size()) > limits.max_results_per_call) {
    return absl::InvalidArgumentError(absl::StrCat("results: at most ", limits.max_results_per_call,
                                                   " per call, got ", request.results_size()));
  }
  for (int i = 0; i < request.results_size(); ++i) {
    const v1::RunResult& r = request.results(i);
    if (r.run_id() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("results[", i, "].run_id: must be positive"));
    }
    if (!IsTerminal(r.status())) {
      return absl::InvalidArgumentError(
          absl::StrCat("results[", i, "].status: run ", r.run_id(),
                       " must have a terminal status (SUCCEEDED..DISCARDED), got ",
                       v1::RunStatus_Name(r.status())));
    }
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::dispatcher
