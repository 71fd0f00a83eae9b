#ifndef JOBWHEEL_SERVICES_SCHEDULER_DISPATCH_CLIENT_H_
#define JOBWHEEL_SERVICES_SCHEDULER_DISPATCH_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/auth/caller_token.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"

namespace jobwheel::scheduler {

// Hands batches of fires to a dispatcher. Implementations are thread-safe.
class DispatchClient {
 public:
  virtual ~DispatchClient() = default;
  virtual absl::StatusOr<jobwheel::v1::DispatchResponse> Dispatch(
      const jobwheel::v1::DispatchRequest& request) = 0;
};

// Over gRPC; the channel balances calls over all dispatcher replicas (round_robin). Each call
// carries a token `signer` (the scheduler's key; not owned) made for audience "dispatcher";
// none without a signer (--insecure_dev). A call's deadline is `deadline` from `clock`'s now.
class GrpcDispatchClient : public DispatchClient {
 public:
  GrpcDispatchClient(std::shared_ptr<grpc::Channel> channel, CallerTokenSigner* signer,
                     Clock& clock, absl::Duration deadline = absl::Seconds(5));
  absl::StatusOr<jobwheel::v1::DispatchResponse> Dispatch(
      const jobwheel::v1::DispatchRequest& request) override;

 private:
  std::unique_ptr<jobwheel::v1::DispatcherService::StubInterface> stub_;
  Clock& clock_;
  const absl::Duration deadline_;
  CallerTokenSigner* const signer_;  // May be null.
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_DISPATCH_CLIENT_H_
