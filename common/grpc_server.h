#ifndef JOBWHEEL_COMMON_GRPC_SERVER_H_
#define JOBWHEEL_COMMON_GRPC_SERVER_H_

#include <memory>
#include <string>
#include <utility>
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

  // A process's client TLS: without a client certificate of its own, its server certificate
  // doubles as one (a server that does not ask for a client certificate ignores it).
  static ClientTls WithServerFallback(std::string ca_file, std::string client_cert,
                                      std::string client_key, const std::string& server_cert,
                                      const std::string& server_key) {
    if (client_cert.empty() && client_key.empty()) {
      client_cert = server_cert;
      client_key = server_key;
    }
    return ClientTls{std::move(ca_file), std::move(client_cert), std::move(client_key)};
  }
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientTls& tls = {});

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_GRPC_SERVER_H_
