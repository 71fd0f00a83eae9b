#include "services/console/grpc_backend_caller.h"

#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/auth/token_authenticator.h"
#include "common/grpc/grpc_status.h"

namespace jobwheel::console {

GrpcBackendCaller::GrpcBackendCaller(std::shared_ptr<grpc::Channel> scheduler,
                                     std::shared_ptr<grpc::Channel> registry,
                                     std::string proxy_token)
    : proxy_authorization_(proxy_token.empty() ? "" : "Bearer " + proxy_token),
      scheduler_(std::move(scheduler)),
      registry_(std::move(registry)) {}

absl::StatusOr<std::string> GrpcBackendCaller::Call(Backend backend, const std::string& grpc_path,
                                                    const std::string& request,
                                                    const std::string& authorization,
                                                    const std::string& client,
                                                    absl::Time deadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
  if (!proxy_authorization_.empty() && !client.empty()) {
    ctx.AddMetadata(kProxyAuthorizationMetadata, proxy_authorization_);
    ctx.AddMetadata(kForwardedClientMetadata, client);
  }
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  grpc::Status status;
  absl::Notification done;
  grpc::GenericStub& stub = backend == Backend::kRegistry ? registry_ : scheduler_;
  stub.UnaryCall(&ctx, grpc_path, grpc::StubOptions(), &request_buffer, &response_buffer,
                 [&status, &done](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  if (!status.ok()) return FromGrpcStatus(status);
  std::vector<grpc::Slice> slices;
  grpc::Status dumped = response_buffer.Dump(&slices);
  if (!dumped.ok()) return FromGrpcStatus(dumped);
  std::string response;
  response.reserve(response_buffer.Length());
  for (const grpc::Slice& s : slices) {
    response.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return response;
}

}  // namespace jobwheel::console
