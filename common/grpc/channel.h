#ifndef JOBWHEEL_COMMON_GRPC_CHANNEL_H_
#define JOBWHEEL_COMMON_GRPC_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel {

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

// A channel to `target` (one address, several comma-separated ones, or a DNS name: calls are
// balanced round robin) with the suite's keepalive and reconnect settings.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientTls& tls = {});

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_GRPC_CHANNEL_H_
