#ifndef JOBWHEEL_SDK_INTERNAL_RUN_REQUEST_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_REQUEST_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jobwheel/job_context.h"
#include "jobwheel/v1/executor.pb.h"

namespace jobwheel::sdk {

// INVALID_ARGUMENT "<field>: <problem>" for a malformed run request.
absl::Status ValidateRunRequest(const jobwheel::v1::RunRequest& request);

TriggerType FromProtoTrigger(jobwheel::v1::TriggerType trigger);

// The log line of an accepted run: "run <id> accepted: job <job>, handler <name>, fire <f>,
// trigger <t>, attempt <a>[, shard <i>/<n>]; <outcome>".
std::string AcceptedLine(const jobwheel::v1::RunRequest& request, absl::string_view outcome);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_REQUEST_H_
