#ifndef JOBWHEEL_SDK_INTERNAL_DISPATCHER_CLIENT_H_
#define JOBWHEEL_SDK_INTERNAL_DISPATCHER_CLIENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "jobwheel/v1/dispatcher.pb.h"

namespace jobwheel::sdk {

// Delivers run results to a dispatcher (the seam tests fake).
class DispatcherClient {
 public:
  virtual ~DispatcherClient() = default;
  // The run ids the dispatcher acknowledged (recorded durably, or already recorded).
  virtual absl::StatusOr<std::vector<int64_t>> ReportResults(
      const std::vector<jobwheel::v1::RunResult>& results) = 0;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_DISPATCHER_CLIENT_H_
