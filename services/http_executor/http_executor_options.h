#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_EXECUTOR_OPTIONS_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_EXECUTOR_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/net/outbound_policy.h"

namespace jobwheel::http_executor {

// The HTTP executor's own settings (its flags; the SDK's are jobwheel::ExecutorOptions).
struct HttpExecutorOptions {
  // Outbound policy (common/net/outbound_policy.h): --allow_hosts, --allow_cidrs,
  // --allow_ports, --allow_public.
  std::string allow_hosts;
  std::string allow_cidrs;
  std::string allow_ports = "80,443";
  bool allow_public = true;
  // Where secret headers may come from (secret_source.h): --secret_dir (an absolute path of
  // an existing directory, or empty), --secret_env_prefix (e.g. JOBWHEEL_HTTP_SECRET_: upper
  // case letters, digits and _, ending in _, at least 4 characters, not JOBWHEEL_ alone).
  std::string secret_dir;
  std::string secret_env_prefix;
  // PEM CA bundle for https:// servers; empty: the system's CAs.
  std::string ca_file;
  // A response body is read up to this many bytes (then reading stops; the status counts).
  int64_t max_response_bytes = 1 << 20;
  absl::Duration connect_timeout = absl::Seconds(10);

  // INVALID_ARGUMENT naming the first bad flag.
  absl::Status Validate() const;
  // The policy the flags describe (Validate first).
  absl::StatusOr<net::OutboundPolicyOptions> PolicyOptions() const;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_EXECUTOR_OPTIONS_H_
