#ifndef JOBWHEEL_SERVICES_DISPATCHER_REQUEST_VALIDATION_H_
#define JOBWHEEL_SERVICES_DISPATCHER_REQUEST_VALIDATION_H_

#include <cstddef>

#include "absl/status/status.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::dispatcher {

// The checks DispatcherService makes before any work is queued: a bad request gets
// INVALID_ARGUMENT naming the field ("fires[3].job.handler: ..."), and the Dispatcher only
// sees requests that passed.
struct RequestLimits {
  size_t max_fires_per_call = 1000;
  size_t max_results_per_call = 10000;
};

// Each fire: fire_id and job.id positive, job.app set, job.handler set (unless a script),
// a valid manual shard, attempt not negative.
absl::Status ValidateDispatchRequest(const v1::DispatchRequest& request,
                                     const RequestLimits& limits);
// Each result: run_id positive, a terminal status.
absl::Status ValidateReportResultsRequest(const v1::ReportResultsRequest& request,
                                          const RequestLimits& limits);

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_REQUEST_VALIDATION_H_
