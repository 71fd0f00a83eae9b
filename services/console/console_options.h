#ifndef JOBWHEEL_SERVICES_CONSOLE_CONSOLE_OPTIONS_H_
#define JOBWHEEL_SERVICES_CONSOLE_CONSOLE_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/grpc/channel.h"

namespace jobwheel::console {

// Everything the console's flags say, checked by Validate() before anything starts.
struct ConsoleOptions {
  std::string listen;
  std::string metrics_address;
  std::string scheduler_target;
  std::string registry_target;
  std::string web_root;
  int64_t max_body_bytes = 0;
  int max_concurrent_requests = 0;
  absl::Duration request_timeout;
  absl::Duration read_timeout;
  absl::Duration write_timeout;
  absl::Duration keep_alive_timeout;
  int max_connections = 0;
  int max_connections_per_client = 0;
  // Failed authentications per client (IP) before the console stops forwarding its tokens.
  double failed_auth_burst = 0;
  double failed_auth_per_second = 0;
  std::string proxy_token_file;  // The console's own token: names each call's client.
  absl::Duration ready_timeout;
  // On SIGTERM: how long GET /readyz answers 503 (draining) before the server shuts down.
  absl::Duration drain_delay;
  ClientTls client_tls;

  // INVALID_ARGUMENT naming the flag of the first bad value.
  absl::Status Validate() const;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_CONSOLE_OPTIONS_H_
