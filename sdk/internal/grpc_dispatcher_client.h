#ifndef JOBWHEEL_SDK_INTERNAL_GRPC_DISPATCHER_CLIENT_H_
#define JOBWHEEL_SDK_INTERNAL_GRPC_DISPATCHER_CLIENT_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "sdk/internal/dispatcher_client.h"

namespace jobwheel::sdk {

// DispatcherClient over DispatcherService.ReportResults, with the executor token and a
// per-call deadline. Thread-safe.
class GrpcDispatcherClient : public DispatcherClient {
 public:
  GrpcDispatcherClient(std::unique_ptr<jobwheel::v1::DispatcherService::StubInterface> stub,
                       std::string executor_token, absl::Duration timeout = absl::Seconds(5),
                       const Clock& clock = RealClock::Get());

  absl::StatusOr<ReportAnswer> ReportResults(
      const std::vector<jobwheel::v1::RunResult>& results) override;

 private:
  std::unique_ptr<jobwheel::v1::DispatcherService::StubInterface> stub_;
  const std::string token_;
  const absl::Duration timeout_;
  const Clock& clock_;  // The calls' deadlines.
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_GRPC_DISPATCHER_CLIENT_H_
