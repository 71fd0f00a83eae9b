#ifndef JOBWHEEL_SDK_INTERNAL_SCRIPT_ENVIRONMENT_H_
#define JOBWHEEL_SDK_INTERNAL_SCRIPT_ENVIRONMENT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "jobwheel/v1/executor.pb.h"

namespace jobwheel::sdk {

// One NAME=value pair of a script's environment.
using EnvVar = std::pair<std::string, std::string>;

// The whole environment of a script job: never the executor's own. From the executor's
// environment only PATH (or a default), LANG, LC_ALL and TZ are kept; HOME, TMPDIR and PWD
// are the run's private work directory; then the run's `job_vars` (JOBWHEEL_*). Nothing
// else passes: no tokens, no token file paths, no JOBWHEEL_* settings of the executor, no
// credentials of the embedding service. `parent` is an environ-style array (may be null).
std::vector<std::string> ScriptEnvironment(const char* const* parent, absl::string_view work_dir,
                                           const std::vector<EnvVar>& job_vars);

// The JOBWHEEL_* variables a script of `run` sees: JOBWHEEL_PARAM, _JOB_ID, _RUN_ID,
// _FIRE_ID, _SHARD_INDEX, _SHARD_TOTAL, _ATTEMPT. The param is passed here, never in argv
// (readable by every local user) unless the executor keeps the legacy $1 $2 $3.
std::vector<EnvVar> ScriptJobVars(const jobwheel::v1::RunRequest& run);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_SCRIPT_ENVIRONMENT_H_
