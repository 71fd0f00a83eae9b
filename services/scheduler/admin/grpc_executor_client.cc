#include "services/scheduler/admin/grpc_executor_client.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/auth/bearer.h"
#include "common/grpc/grpc_status.h"
#include "common/model/instance_tag.h"

namespace jobwheel::scheduler::admin {

GrpcExecutorClient::GrpcExecutorClient(ClientTls tls, CallerTokenSigner* signer,
                                       GrpcExecutorClientOptions options, Clock& clock)
    : options_(options),
      signer_(signer),
      clock_(clock),
      stubs_(std::move(tls), static_cast<size_t>(std::max(options.max_channels, 1)),
             [](std::shared_ptr<grpc::Channel> channel) {
               return jobwheel::v1::ExecutorService::NewStub(channel);
             }) {}

absl::StatusOr<jobwheel::v1::KillResponse> GrpcExecutorClient::Kill(
    absl::string_view app, absl::string_view address, const jobwheel::v1::KillRequest& req) {
  auto stub = stubs_.Get(address);
  if (!stub.ok()) return stub.status();
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(clock_.Now() + options_.kill_deadline));
  if (absl::Status auth = AddCallerToken(ctx, signer_, ExecutorAudience(app, address)); !auth.ok())
    return auth;
  jobwheel::v1::KillResponse resp;
  grpc::Status s = (*stub)->Kill(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s);
  return resp;
}

absl::StatusOr<jobwheel::v1::LogResponse> GrpcExecutorClient::Log(
    absl::string_view app, absl::string_view address, const jobwheel::v1::LogRequest& req) {
  auto stub = stubs_.Get(address);
  if (!stub.ok()) return stub.status();
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(clock_.Now() + options_.log_deadline));
  if (absl::Status auth = AddCallerToken(ctx, signer_, ExecutorAudience(app, address)); !auth.ok())
    return auth;
  jobwheel::v1::LogResponse resp;
  grpc::Status s = (*stub)->Log(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s);
  return resp;
}

}  // namespace jobwheel::scheduler::admin
