#ifndef JOBWHEEL_SDK_INTERNAL_RUN_EXECUTION_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_EXECUTION_H_

#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "jobwheel/job_context.h"
#include "jobwheel/result.h"
#include "sdk/internal/run_state.h"
#include "sdk/internal/script_runner.h"

namespace jobwheel::sdk {

using HandlerFn = std::function<Result(JobContext&)>;
using HandlerMap = absl::flat_hash_map<std::string, HandlerFn>;

// Executes one run on the calling thread: logs "run <id> started", then calls `handler` with
// the run's JobContext (its request, cancellation token and log; an exception becomes a
// failure), or for a script run has `scripts` run it as a child process (exit code 0 is
// success). Returns what the handler or script returned. Reads only what does not change
// while the run runs (request, token, log, deadline): called without the RunManager's mutex.
Result ExecuteRun(const RunState& run, const HandlerFn& handler, ScriptRunner* scripts);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_EXECUTION_H_
