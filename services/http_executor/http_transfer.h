#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_TRANSFER_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_TRANSFER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/net/ip_address.h"
#include "common/net/url.h"

namespace jobwheel::http_executor {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// One request of an HTTP job (one hop of its redirects).
struct HopRequest {
  std::string method;
  net::Url url;
  HeaderList headers;  // Secrets included: never log these values.
  std::string body;
};

// What came back.
struct HttpResponse {
  int status = 0;
  HeaderList headers;      // Of the final response (not of a 100 Continue).
  std::string body_head;   // The first TransferControl::body_head_bytes of the body.
  int64_t body_bytes = 0;  // Bytes of the body read.
  bool body_cut = false;   // Reading stopped at TransferControl::max_body_bytes.
  std::string connected_ip;

  // The first value of header `name` (case-insensitive), or "".
  std::string Header(absl::string_view name) const;
};

// How one transfer is bounded and which connections it may open.
struct TransferControl {
  absl::Time deadline = absl::InfiniteFuture();
  // Polled while the transfer runs (at least once a second); true aborts it (CANCELLED).
  std::function<bool()> cancelled;
  // Called for every address right before a connection to it is opened (after DNS): a
  // non-OK status refuses the connection and the transfer fails with that status.
  std::function<absl::Status(const net::IpAddress&)> allow_connect;
  size_t body_head_bytes = 1024;
  size_t max_body_bytes = 1 << 20;
  absl::Duration connect_timeout = absl::Seconds(10);
};

// Performs one HTTP request to `url` on exactly the addresses given (the pins: the name is
// not resolved again). Errors: PERMISSION_DENIED from allow_connect, DEADLINE_EXCEEDED at the
// deadline, CANCELLED when `cancelled` said so, UNAVAILABLE for network and TLS failures.
// The seam between the redirect and policy logic (HttpCaller) and libcurl (CurlTransfer).
class HttpTransfer {
 public:
  virtual ~HttpTransfer() = default;
  virtual absl::StatusOr<HttpResponse> Perform(const HopRequest& request,
                                               const std::vector<net::IpAddress>& pinned,
                                               const TransferControl& control) = 0;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_TRANSFER_H_
