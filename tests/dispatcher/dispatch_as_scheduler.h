#ifndef JOBWHEEL_TESTS_DISPATCHER_DISPATCH_AS_SCHEDULER_H_
#define JOBWHEEL_TESTS_DISPATCHER_DISPATCH_AS_SCHEDULER_H_

#include <chrono>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"

namespace jobwheel::dispatcher::testing {

// Calls DispatcherService.Dispatch as the scheduler does (with a scheduler token of `stack`,
// 20 s per call), retrying for up to `timeout` while the dispatcher answers UNAVAILABLE (not
// ready: no registry snapshot yet). The last call's error otherwise.
inline absl::StatusOr<v1::DispatchResponse> DispatchAsScheduler(
    const jobwheel::testing::Stack& stack, v1::DispatcherService::Stub& stub,
    const v1::DispatchRequest& req, absl::Duration timeout) {
  grpc::Status last;
  v1::DispatchResponse resp;
  const bool ok = jobwheel::testing::Eventually(
      [&] {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
        AddBearer(ctx, stack.CallerToken("scheduler", "dispatcher"));
        last = stub.Dispatch(&ctx, req, &resp);
        return last.error_code() != grpc::StatusCode::UNAVAILABLE;
      },
      timeout);
  if (!ok || !last.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(last.error_code()), last.error_message());
  }
  return resp;
}

}  // namespace jobwheel::dispatcher::testing

#endif  // JOBWHEEL_TESTS_DISPATCHER_DISPATCH_AS_SCHEDULER_H_
