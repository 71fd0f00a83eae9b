#include "services/http_executor/http_caller.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace jobwheel::http_executor {
namespace {

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool IsCredentialHeader(absl::string_view name) {
  return absl::EqualsIgnoreCase(name, "authorization") || absl::EqualsIgnoreCase(name, "cookie") ||
         absl::EqualsIgnoreCase(name, "proxy-authorization");
}

absl::Status WithHop(const absl::Status& s, int hop, const net::Url& url) {
  if (hop == 0 || s.ok()) return s;
  return absl::Status(s.code(),
                      absl::StrCat("redirect ", hop, " to ", url.ToString(), ": ", s.message()));
}

}  // namespace

HttpCaller::HttpCaller(const net::OutboundPolicy& policy, Resolver& resolver,
                       HttpTransfer& transfer, Clock& clock, Options options)
    : policy_(policy),
      resolver_(resolver),
      transfer_(transfer),
      clock_(clock),
      options_(std::move(options)) {}

absl::StatusOr<std::vector<net::IpAddress>> HttpCaller::Admit(const net::Url& url) {
  std::vector<net::IpAddress> addresses;
  if (url.ip.has_value()) {
    addresses.push_back(*url.ip);
  } else {
    absl::Status named = policy_.CheckName(url.host, url.port);
    if (!named.ok()) return named;
    absl::StatusOr<std::vector<net::IpAddress>> resolved = resolver_.Resolve(url.host);
    if (!resolved.ok()) return resolved.status();
    addresses = *std::move(resolved);
  }
  for (const net::IpAddress& ip : addresses) {
    absl::Status allowed = policy_.CheckAddress(url.host, ip, url.port);
    if (!allowed.ok()) return allowed;
  }
  return addresses;
}

absl::StatusOr<HttpCaller::Outcome> HttpCaller::Call(const HttpJobSpec& spec,
                                                     const HeaderList& secret_headers,
                                                     absl::Time deadline,
                                                     std::function<bool()> cancelled,
                                                     const LogFn& log) {
  HopRequest request;
  request.method = spec.method;
  request.url = spec.url;
  request.headers = spec.headers;
  request.headers.insert(request.headers.end(), secret_headers.begin(), secret_headers.end());
  request.body = spec.body;
  const std::string origin = spec.url.Origin();
  TransferControl control;
  control.deadline = deadline;
  control.cancelled = std::move(cancelled);
  control.body_head_bytes = options_.body_head_bytes;
  control.max_body_bytes = options_.max_body_bytes;
  control.connect_timeout = options_.connect_timeout;
  for (int hop = 0;; ++hop) {
    absl::StatusOr<std::vector<net::IpAddress>> pins = Admit(request.url);
    if (!pins.ok()) return WithHop(pins.status(), hop, request.url);
    const net::Url url = request.url;
    control.allow_connect = [this, url](const net::IpAddress& ip) {
      return policy_.CheckAddress(url.host, ip, url.port);
    };
    log(absl::StrCat(hop == 0 ? "" : absl::StrCat("redirect ", hop, ": "), request.method, " ",
                     url.ToString()));
    absl::StatusOr<HttpResponse> response = transfer_.Perform(request, *pins, control);
    if (!response.ok()) return WithHop(response.status(), hop, url);
    const std::string location = response->Header("location");
    if (!spec.follow_redirects || !IsRedirect(response->status) || location.empty()) {
      return Outcome{*std::move(response), url, hop};
    }
    if (hop >= spec.max_redirects) {
      return absl::FailedPreconditionError(absl::StrCat(
          "more than ", spec.max_redirects, " redirects (max_redirects); the last one, HTTP ",
          response->status, ", to ", location));
    }
    absl::StatusOr<net::Url> next = net::ResolveReference(url, location);
    if (!next.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("redirect ", hop + 1, ": HTTP ",
                                                        response->status, " Location \"", location,
                                                        "\": ", next.status().message()));
    }
    log(absl::StrCat("HTTP ", response->status, " to ", next->ToString()));
    const int status = response->status;
    if ((status == 303 && request.method != "HEAD") ||
        ((status == 301 || status == 302) && request.method == "POST")) {
      request.method = "GET";
      request.body.clear();
      HeaderList kept;
      for (auto& h : request.headers) {
        if (!absl::EqualsIgnoreCase(h.first, "content-type")) kept.push_back(std::move(h));
      }
      request.headers = std::move(kept);
    }
    if (next->Origin() != origin) {
      HeaderList kept;
      for (auto& h : request.headers) {
        const bool secret =
            std::find_if(secret_headers.begin(), secret_headers.end(), [&](const auto& s) {
              return absl::EqualsIgnoreCase(s.first, h.first);
            }) != secret_headers.end();
        if (!secret && !IsCredentialHeader(h.first)) kept.push_back(std::move(h));
      }
      request.headers = std::move(kept);
    }
    request.url = *std::move(next);
  }
}

}  // namespace jobwheel::http_executor
