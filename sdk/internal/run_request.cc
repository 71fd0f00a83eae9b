#include "sdk/internal/run_request.h"

#include "absl/strings/str_cat.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"

namespace jobwheel::sdk {

using jobwheel::v1::RunRequest;

absl::Status ValidateRunRequest(const RunRequest& r) {
  if (r.run_id() <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  if (r.job_id() <= 0) return absl::InvalidArgumentError("job_id: must be positive");
  if (!jobwheel::v1::GlueType_IsValid(r.glue_type())) {
    return absl::InvalidArgumentError(absl::StrCat("glue_type: unknown value ", r.glue_type()));
  }
  if (!jobwheel::v1::BlockStrategy_IsValid(r.block_strategy())) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_strategy: unknown value ", r.block_strategy()));
  }
  if (r.shard_total() < 0) {
    return absl::InvalidArgumentError("shard_total: must not be negative");
  }
  if (r.shard_total() > 0 && (r.shard_index() < 0 || r.shard_index() >= r.shard_total())) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard_index: must be in [0, ", r.shard_total(), ")"));
  }
  if (r.shard_total() == 0 && r.shard_index() != 0) {
    return absl::InvalidArgumentError("shard_index: set without shard_total");
  }
  if (r.has_timeout() && FromProto(r.timeout()) < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeout: must not be negative");
  }
  if (IsScript(r.glue_type())) {
    if (r.script_source().empty()) {
      return absl::InvalidArgumentError("script_source: must not be empty for a script job");
    }
    if (r.script_version() < 0) {
      return absl::InvalidArgumentError("script_version: must not be negative");
    }
  } else if (r.handler().empty()) {
    return absl::InvalidArgumentError("handler: must not be empty");
  }
  return absl::OkStatus();
}

TriggerType FromProtoTrigger(jobwheel::v1::TriggerType t) {
  switch (t) {
    case jobwheel::v1::TRIGGER_TYPE_CRON:
      return TriggerType::kCron;
    case jobwheel::v1::TRIGGER_TYPE_FIX_RATE:
      return TriggerType::kFixRate;
    case jobwheel::v1::TRIGGER_TYPE_MANUAL:
      return TriggerType::kManual;
    case jobwheel::v1::TRIGGER_TYPE_MISFIRE:
      return TriggerType::kMisfire;
    case jobwheel::v1::TRIGGER_TYPE_RETRY:
      return TriggerType::kRetry;
    case jobwheel::v1::TRIGGER_TYPE_PARENT:
      return TriggerType::kParent;
    default:
      return TriggerType::kUnspecified;
  }
}

std::string AcceptedLine(const RunRequest& request, absl::string_view outcome) {
  const std::string what =
      IsScript(request.glue_type())
          ? absl::StrCat("script ", jobwheel::v1::GlueType_Name(request.glue_type()), " v",
                         request.script_version())
          : absl::StrCat("handler ", request.handler());
  return absl::StrCat(
      "run ", request.run_id(), " accepted: job ", request.job_id(), ", ", what, ", fire ",
      request.fire_id(), ", trigger ", TriggerTypeName(FromProtoTrigger(request.trigger_type())),
      ", attempt ", request.attempt(),
      request.shard_total() > 0
          ? absl::StrCat(", shard ", request.shard_index(), "/", request.shard_total())
          : "",
      "; ", outcome);
}

}  // namespace jobwheel::sdk
