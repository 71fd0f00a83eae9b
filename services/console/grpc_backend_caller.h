#ifndef JOBWHEEL_SERVICES_CONSOLE_GRPC_BACKEND_CALLER_H_
#define JOBWHEEL_SERVICES_CONSOLE_GRPC_BACKEND_CALLER_H_

#include <memory>
#include <string>

#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "services/console/backend_caller.h"

namespace jobwheel::console {

// BackendCaller over gRPC's GenericStub: bytes in, bytes out, no generated stubs, so any
// method of the descriptor pool can be called. One long-lived channel per backend.
// Thread-safe; blocks the calling thread until the call ends. With a proxy token, each call
// also carries the caller's IP (jobwheel-client) and the token (jobwheel-proxy-authorization),
// so the backends count failed authentications per console client, not for the console.
class GrpcBackendCaller : public BackendCaller {
 public:
  GrpcBackendCaller(std::shared_ptr<grpc::Channel> scheduler,
                    std::shared_ptr<grpc::Channel> registry, std::string proxy_token = "");

  absl::StatusOr<std::string> Call(Backend backend, const std::string& grpc_path,
                                   const std::string& request, const std::string& authorization,
                                   const std::string& client, absl::Time deadline) override;

 private:
  const std::string proxy_authorization_;  // "Bearer <proxy token>", or empty.
  grpc::GenericStub scheduler_;
  grpc::GenericStub registry_;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_GRPC_BACKEND_CALLER_H_
