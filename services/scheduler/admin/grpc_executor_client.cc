#include "services/scheduler/admin/grpc_executor_client.h"

#include <chrono>
#include <utility>

#include "common/auth/bearer.h"
#include "common/grpc/grpc_status.h"

namespace jobwheel::scheduler::admin {

GrpcExecutorClient::GrpcExecutorClient(ClientTls tls, CallerTokenSigner* signer,
                                       GrpcExecutorClientOptions options, Clock& clock)
    : tls_(std::move(tls)), options_(options), signer_(signer), clock_(clock) {}

absl::StatusOr<std::shared_ptr<jobwheel::v1::ExecutorService::StubInterface>>
GrpcExecutorClient::Stub(absl::string_view address) {
  absl::MutexLock lock(&mu_);
  auto it = stubs_.find(address);
  if (it != stubs_.end()) return it->second;
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(std::string(address), tls_);
  if (!channel.ok()) return channel.status();
  if (static_cast<int>(stubs_.size()) >= options_.max_channels) stubs_.clear();
  std::shared_ptr<jobwheel::v1::ExecutorService::StubInterface> stub =
      jobwheel::v1::ExecutorService::NewStub(*channel);
  stubs_.emplace(std::string(address), stub);
  return stub;
}

absl::StatusOr<jobwheel::v1::KillResponse> GrpcExecutorClient::Kill(
    absl::string_view address, const jobwheel::v1::KillRequest& req) {
  auto stub = Stub(address);
  if (!stub.ok()) return stub.status();
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(clock_.Now() + options_.kill_deadline));
  if (absl::Status auth = AddCallerToken(ctx, signer_, address); !auth.ok()) return auth;
  jobwheel::v1::KillResponse resp;
  grpc::Status s = (*stub)->Kill(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s);
  return resp;
}

absl::StatusOr<jobwheel::v1::LogResponse> GrpcExecutorClient::Log(
    absl::string_view address, const jobwheel::v1::LogRequest& req) {
  auto stub = Stub(address);
  if (!stub.ok()) return stub.status();
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(clock_.Now() + options_.log_deadline));
  if (absl::Status auth = AddCallerToken(ctx, signer_, address); !auth.ok()) return auth;
  jobwheel::v1::LogResponse resp;
  grpc::Status s = (*stub)->Log(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s);
  return resp;
}

}  // namespace jobwheel::scheduler::admin
