#ifndef JOBWHEEL_SERVICES_CONSOLE_BACKEND_HEALTH_H_
#define JOBWHEEL_SERVICES_CONSOLE_BACKEND_HEALTH_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel::console {

// Asks each backend's grpc.health.v1 service whether it is SERVING (the console's /readyz).
// Thread-safe.
class BackendHealth {
 public:
  // (name, channel) pairs, e.g. {"scheduler", channel}.
  explicit BackendHealth(
      std::vector<std::pair<std::string, std::shared_ptr<grpc::Channel>>> backends);

  // OK when every backend answers SERVING before `deadline`; otherwise UNAVAILABLE naming the
  // first that does not and why.
  absl::Status Check(absl::Time deadline) const;

 private:
  const std::vector<std::pair<std::string, std::shared_ptr<grpc::Channel>>> backends_;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_BACKEND_HEALTH_H_
