#ifndef JOBWHEEL_SERVICES_CONSOLE_CONNECT_GATEWAY_H_
#define JOBWHEEL_SERVICES_CONSOLE_CONNECT_GATEWAY_H_

#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/auth/failed_auth_limiter.h"
#include "common/base/lru_map.h"
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
  // Content-Encoding: the HTTP layer refuses every coding but identity before it reads a
  // body (an inflated body could be many times the size limit), so this is empty or identity.
  std::string content_encoding;
  std::string client;  // The caller's IP address: its failed-authentication budget.
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
// encodes the response or a Connect error. Each client (IP) may fail authentication
// `failed_auth.burst` times and then `failed_auth.per_second` times a second; over that, a call
// with a token the gateway has not seen accepted is refused RESOURCE_EXHAUSTED without reaching
// a backend, so one client's junk tokens do not spend the budget the backends keep for the
// console. Thread-safe.
class ConnectGateway {
 public:
  struct Options {
    absl::Duration request_timeout = absl::Seconds(10);  // Upper bound per backend call.
    size_t max_body_bytes = 1 << 20;
    FailedAuthLimiter::Options failed_auth;
    size_t max_known_tokens = 10000;  // Tokens seen accepted (SHA-256 only; LRU).
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

  // Whether a backend has accepted the token of `authorization` (by its hash) lately.
  bool Known(const std::string& hash) const;
  void SetKnown(const std::string& hash, bool known) const;

  const RouteTable& routes_;
  BackendCaller& backend_;
  const Clock& clock_;
  const Options options_;
  mutable FailedAuthLimiter limiter_;
  mutable absl::Mutex mu_;
  mutable LruMap<std::string, bool> known_tokens_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_CONNECT_GATEWAY_H_
