#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_SERVER_OPTIONS_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_SERVER_OPTIONS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/grpc/grpc_server.h"

namespace jobwheel::xxl {

// Everything main.cc reads from flags, checked by Validate() (each bad flag named).
struct GatewayServerOptions {
  std::string listen_http = "127.0.0.1:7190";
  std::string executor_ports;  // "FROM-TO".
  int port_from = 0;           // Set by Validate.
  int port_to = 0;
  std::string advertise_host = "127.0.0.1";
  std::string bind_host;  // Empty: advertise_host.
  std::string registry_target;
  std::string dispatcher_target;
  std::string state_dir;
  std::string script_apps;   // "a,b".
  std::string app_handlers;  // "app=h1|h2;app2=h3".
  std::string metrics_address;
  std::string dispatcher_public_key_file;
  std::string scheduler_public_key_file;
  bool insecure_dev = false;
  ServerTls server_tls;
  ClientTls client_tls;
  size_t max_body_bytes = 1 << 20;
  int http_threads = 64;
  int max_connections_per_client = 16;
  absl::Duration probe_interval = absl::Seconds(1);
  absl::Duration offline_after = absl::Seconds(2);
  absl::Duration call_timeout = absl::Seconds(3);
  absl::Duration drain_delay = absl::ZeroDuration();

  absl::Status Validate();
};

// "FROM-TO" → (from, to), 1 ≤ from ≤ to ≤ 65535.
absl::Status ParsePortRange(absl::string_view text, int* from, int* to);
// "a,b" → {a, b}.
std::set<std::string> ParseAppList(absl::string_view text);
// "app=h1|h2;app2=h3" → {app: [h1, h2], app2: [h3]}; INVALID_ARGUMENT naming --app_handlers.
absl::StatusOr<std::map<std::string, std::vector<std::string>>> ParseAppHandlers(
    absl::string_view text);

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_SERVER_OPTIONS_H_
