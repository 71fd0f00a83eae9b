#ifndef JOBWHEEL_SERVICES_SCHEDULER_WEBHOOK_ALARM_H_
#define JOBWHEEL_SERVICES_SCHEDULER_WEBHOOK_ALARM_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "services/scheduler/alarm.h"

namespace jobwheel::scheduler {

// POSTs each alarm as JSON to an http:// URL, retrying a few times (waiting on `clock` between
// tries). The URL is operator configuration (a flag), never user input.
class WebhookAlarm : public Alarm {
 public:
  // INVALID_ARGUMENT unless url is http://host[:port][/path].
  static absl::StatusOr<std::unique_ptr<WebhookAlarm>> Create(const std::string& url, Clock& clock,
                                                              int attempts = 3);
  // OK when the URL's host is on `allowlist`, a comma-separated list of "host" (any port) or
  // "host:port" entries (--alarm_webhook_allowlist; hosts compared case-insensitively).
  // FAILED_PRECONDITION naming the host otherwise, also when the allowlist is empty: alarms
  // never go to a host the operator did not list.
  static absl::Status CheckAllowlist(const std::string& url, absl::string_view allowlist);
  absl::Status Send(const AlarmEvent& event) override;

  // The JSON body for an event (exposed for tests).
  static std::string ToJson(const AlarmEvent& event);

 private:
  WebhookAlarm(std::string host, int port, std::string path, Clock& clock, int attempts)
      : host_(std::move(host)),
        port_(port),
        path_(std::move(path)),
        clock_(clock),
        attempts_(attempts) {}
  absl::Status PostOnce(const std::string& body);

  const std::string host_;
  const int port_;
  const std::string path_;
  Clock& clock_;
  const int attempts_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_WEBHOOK_ALARM_H_
