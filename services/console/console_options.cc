#include "services/console/console_options.h"

namespace jobwheel::console {

absl::Status ConsoleOptions::Validate() const {
  if (listen.empty()) return absl::InvalidArgumentError("--listen: must not be empty");
  if (scheduler_target.empty() || registry_target.empty()) {
    return absl::InvalidArgumentError("--scheduler_target, --registry_target: required");
  }
  if (max_body_bytes < 1024 || max_body_bytes > (int64_t{64} << 20)) {
    return absl::InvalidArgumentError("--max_body_bytes: must be between 1024 and 64 MiB");
  }
  if (max_concurrent_requests < 1 || max_concurrent_requests > 4096) {
    return absl::InvalidArgumentError("--max_concurrent_requests: must be between 1 and 4096");
  }
  for (absl::Duration d : {request_timeout, read_timeout, write_timeout, ready_timeout}) {
    if (d <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(
          "--request_timeout, --read_timeout, --write_timeout, --ready_timeout: must be "
          "positive");
    }
  }
  if (drain_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain_delay: must not be negative");
  }
  if (max_connections < 1 || max_connections > 4096) {
    return absl::InvalidArgumentError("--max_connections: must be between 1 and 4096");
  }
  if (max_connections_per_client < 1 || max_connections_per_client > max_connections) {
    return absl::InvalidArgumentError(
        "--max_connections_per_client: must be between 1 and --max_connections");
  }
  if (failed_auth_burst < 1 || failed_auth_per_second <= 0) {
    return absl::InvalidArgumentError(
        "--failed_auth_burst, --failed_auth_per_second: must be at least 1 and positive");
  }
  if (keep_alive_timeout < absl::Seconds(1)) {
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
