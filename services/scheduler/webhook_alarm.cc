#include "services/scheduler/webhook_alarm.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "httplib.h"

namespace jobwheel::scheduler {
namespace {

struct Target {
  bool https = false;
  std::string host;
  int port = 80;
  std::string path;
};

absl::StatusOr<Target> ParseUrl(const std::string& url) {
  const bool https = url.rfind("https://", 0) == 0;
  if (!https && url.rfind("http://", 0) != 0) {
    return absl::InvalidArgumentError("alarm_webhook_url: must start with https:// or http://");
  }
  std::string rest = url.substr(https ? 8 : 7);
  std::string path = "/";
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  std::string host = rest;
  int port = https ? 443 : 80;
  if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    if (!absl::SimpleAtoi(rest.substr(colon + 1), &port) || port <= 0 || port > 65535) {
      return absl::InvalidArgumentError("alarm_webhook_url: bad port");
    }
  }
  if (host.empty()) return absl::InvalidArgumentError("alarm_webhook_url: missing host");
  if (host.find('@') != std::string::npos) {
    return absl::InvalidArgumentError("alarm_webhook_url: user info (user@host) is not supported");
  }
  return Target{https, host, port, path};
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebhookAlarm>> WebhookAlarm::Create(const std::string& url,
                                                                   Options options) {
  absl::StatusOr<Target> target = ParseUrl(url);
  if (!target.ok()) return target.status();
  return std::unique_ptr<WebhookAlarm>(new WebhookAlarm(target->https, target->host, target->port,
                                                        target->path, std::move(options)));
}

absl::Status WebhookAlarm::CheckAllowlist(const std::string& url, absl::string_view allowlist) {
  absl::StatusOr<Target> parsed = ParseUrl(url);
  if (!parsed.ok()) return parsed.status();
  const std::string host = absl::AsciiStrToLower(parsed->host);
  const int port = parsed->port;
  for (absl::string_view entry : absl::StrSplit(allowlist, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    std::string entry_host = absl::AsciiStrToLower(entry);
    int entry_port = 0;  // Any.
    if (auto colon = entry_host.rfind(':');
        colon != std::string::npos && entry_host.find(']', colon) == std::string::npos) {
      if (!absl::SimpleAtoi(entry_host.substr(colon + 1), &entry_port) || entry_port <= 0 ||
          entry_port > 65535) {
        return absl::InvalidArgumentError(
            absl::StrCat("alarm_webhook_allowlist: bad port in \"", entry, "\""));
      }
      entry_host = entry_host.substr(0, colon);
    }
    if (entry_host == host && (entry_port == 0 || entry_port == port)) return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "alarm_webhook_url: host ", host, ":", port, " is not in --alarm_webhook_allowlist (",
      allowlist.empty() ? "empty" : std::string(allowlist),
      "); alarms go only to hosts listed there"));
}

absl::Status WebhookAlarm::Post(const std::string& body, const std::string& idempotency_key) {
  const std::string origin = absl::StrCat(https_ ? "https://" : "http://", host_, ":", port_);
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
  if (https_) {
    client.enable_server_certificate_verification(true);
    if (!options_.ca_file.empty()) client.set_ca_cert_path(options_.ca_file.c_str());
  }
  httplib::Headers headers = {{"Idempotency-Key", idempotency_key}};
  httplib::Result res = client.Post(path_.c_str(), headers, body, "application/json");
  if (!res) {
    std::string why = httplib::to_string(res.error());
    if (https_ && res.error() == httplib::Error::SSLServerVerification) {
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
