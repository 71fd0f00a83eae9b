#ifndef JOBWHEEL_COMMON_MODEL_PROTO_ENUMS_H_
#define JOBWHEEL_COMMON_MODEL_PROTO_ENUMS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "jobwheel/v1/token_admin.pb.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel {

// The one definition of what the model's enums mean, shared by every service and the SDK.

// A script job (shell or python): runs only on executors that opted in to scripts.
bool IsScript(v1::GlueType glue);

// A run that will not change any more: SUCCEEDED, FAILED, TIMED_OUT, KILLED, LOST, DISCARDED.
bool IsTerminal(v1::RunStatus status);

// PENDING or RUNNING (UNSPECIFIED is neither open nor terminal).
bool IsOpen(v1::RunStatus status);

// An enum value's name without its type prefix: "SUCCEEDED" for RUN_STATUS_SUCCEEDED,
// "SCRIPT_SHELL" for GLUE_TYPE_SCRIPT_SHELL. `full_name` is the generated *_Name() text; a
// name without the prefix is returned as it is.
std::string ShortEnumName(absl::string_view full_name, absl::string_view prefix);

std::string RunStatusShortName(v1::RunStatus status);
std::string TriggerTypeShortName(v1::TriggerType type);
std::string RoleShortName(v1::Role role);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_MODEL_PROTO_ENUMS_H_
