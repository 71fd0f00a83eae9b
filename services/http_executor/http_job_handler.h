#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_JOB_HANDLER_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_JOB_HANDLER_H_

#include "common/time/clock.h"
#include "jobwheel/job_context.h"
#include "jobwheel/result.h"
#include "services/http_executor/http_caller.h"
#include "services/http_executor/http_executor_metrics.h"
#include "services/http_executor/secret_source.h"

namespace jobwheel::http_executor {

// The `http` handler: parses the run's param as an HTTP job spec, reads its secret headers,
// makes the call (HttpCaller) bounded by the spec's timeout and aborted when the run is
// cancelled (killed, or timed out by the SDK at the job's own timeout), and writes to the run's log
// each hop, the status, the response headers (Set-Cookie values hidden) and the first KiB of the
// body. Succeeds when the final status is an expected one. Failure codes: 400 bad spec or secret,
// 403 refused by the outbound policy, 502 timed out, 500 otherwise. Thread-safe.
class HttpJobHandler {
 public:
  HttpJobHandler(HttpCaller& caller, const SecretSource& secrets, HttpExecutorMetrics& metrics,
                 Clock& clock);

  jobwheel::Result Run(jobwheel::JobContext& ctx);

 private:
  jobwheel::Result Finish(jobwheel::JobContext& ctx, const HttpJobSpec& spec,
                          const absl::StatusOr<HttpCaller::Outcome>& outcome);

  HttpCaller& caller_;
  const SecretSource& secrets_;
  HttpExecutorMetrics& metrics_;
  Clock& clock_;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_JOB_HANDLER_H_
