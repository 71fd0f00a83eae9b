#ifndef JOBWHEEL_SERVICES_CONSOLE_CONNECT_GATEWAY_H_
#define JOBWHEEL_SERVICES_CONSOLE_CONNECT_GATEWAY_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "services/console/backend_caller.h"
#include "services/console/route_table.h"

namespace jobwheel::console {

// One unary Connect request, as the HTTP layer hands it over (headers it did not get: empty).
struct ConnectRequest {
  std::string path;          // "/jobwheel.v1.JobAdminService/ListJobs"
  std::string content_type;  // "application/json; charset=utf-8"
  std::string body;
  std::string authorization;     // Forwarded unchanged; never logged.
  std::string timeout_ms;        // The connect-timeout-ms header.
  std::string protocol_version;  // The connect-protocol-version header.
  // Content-Encoding. The HTTP layer (cpp-httplib) has already decoded gzip, deflate and br
  // bodies; any other coding reached us undecoded.
  std::string content_encoding;
};

// The answer: a message (status 200) or a Connect error body.
struct ConnectResponse {
  int http_status = 200;
  std::string content_type;
  std::string body;
  absl::Status status;  // What the body says; OK with a message.
  std::string service;  // For metrics and logs: "JobAdminService", or "unknown".
  std::string method;   // "ListJobs", or "unknown".
};

// The Connect protocol's unary JSON and binary-proto codecs over the route table: decodes
// the request with the method's generated message type (proto3 JSON mapping, unknown fields
// refused), calls the backend through BackendCaller with the caller's authorization, and
// encodes the response or a Connect error. Holds no state per call; thread-safe.
class ConnectGateway {
 public:
  struct Options {
    absl::Duration request_timeout = absl::Seconds(10);  // Upper bound per backend call.
    size_t max_body_bytes = 1 << 20;
  };

  ConnectGateway(const RouteTable& routes, BackendCaller& backend, const Clock& clock,
                 Options options);

  ConnectResponse Handle(const ConnectRequest& request) const;

 private:
  enum class Codec { kJson, kProto };

  // The codec of a Content-Type; UNIMPLEMENTED (HTTP 415 by the caller) if not ours.
  static absl::StatusOr<Codec> ParseContentType(absl::string_view content_type);
  // The call's deadline: now + min(connect-timeout-ms, request_timeout).
  absl::StatusOr<absl::Time> Deadline(absl::string_view timeout_ms) const;

  const RouteTable& routes_;
  BackendCaller& backend_;
  const Clock& clock_;
  const Options options_;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_CONNECT_GATEWAY_H_
