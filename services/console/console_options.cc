#include "services/console/console_options.h"

namespace jobwheel::console {

absl::Status ConsoleOptions::Validate() const {
  if (server.listen.empty()) return absl::InvalidArgumentError("--listen: must not be empty");
  if (scheduler_target.empty() || registry_target.empty()) {
    return absl::InvalidArgumentError("--scheduler_target, --registry_target: required");
  }
  if (server.max_body_bytes < 1024 || server.max_body_bytes > (size_t{64} << 20) ||
      gateway.max_body_bytes != server.max_body_bytes) {
    return absl::InvalidArgumentError("--max_body_bytes: must be between 1024 and 64 MiB");
  }
  if (server.max_concurrent_requests < 1 || server.max_concurrent_requests > 4096) {
    return absl::InvalidArgumentError("--max_concurrent_requests: must be between 1 and 4096");
  }
  for (absl::Duration d :
       {gateway.request_timeout, server.read_timeout, server.write_timeout, ready_timeout}) {
    if (d <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(
          "--request_timeout, --read_timeout, --write_timeout, --ready_timeout: must be "
          "positive");
    }
  }
  if (drain_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain_delay: must not be negative");
  }
  if (server.max_connections < 1 || server.max_connections > 4096) {
    return absl::InvalidArgumentError("--max_connections: must be between 1 and 4096");
  }
  if (server.max_connections_per_client < 1 ||
      server.max_connections_per_client > server.max_connections) {
    return absl::InvalidArgumentError(
        "--max_connections_per_client: must be between 1 and --max_connections");
  }
  if (gateway.failed_auth.burst < 1 || gateway.failed_auth.per_second <= 0) {
    return absl::InvalidArgumentError(
        "--failed_auth_burst, --failed_auth_per_second: must be at least 1 and positive");
  }
  if (server.keep_alive_timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError("--keep_alive_timeout: must be at least 1s");
  }
  if (client_tls.cert_file.empty() != client_tls.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_client_cert and --tls_client_key go together");
  }
  if (!client_tls.cert_file.empty() && client_tls.ca_file.empty()) {
    return absl::InvalidArgumentError("--tls_client_cert needs --tls_ca");
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::console
