#include "services/scheduler/webhook_alarm.h"

#include "absl/strings/str_cat.h"
#include "common/net/host_allowlist.h"
#include "common/net/host_port.h"
#include "httplib.h"

namespace jobwheel::scheduler {
namespace {

absl::StatusOr<net::Url> ParseUrl(const std::string& url) {
  absl::StatusOr<net::Url> parsed = net::ParseHttpUrl(url);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("alarm_webhook_url: ", parsed.status().message()));
  }
  return parsed;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebhookAlarm>> WebhookAlarm::Create(const std::string& url,
                                                                   Options options) {
  absl::StatusOr<net::Url> target = ParseUrl(url);
  if (!target.ok()) return target.status();
  return std::unique_ptr<WebhookAlarm>(new WebhookAlarm(*std::move(target), std::move(options)));
}

absl::Status WebhookAlarm::CheckAllowlist(const std::string& url, absl::string_view allowlist) {
  absl::StatusOr<net::Url> parsed = ParseUrl(url);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<net::HostAllowlist> list =
      net::HostAllowlist::Parse(allowlist, "alarm_webhook_allowlist");
  if (!list.ok()) return list.status();
  if (list->Contains(parsed->host, parsed->port)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("alarm_webhook_url: host ", net::JoinHostPort(parsed->host, parsed->port),
                   " is not in --alarm_webhook_allowlist (",
                   allowlist.empty() ? "empty" : std::string(allowlist),
                   "); alarms go only to hosts listed there"));
}

absl::Status WebhookAlarm::Post(const std::string& body, const std::string& idempotency_key) {
  const bool https = url_.scheme == "https";
  const std::string origin = url_.Origin();
  httplib::Client client(origin);
  if (!client.is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("alarm webhook: bad address ", origin));
  }
  const auto seconds = [](absl::Duration d) {
    const int64_t us = absl::ToInt64Microseconds(d);
    return std::make_pair(static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000));
  };
  const auto [sec, usec] = seconds(options_.timeout);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
  client.set_follow_location(false);
  if (https) {
    client.enable_server_certificate_verification(true);
    if (!options_.ca_file.empty()) client.set_ca_cert_path(options_.ca_file.c_str());
  }
  httplib::Headers headers = {{"Idempotency-Key", idempotency_key}};
  httplib::Result res = client.Post(url_.path.c_str(), headers, body, "application/json");
  if (!res) {
    std::string why = httplib::to_string(res.error());
    if (https && res.error() == httplib::Error::SSLServerVerification) {
      why = "the server's certificate was not verified";
    }
    return absl::UnavailableError(absl::StrCat("alarm webhook ", origin, ": ", why));
  }
  if (res->status < 200 || res->status >= 300) {
    return absl::UnavailableError(
        absl::StrCat("alarm webhook ", origin, " answered ", res->status));
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::scheduler
