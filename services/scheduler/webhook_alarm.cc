#include "services/scheduler/webhook_alarm.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/json_escape.h"

namespace jobwheel::scheduler {
namespace {

std::string JsonString(absl::string_view s) { return absl::StrCat("\"", JsonEscape(s), "\""); }

struct Target {
  std::string host;
  int port = 80;
  std::string path;
};

absl::StatusOr<Target> ParseUrl(const std::string& url) {
  constexpr absl::string_view kScheme = "http://";
  if (url.rfind(std::string(kScheme), 0) != 0) {
    return absl::InvalidArgumentError("alarm_webhook_url: must start with http://");
  }
  std::string rest = url.substr(kScheme.size());
  std::string path = "/";
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  std::string host = rest;
  int port = 80;
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
  return Target{host, port, path};
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebhookAlarm>> WebhookAlarm::Create(const std::string& url,
                                                                   Clock& clock, int attempts) {
  absl::StatusOr<Target> target = ParseUrl(url);
  if (!target.ok()) return target.status();
  return std::unique_ptr<WebhookAlarm>(
      new WebhookAlarm(target->host, target->port, target->path, clock, attempts));
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

std::string WebhookAlarm::ToJson(const AlarmEvent& e) {
  std::vector<std::string> contacts;
  for (const auto& c : e.contacts) contacts.push_back(JsonString(c));
  return absl::StrCat("{\"job_id\":", e.job_id, ",\"job_name\":", JsonString(e.job_name),
                      ",\"app\":", JsonString(e.app), ",\"run_id\":", e.run_id,
                      ",\"status\":", JsonString(e.status), ",\"message\":", JsonString(e.message),
                      ",\"contacts\":[", absl::StrJoin(contacts, ","), "]}");
}

absl::Status WebhookAlarm::PostOnce(const std::string& body) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &res) != 0) {
    return absl::UnavailableError(absl::StrCat("alarm webhook: cannot resolve ", host_));
  }
  int fd = -1;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0)
    return absl::UnavailableError(absl::StrCat("alarm webhook: cannot connect to ", host_));
  const std::string request = absl::StrCat(
      "POST ", path_, " HTTP/1.1\r\nHost: ", host_, "\r\nContent-Type: application/json\r\n",
      "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      return absl::UnavailableError("alarm webhook: send failed");
    }
    sent += static_cast<size_t>(n);
  }
  char buf[256];
  ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
  close(fd);
  if (n <= 0) return absl::UnavailableError("alarm webhook: no response");
  buf[n] = '\0';
  std::vector<std::string> parts = absl::StrSplit(std::string(buf), absl::MaxSplits(' ', 2));
  int code = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &code) || code < 200 || code >= 300) {
    return absl::UnavailableError(
        absl::StrCat("alarm webhook answered ", parts.size() > 1 ? parts[1] : "garbage"));
  }
  return absl::OkStatus();
}

absl::Status WebhookAlarm::Send(const AlarmEvent& event) {
  const std::string body = ToJson(event);
  absl::Status last;
  for (int i = 0; i < attempts_; ++i) {
    last = PostOnce(body);
    if (last.ok()) return last;
    clock_.SleepFor(absl::Milliseconds(200) * (1 << i));
  }
  return last;
}

}  // namespace jobwheel::scheduler
