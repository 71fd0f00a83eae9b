#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_TRIGGER_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_TRIGGER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jobwheel/v1/executor.pb.h"
#include "services/xxl_gateway/xxl_protocol.h"

namespace jobwheel::xxl {

// The XXL /run (TriggerParam) of a jobwheel run for the executor of `app` and `instance`:
// logId = run id, executorTimeout = the timeout rounded up to whole seconds (0: none),
// broadcastIndex/Total from the shard (0/1 when none), glue type BEAN for handlers and
// GLUE_SHELL / GLUE_PYTHON for scripts when `allow_scripts`; logDateTime is left to the caller.
// FAILED_PRECONDITION with the reason when the executor must refuse the run: another app or
// instance, a job id above XXL's 32 bits, a glue type it may not run.
absl::StatusOr<Trigger> TriggerOf(const jobwheel::v1::RunRequest& req, absl::string_view app,
                                  absl::string_view instance, bool allow_scripts);

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_TRIGGER_H_
