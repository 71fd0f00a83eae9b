#include "sdk/internal/run_results.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"

namespace jobwheel::sdk {
namespace {

using jobwheel::v1::RunResult;
using jobwheel::v1::RunStatus;

std::string EndedLine(const RunResult& r) {
  return absl::StrCat("run ", r.run_id(), " ended: ", RunStatusName(r.status()), " (code ",
                      r.code(), ") ", r.message());
}

}  // namespace

std::string RunStatusName(RunStatus s) { return RunStatusShortName(s); }

absl::string_view RunStatusLabel(RunStatus status) {
  switch (status) {
    case jobwheel::v1::RUN_STATUS_SUCCEEDED:
      return "succeeded";
    case jobwheel::v1::RUN_STATUS_FAILED:
      return "failed";
    case jobwheel::v1::RUN_STATUS_TIMED_OUT:
      return "timed_out";
    case jobwheel::v1::RUN_STATUS_KILLED:
      return "killed";
    case jobwheel::v1::RUN_STATUS_LOST:
      return "lost";
    case jobwheel::v1::RUN_STATUS_DISCARDED:
      return "discarded";
    default:
      return "other";
  }
}

RunResults::RunResults(ResultSink* sink, const Clock& clock, ExecutorMetrics& metrics,
                       std::string executor_address)
    : sink_(sink),
      clock_(clock),
      metrics_(metrics),
      executor_address_(std::move(executor_address)) {}

void RunResults::SetExecutorAddress(const std::string& address) {
  absl::MutexLock lock(&mu_);
  executor_address_ = address;
}

RunResult RunResults::Make(const RunState& run, RunStatus status, int code,
                           const std::string& message) const {
  RunResult r;
  r.set_run_id(run.run_id());
  r.set_status(status);
  r.set_code(code);
  r.set_message(message);
  // The run's key from its RunRequest: the dispatcher records the result only with it.
  r.set_result_key(run.request.result_key());
  if (run.started != absl::InfinitePast()) *r.mutable_start_time() = ToProto(run.started);
  *r.mutable_end_time() = ToProto(clock_.Now());
  absl::MutexLock lock(&mu_);
  r.set_executor_address(executor_address_);
  return r;
}

RunResult RunResults::Cancelled(RunState& run) {
  run.reported = true;
  const std::string message = run.token->message();
  RunResult r;
  switch (run.token->reason()) {
    case CancelReason::kKilled:
      r = Make(run, jobwheel::v1::RUN_STATUS_KILLED, Result::kFailCode, message);
      break;
    case CancelReason::kTimedOut:
      r = Make(run, jobwheel::v1::RUN_STATUS_TIMED_OUT, Result::kTimeoutCode, message);
      break;
    case CancelReason::kCovered:
      r = Make(run, jobwheel::v1::RUN_STATUS_DISCARDED, Result::kFailCode, message);
      break;
    case CancelReason::kShutdown:
    case CancelReason::kNone:
      r = Make(run, jobwheel::v1::RUN_STATUS_FAILED, Result::kFailCode, "executor shut down");
      break;
  }
  run.Log(EndedLine(r));
  return r;
}

absl::optional<RunResult> RunResults::Concluded(RunState& run, const Result& result,
                                                std::string* ended_line) {
  const absl::Time now = clock_.Now();
  if (run.started != absl::InfinitePast()) {
    metrics_.run_duration_seconds.Observe(absl::ToDoubleSeconds(now - run.started));
  }
  if (run.reported) {
    run.Log(absl::StrCat("handler returned after the run was reported; its result (",
                         result.ok() ? "ok" : "fail", ", code ", result.code(), ") ",
                         result.message(), " is dropped"));
    return absl::nullopt;
  }
  if (run.token->cancelled()) return Cancelled(run);
  run.reported = true;
  RunResult r =
      Make(run, result.ok() ? jobwheel::v1::RUN_STATUS_SUCCEEDED : jobwheel::v1::RUN_STATUS_FAILED,
           result.code(), result.message());
  *ended_line = EndedLine(r);
  return r;
}

void RunResults::Report(const std::vector<RunResult>& results) {
  for (const RunResult& r : results) {
    metrics_.RunsTotal(RunStatusLabel(r.status())).Increment();
    sink_->Submit(r);
  }
}

}  // namespace jobwheel::sdk
