#ifndef JOBWHEEL_SERVICES_CONSOLE_CONSOLE_OPTIONS_H_
#define JOBWHEEL_SERVICES_CONSOLE_CONSOLE_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/grpc/channel.h"
#include "services/console/connect_gateway.h"
#include "services/console/console_server.h"

namespace jobwheel::console {

// Everything the console's flags say, checked by Validate() before anything starts. The HTTP
// server's and the Connect gateway's settings are their own Options, handed over as they are.
struct ConsoleOptions {
  // --listen, --max_concurrent_requests, --max_body_bytes, the timeouts and connection caps.
  ConsoleServer::Options server;
  // --request_timeout, --failed_auth_burst, --failed_auth_per_second; its max_body_bytes is
  // the server's (OptionsFromFlags sets both from --max_body_bytes).
  ConnectGateway::Options gateway;
  std::string metrics_address;
  std::string scheduler_target;
  std::string registry_target;
  std::string web_root;
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
