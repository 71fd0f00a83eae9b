#ifndef JOBWHEEL_COMMON_GRPC_SERVER_H_
#define JOBWHEEL_COMMON_GRPC_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel {

// Transport security for a server: plaintext when cert_file is empty.
struct ServerTls {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // When set, clients must present a certificate signed by it.
};

// Builds and starts a server on `address` with the given services, the standard health
// service and server reflection. `bound_port` (optional) receives the port actually bound,
// for address ":0" in tests.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartGrpcServer(
    const std::string& address, const std::vector<grpc::Service*>& services,
    const ServerTls& tls = {}, int* bound_port = nullptr);

// Client credentials matching ServerTls on the other side: insecure when ca_file is empty.
struct ClientTls {
  std::string ca_file;
  std::string cert_file;  // For mutual TLS.
  std::string key_file;
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientTls& tls = {});

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_GRPC_SERVER_H_
