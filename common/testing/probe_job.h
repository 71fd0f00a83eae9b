#ifndef JOBWHEEL_COMMON_TESTING_PROBE_JOB_H_
#define JOBWHEEL_COMMON_TESTING_PROBE_JOB_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/testing/stack.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"

namespace jobwheel::testing {

// Waits until the dispatcher routes to the stack's executors `executors`: creates a probe job
// (app "demo", handler "echo", no schedule, `routing`) through `admin` and triggers it, each
// fire handed off (dispatched or failed) before the next, until every one of `executors` has
// started it. Returns the probe job's id (tests leave its runs out of their counts);
// DEADLINE_EXCEEDED after `timeout`.
absl::StatusOr<int64_t> RouteProbeJob(
    const Stack& stack, jobwheel::v1::JobAdminService::Stub& admin,
    const std::vector<int>& executors,
    jobwheel::v1::RoutingStrategy routing = jobwheel::v1::ROUTING_STRATEGY_UNSPECIFIED,
    absl::Duration timeout = absl::Seconds(30));

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_PROBE_JOB_H_
