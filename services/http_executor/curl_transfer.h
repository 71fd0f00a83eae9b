#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_CURL_TRANSFER_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_CURL_TRANSFER_H_

#include <string>
#include <vector>

#include "common/time/clock.h"
#include "services/http_executor/http_transfer.h"

namespace jobwheel::http_executor {

// HttpTransfer on libcurl: one easy handle per request (no connection reuse, so every
// connection passes allow_connect), the host pinned to the given addresses with
// CURLOPT_RESOLVE, every socket opened through CURLOPT_OPENSOCKETFUNCTION, which checks the
// address curl is about to connect to against the pins and allow_connect; no redirects
// followed by curl, http and https only, no proxy (the environment's *_proxy variables are
// ignored), certificates verified (against `ca_file` when set). A progress callback aborts
// the transfer at the deadline (read from `clock`) or when the run is cancelled.
// Thread-safe: each Perform uses its own handle.
class CurlTransfer : public HttpTransfer {
 public:
  struct Options {
    std::string ca_file;  // PEM CA bundle for https:// servers ("": the system's).
    std::string user_agent = "jobwheel-http-executor";
  };
  CurlTransfer(Options options, Clock& clock);

  absl::StatusOr<HttpResponse> Perform(const HopRequest& request,
                                       const std::vector<net::IpAddress>& pinned,
                                       const TransferControl& control) override;

 private:
  const Options options_;
  Clock& clock_;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_CURL_TRANSFER_H_
