#ifndef JOBWHEEL_SERVICES_CONSOLE_BACKEND_CALLER_H_
#define JOBWHEEL_SERVICES_CONSOLE_BACKEND_CALLER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/console/route_table.h"

namespace jobwheel::console {

// Calls one unary method on a backend with an already serialized request (the seam between
// the gateway and gRPC, so tests substitute it).
class BackendCaller {
 public:
  virtual ~BackendCaller() = default;

  // Sends `request` to `grpc_path` ("/jobwheel.v1.JobAdminService/ListJobs") on `backend`
  // with `authorization` (when non-empty) as the call's authorization metadata, unchanged, for
  // `client` (the caller's IP, forwarded when the console has a proxy token).
  // Returns the serialized response or the backend's status, code and message intact.
  virtual absl::StatusOr<std::string> Call(Backend backend, const std::string& grpc_path,
                                           const std::string& request,
                                           const std::string& authorization,
                                           const std::string& client, absl::Time deadline) = 0;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_BACKEND_CALLER_H_
