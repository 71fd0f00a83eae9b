#ifndef JOBWHEEL_SDK_INTERNAL_RUN_RESULTS_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_RESULTS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"
#include "common/time/clock.h"
#include "jobwheel/result.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/result_sink.h"
#include "sdk/internal/run_state.h"

namespace jobwheel::sdk {

// "succeeded", "failed", "timed_out", "killed", "discarded", ...
absl::string_view RunStatusLabel(jobwheel::v1::RunStatus status);
// "SUCCEEDED", "FAILED", ... (the enum name without its prefix), as in the run logs.
std::string RunStatusName(jobwheel::v1::RunStatus status);

// Makes runs' results and hands them to the ResultSink (the reporter), counting them in the
// metrics. Every accepted run gets exactly one: the methods that make a result mark the run
// reported, under the RunManager's mutex (which guards RunState); Report is called without
// it. Thread-safe.
class RunResults {
 public:
  RunResults(ResultSink* sink, const Clock& clock, ExecutorMetrics& metrics,
             std::string executor_address);

  // The address copied into every RunResult (known once the server is bound).
  void SetExecutorAddress(const std::string& address);

  // The result of a cancelled run, from its token's reason (KILLED, TIMED_OUT, DISCARDED,
  // FAILED "executor shut down"); marks it reported and logs its end.
  jobwheel::v1::RunResult Cancelled(RunState& run);
  // The run's handler returned `result`: records its duration and returns its result unless
  // it was already reported (then the late result is logged as dropped). Sets *ended_line
  // to the run's "ended" log line when the caller is to write it (outside the lock).
  absl::optional<jobwheel::v1::RunResult> Concluded(RunState& run, const Result& result,
                                                    std::string* ended_line);

  void Report(const std::vector<jobwheel::v1::RunResult>& results);

 private:
  jobwheel::v1::RunResult Make(const RunState& run, jobwheel::v1::RunStatus status, int code,
                               const std::string& message) const;

  ResultSink* const sink_;
  const Clock& clock_;
  ExecutorMetrics& metrics_;
  mutable absl::Mutex mu_;
  std::string executor_address_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_RESULTS_H_
