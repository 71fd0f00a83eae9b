#include "services/scheduler/dispatch_client.h"

#include "common/auth.h"
#include "common/grpc_status.h"

namespace jobwheel::scheduler {

GrpcDispatchClient::GrpcDispatchClient(std::shared_ptr<grpc::Channel> channel,
                                       std::string cluster_token, absl::Duration deadline,
                                       CallerTokenSigner* signer)
    : stub_(jobwheel::v1::DispatcherService::NewStub(std::move(channel))),
      token_(std::move(cluster_token)),
      deadline_(deadline),
      signer_(signer) {}

absl::StatusOr<jobwheel::v1::DispatchResponse> GrpcDispatchClient::Dispatch(
    const jobwheel::v1::DispatchRequest& request) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline_));
  if (signer_ != nullptr) {
    absl::Status auth = AddCallerToken(ctx, signer_, kAudienceDispatcher);
    if (!auth.ok()) return auth;
  } else {
    AddBearer(ctx, token_);
  }
  jobwheel::v1::DispatchResponse response;
  grpc::Status s = stub_->Dispatch(&ctx, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

}  // namespace jobwheel::scheduler
