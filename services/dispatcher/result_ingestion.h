#ifndef JOBWHEEL_SERVICES_DISPATCHER_RESULT_INGESTION_H_
#define JOBWHEEL_SERVICES_DISPATCHER_RESULT_INGESTION_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "common/base/log_rate_limiter.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/outcome_writer.h"

namespace jobwheel::dispatcher {

// ReportResults: records the executors' terminal results idempotently, in one store call per
// report. A result reported twice in one call counts once; a message longer than
// `max_message_bytes` is stored cut (at a UTF-8 boundary) with " …(truncated)" appended, so one
// executor cannot fill the runs table. Held trigger answers of these runs (OutcomeWriter) ride
// along in the same write; the ones whose result was not recorded go back to the writer.
// Results of runs outside `scope` are neither recorded nor acknowledged. A result whose run
// has a result key hash is recorded only with its run's key (RunRequest.result_key); one with
// a missing or wrong key, or for a run that does not exist, is refused (refused_run_ids: the
// executor drops it), counted and logged (never with the key), the run untouched. Duplicates
// are acknowledged; a result for a run already decided with another status (e.g. LOST) is
// acknowledged and kept only as the run's late result. Retries and child jobs are not started here:
// the scheduler leader's monitors own them. Thread-safe.
class ResultIngestion {
 public:
  ResultIngestion(DispatchStore& store, OutcomeWriter& answers, DispatcherMetrics& metrics,
                  Clock& clock, size_t max_message_bytes);

  // `request` passed ValidateReportResultsRequest.
  absl::StatusOr<v1::ReportResultsResponse> Report(const v1::ReportResultsRequest& request,
                                                   const AppScope& scope);

 private:
  DispatchStore& store_;
  OutcomeWriter& answers_;
  DispatcherMetrics& metrics_;
  Clock& clock_;
  const size_t max_message_bytes_;
  // Refused results are logged once per reason per interval, with a count (whoever holds an
  // executor token cannot flood the log).
  LogRateLimiter refusal_log_{LogRateLimiter::Options(), clock_};
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_RESULT_INGESTION_H_
