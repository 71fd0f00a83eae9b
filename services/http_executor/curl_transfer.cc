#include "services/http_executor/curl_transfer.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/net/host_port.h"

namespace jobwheel::http_executor {
namespace {

// What the callbacks of one transfer share.
struct TransferState {
  const TransferControl* control = nullptr;
  const std::vector<net::IpAddress>* pinned = nullptr;
  Clock* clock = nullptr;
  HttpResponse response;
  absl::Status refused;  // Set when a connection was refused.
  bool cancelled = false;
  bool deadline_hit = false;
};

absl::optional<net::IpAddress> FromSockaddr(const struct sockaddr* sa) {
  net::IpAddress ip;
  if (sa->sa_family == AF_INET) {
    std::memcpy(ip.bytes.data(), &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
    return ip;
  }
  if (sa->sa_family == AF_INET6) {
    ip.v6 = true;
    std::memcpy(ip.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
    return net::ParseIp(net::IpToString(ip));  // Mapped IPv4 as IPv4.
  }
  return absl::nullopt;
}

curl_socket_t OpenSocket(void* data, curlsocktype purpose, struct curl_sockaddr* address) {
  auto* state = static_cast<TransferState*>(data);
  if (purpose != CURLSOCKTYPE_IPCXN) {
    state->refused = absl::PermissionDeniedError("refused: not an IP connection");
    return CURL_SOCKET_BAD;
  }
  absl::optional<net::IpAddress> ip = FromSockaddr(&address->addr);
  if (!ip.has_value()) {
    state->refused = absl::PermissionDeniedError("refused: not an IPv4 or IPv6 connection");
    return CURL_SOCKET_BAD;
  }
  if (std::find(state->pinned->begin(), state->pinned->end(), *ip) == state->pinned->end()) {
    state->refused = absl::PermissionDeniedError(absl::StrCat(
        "refused: connection to ", net::IpToString(*ip), " which the host was not resolved to"));
    return CURL_SOCKET_BAD;
  }
  if (state->control->allow_connect) {
    absl::Status allowed = state->control->allow_connect(*ip);
    if (!allowed.ok()) {
      state->refused = allowed;
      return CURL_SOCKET_BAD;
    }
  }
  state->response.connected_ip = net::IpToString(*ip);
  return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* state = static_cast<TransferState*>(user);
  absl::string_view line(data, size * n);
  line = absl::StripTrailingAsciiWhitespace(line);
  if (absl::StartsWith(line, "HTTP/")) {
    state->response.headers.clear();  // A new response (after 100 Continue, say).
  } else if (const size_t colon = line.find(':'); colon != absl::string_view::npos && colon > 0) {
    state->response.headers.emplace_back(
        std::string(line.substr(0, colon)),
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* state = static_cast<TransferState*>(user);
  const size_t len = size * n;
  HttpResponse& r = state->response;
  const size_t room = state->control->body_head_bytes > r.body_head.size()
                          ? state->control->body_head_bytes - r.body_head.size()
                          : 0;
  r.body_head.append(data, std::min(room, len));
  r.body_bytes += static_cast<int64_t>(len);
  if (static_cast<size_t>(r.body_bytes) > state->control->max_body_bytes) {
    r.body_cut = true;
    return 0;  // Stops the transfer (CURLE_WRITE_ERROR).
  }
  return len;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* state = static_cast<TransferState*>(user);
  if (state->control->cancelled && state->control->cancelled()) {
    state->cancelled = true;
    return 1;
  }
  if (state->clock->Now() >= state->control->deadline) {
    state->deadline_hit = true;
    return 1;
  }
  return 0;
}

struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct EasyFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

int64_t Millis(absl::Duration d) { return std::max<int64_t>(1, absl::ToInt64Milliseconds(d)); }

void SetMethod(CURL* curl, const HopRequest& request) {
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    return;
  }
  if (request.method != "GET" || !request.body.empty()) {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const bool sends_body = !request.body.empty() || request.method == "POST" ||
                          request.method == "PUT" || request.method == "PATCH";
  if (sends_body) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  }
}

}  // namespace

CurlTransfer::CurlTransfer(Options options, Clock& clock)
    : options_(std::move(options)), clock_(clock) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

absl::StatusOr<HttpResponse> CurlTransfer::Perform(const HopRequest& request,
                                                   const std::vector<net::IpAddress>& pinned,
                                                   const TransferControl& control) {
  const absl::Duration left = control.deadline - clock_.Now();
  if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("timed out");
  if (pinned.empty()) return absl::InvalidArgumentError("no address to connect to");
  std::unique_ptr<CURL, EasyFree> curl(curl_easy_init());
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  CURL* c = curl.get();
  TransferState state;
  state.control = &control;
  state.pinned = &pinned;
  state.clock = &clock_;
  char errbuf[CURL_ERROR_SIZE] = {};

  const std::string url = request.url.ToString();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(Millis(left)));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(Millis(std::min(left, control.connect_timeout))));
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, OpenSocket);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &state);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &state);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &state);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, options_.user_agent.c_str());

  // The name resolves to the pins only (an IP literal needs none).
  std::unique_ptr<curl_slist, SlistFree> resolve;
  if (!request.url.ip.has_value()) {
    std::vector<std::string> ips;
    for (const net::IpAddress& ip : pinned) {
      ips.push_back(ip.v6 ? absl::StrCat("[", net::IpToString(ip), "]") : net::IpToString(ip));
    }
    const std::string entry =
        absl::StrCat(request.url.host, ":", request.url.port, ":", absl::StrJoin(ips, ","));
    resolve.reset(curl_slist_append(nullptr, entry.c_str()));
    curl_easy_setopt(c, CURLOPT_RESOLVE, resolve.get());
  }
  std::unique_ptr<curl_slist, SlistFree> headers(curl_slist_append(nullptr, "Expect:"));
  for (const auto& [name, value] : request.headers) {
    const std::string line =
        value.empty() ? absl::StrCat(name, ";") : absl::StrCat(name, ": ", value);
    headers.reset(curl_slist_append(headers.release(), line.c_str()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  SetMethod(c, request);

  const CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  state.response.status = static_cast<int>(status);
  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && state.response.body_cut)) {
    return std::move(state.response);
  }
  if (!state.refused.ok()) return state.refused;
  if (state.cancelled) return absl::CancelledError("transfer aborted: the run was cancelled");
  if (state.deadline_hit || rc == CURLE_OPERATION_TIMEDOUT) {
    return absl::DeadlineExceededError("timed out");
  }
  return absl::UnavailableError(
      absl::StrCat(curl_easy_strerror(rc), errbuf[0] != '\0' ? absl::StrCat(": ", errbuf) : ""));
}

}  // namespace jobwheel::http_executor
