#ifndef JOBWHEEL_SERVICES_SCHEDULER_WEBHOOK_ALARM_H_
#define JOBWHEEL_SERVICES_SCHEDULER_WEBHOOK_ALARM_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/net/url.h"
#include "services/scheduler/alarm.h"

namespace jobwheel::scheduler {

// POSTs an alarm body as JSON to an https:// URL (the server's certificate verified against
// the system CAs, or `ca_file`, and its name against the host) or an http:// URL, with the
// alarm's key as the Idempotency-Key header; one try per Post (AlarmSender retries). The URL
// is operator configuration (a flag), never user input, and must name a host on the allowlist.
class WebhookAlarm : public AlarmPoster {
 public:
  struct Options {
    // PEM file of CA certificates to verify an https:// server against ("": the system CAs).
    std::string ca_file;
    // Bounds connecting, sending and waiting for the answer, each.
    absl::Duration timeout = absl::Seconds(5);
  };
  // INVALID_ARGUMENT unless url is http[s]://host[:port][/path] (common/net/url.h).
  static absl::StatusOr<std::unique_ptr<WebhookAlarm>> Create(const std::string& url,
                                                              Options options);
  // OK when the URL's host is on `allowlist`, a comma-separated list of "host" (any port) or
  // "host:port" entries (--alarm_webhook_allowlist; hosts compared in canonical spelling,
  // common/net/host_port.h; the port of a URL without one is 80 for http://, 443 for https://).
  // FAILED_PRECONDITION naming the host otherwise, also when the allowlist is empty: alarms never
  // go to a host the operator did not list.
  static absl::Status CheckAllowlist(const std::string& url, absl::string_view allowlist);

  absl::Status Post(const std::string& body, const std::string& idempotency_key) override;

 private:
  WebhookAlarm(net::Url url, Options options)
      : url_(std::move(url)), options_(std::move(options)) {}

  const net::Url url_;
  const Options options_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_WEBHOOK_ALARM_H_
