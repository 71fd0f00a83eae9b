#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_RESULT_SINK_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_RESULT_SINK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"

namespace jobwheel::xxl {

struct ReportOutcome {
  std::vector<int64_t> acked;
  std::vector<int64_t> refused;  // Refused for good: never to be sent again.
};

// Delivers run results to the dispatchers with an identity's executor token (the seam tests
// fake).
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual absl::StatusOr<ReportOutcome> Report(
      const std::string& executor_token, const std::vector<jobwheel::v1::RunResult>& results) = 0;
};

// ResultSink over DispatcherService.ReportResults with a per-call deadline. Thread-safe.
class GrpcResultSink : public ResultSink {
 public:
  GrpcResultSink(std::unique_ptr<jobwheel::v1::DispatcherService::StubInterface> stub,
                 absl::Duration timeout)
      : stub_(std::move(stub)), timeout_(timeout) {}
  absl::StatusOr<ReportOutcome> Report(
      const std::string& executor_token,
      const std::vector<jobwheel::v1::RunResult>& results) override;

 private:
  const std::unique_ptr<jobwheel::v1::DispatcherService::StubInterface> stub_;
  const absl::Duration timeout_;
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_RESULT_SINK_H_
