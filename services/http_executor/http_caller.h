#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_CALLER_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_CALLER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/net/outbound_policy.h"
#include "common/time/clock.h"
#include "services/http_executor/http_job_spec.h"
#include "services/http_executor/http_transfer.h"
#include "services/http_executor/resolver.h"

namespace jobwheel::http_executor {

// Makes an HTTP job's call: for the URL and for every redirect hop it checks the name with
// the outbound policy, resolves it itself, checks every address it resolved to (one refused
// address refuses the hop, so a name cannot mix an allowed and an internal address), pins
// the connection to those addresses, and lets the transfer check each connection again as
// it opens. Redirects (when the spec follows them, at most max_redirects): 301/302 turn a
// POST into a GET, 303 anything but HEAD into a GET (without the body), 307/308 keep both;
// a hop to another origin drops the secret headers and Authorization, Cookie and
// Proxy-Authorization. Thread-safe when its parts are.
class HttpCaller {
 public:
  struct Options {
    size_t body_head_bytes = 1024;
    size_t max_body_bytes = 1 << 20;
    absl::Duration connect_timeout = absl::Seconds(10);
  };
  // One line for the run's log (never a secret).
  using LogFn = std::function<void(absl::string_view line)>;

  HttpCaller(const net::OutboundPolicy& policy, Resolver& resolver, HttpTransfer& transfer,
             Clock& clock, Options options);

  struct Outcome {
    HttpResponse response;
    net::Url url;  // Of the last hop.
    int redirects = 0;
  };
  // `secret_headers` are the spec's secret headers with their values (sent, never logged).
  // `deadline`: the spec's timeout from now, or earlier. Errors: PERMISSION_DENIED naming the
  // rule (prefixed "redirect N to URL: " for a hop), DEADLINE_EXCEEDED, CANCELLED,
  // UNAVAILABLE or NOT_FOUND (DNS, network), FAILED_PRECONDITION for a bad redirect.
  absl::StatusOr<Outcome> Call(const HttpJobSpec& spec, const HeaderList& secret_headers,
                               absl::Time deadline, std::function<bool()> cancelled,
                               const LogFn& log);

 private:
  // The addresses `url` may be connected to, after the policy checks.
  absl::StatusOr<std::vector<net::IpAddress>> Admit(const net::Url& url);

  const net::OutboundPolicy& policy_;
  Resolver& resolver_;
  HttpTransfer& transfer_;
  Clock& clock_;
  const Options options_;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_CALLER_H_
