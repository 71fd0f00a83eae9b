#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_EXECUTOR_CLIENT_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_EXECUTOR_CLIENT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jobwheel/v1/executor.pb.h"

namespace jobwheel::scheduler::admin {

// The ExecutorService calls JobAdmin makes on one executor, by app and address.
// Implementations set deadlines and a caller token for "<app>@<address>"; a call that did not get
// an answer is an error status (UNAVAILABLE, DEADLINE_EXCEEDED, ...). Callers pass only addresses
// they found registered in the executors table. Thread-safe.
class ExecutorClient {
 public:
  virtual ~ExecutorClient() = default;
  virtual absl::StatusOr<jobwheel::v1::KillResponse> Kill(absl::string_view app,
                                                          absl::string_view address,
                                                          const jobwheel::v1::KillRequest& req) = 0;
  virtual absl::StatusOr<jobwheel::v1::LogResponse> Log(absl::string_view app,
                                                        absl::string_view address,
                                                        const jobwheel::v1::LogRequest& req) = 0;
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_EXECUTOR_CLIENT_H_
