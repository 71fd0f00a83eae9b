#ifndef JOBWHEEL_SDK_INTERNAL_DISPATCHER_CLIENT_H_
#define JOBWHEEL_SDK_INTERNAL_DISPATCHER_CLIENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "jobwheel/v1/dispatcher.pb.h"

namespace jobwheel::sdk {

// A dispatcher's answer to a ReportResults call.
struct ReportAnswer {
  // Recorded durably (or already recorded): done.
  std::vector<int64_t> acked;
  // Refused for good (no such run, or a missing or wrong result key): never recorded, however
  // often sent.
  std::vector<int64_t> refused;
};

// Delivers run results to a dispatcher (the seam tests fake).
class DispatcherClient {
 public:
  virtual ~DispatcherClient() = default;
  virtual absl::StatusOr<ReportAnswer> ReportResults(
      const std::vector<jobwheel::v1::RunResult>& results) = 0;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_DISPATCHER_CLIENT_H_
