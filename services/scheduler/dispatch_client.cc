#include "services/scheduler/dispatch_client.h"

#include "common/auth/bearer.h"
#include "common/grpc/grpc_status.h"

namespace jobwheel::scheduler {

GrpcDispatchClient::GrpcDispatchClient(std::shared_ptr<grpc::Channel> channel,
                                       CallerTokenSigner* signer, Clock& clock,
                                       absl::Duration deadline)
    : stub_(jobwheel::v1::DispatcherService::NewStub(std::move(channel))),
      clock_(clock),
      deadline_(deadline),
      signer_(signer) {}

absl::StatusOr<jobwheel::v1::DispatchResponse> GrpcDispatchClient::Dispatch(
    const jobwheel::v1::DispatchRequest& request) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(clock_.Now() + deadline_));
  if (absl::Status auth = AddCallerToken(ctx, signer_, kAudienceDispatcher); !auth.ok()) {
    return auth;
  }
  jobwheel::v1::DispatchResponse response;
  grpc::Status s = stub_->Dispatch(&ctx, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

}  // namespace jobwheel::scheduler
