#ifndef JOBWHEEL_SERVICES_DISPATCHER_EXECUTOR_CLIENTS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_EXECUTOR_CLIENTS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "jobwheel/v1/executor.pb.h"

namespace jobwheel::dispatcher {

// The calls the dispatcher makes on executors, by app and address. Implementations set the
// deadline and a caller token for the executor (audience "<app>@<address>": an executor of
// another app at that address refuses it); tests substitute fakes. Thread-safe.
class ExecutorClients {
 public:
  virtual ~ExecutorClients() = default;
  // ExecutorService.RunBatch without blocking the calling thread: `done` gets the answer (or
  // the call's error) exactly once, possibly on another thread (or on this one, before
  // RunBatchAsync returns).
  using RunBatchCallback = std::function<void(absl::StatusOr<v1::RunBatchResponse>)>;
  virtual void RunBatchAsync(absl::string_view app, absl::string_view address,
                             v1::RunBatchRequest request, absl::Duration deadline,
                             RunBatchCallback done) = 0;
  // OK when the executor answered.
  virtual absl::Status Beat(absl::string_view app, absl::string_view address,
                            absl::Duration deadline) = 0;
  virtual absl::StatusOr<v1::IdleBeatResponse> IdleBeat(absl::string_view app,
                                                        absl::string_view address, int64_t job_id,
                                                        absl::Duration deadline) = 0;
  // ExecutorService.GetRuns (blocking): what the executor knows of the runs, fencing the
  // unseen ones when request.fence() (see TriggerResolver).
  virtual absl::StatusOr<v1::GetRunsResponse> GetRuns(absl::string_view app,
                                                      absl::string_view address,
                                                      const v1::GetRunsRequest& request,
                                                      absl::Duration deadline) = 0;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_EXECUTOR_CLIENTS_H_
