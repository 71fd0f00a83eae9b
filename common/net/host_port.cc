#include "common/net/host_port.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace jobwheel::net {
namespace {

constexpr size_t kMaxName = 253;
constexpr size_t kMaxLabel = 63;

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": ", why));
}

bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.'; }

// Resolvers read "127.1", "0x7f.1" or "2130706433" as IPv4 addresses: a name whose last label
// is numeric or hexadecimal with 0x is one of those.
bool LooksNumeric(absl::string_view name) {
  const size_t dot = name.rfind('.');
  absl::string_view last = dot == absl::string_view::npos ? name : name.substr(dot + 1);
  if (last.empty()) return false;
  if (std::all_of(last.begin(), last.end(), [](char c) { return absl::ascii_isdigit(c); })) {
    return true;
  }
  return absl::StartsWith(last, "0x") &&
         std::all_of(last.begin() + 2, last.end(), [](char c) { return absl::ascii_isxdigit(c); });
}

}  // namespace

std::string HostPort::ToString() const { return JoinHostPort(host, port); }

std::string JoinHostPort(absl::string_view host, int port) {
  if (host.find(':') != absl::string_view::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

std::string NormalizeHostName(absl::string_view name) {
  std::string h = absl::AsciiStrToLower(name);
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h;
}

absl::optional<int> ParsePort(absl::string_view text) {
  int port = 0;
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return absl::ascii_isdigit(c); }) ||
      !absl::SimpleAtoi(text, &port) || port < 1 || port > 65535) {
    return absl::nullopt;
  }
  return port;
}

absl::StatusOr<std::string> CanonicalHost(absl::string_view host) {
  if (host.empty()) return Invalid(host, "empty host");
  const bool bracketed = host.front() == '[';
  if (bracketed || host.find(':') != absl::string_view::npos) {
    if (bracketed && (host.size() < 3 || host.back() != ']')) {
      return Invalid(host, "bad IPv6 literal");
    }
    if (host.find('%') != absl::string_view::npos) {
      return Invalid(host, "an IPv6 zone (%...) is not allowed");
    }
    absl::optional<IpAddress> ip = ParseIp(host);
    if (!ip.has_value()) return Invalid(host, "bad IPv6 literal");
    return IpToString(*ip);
  }
  if (absl::optional<IpAddress> ip = ParseIp(host); ip.has_value()) return IpToString(*ip);
  const std::string name = NormalizeHostName(host);
  if (name.empty()) return Invalid(host, "empty host");
  if (name.size() > kMaxName) return Invalid(host, "host name longer than 253 characters");
  for (char c : name) {
    if (!IsNameChar(c)) return Invalid(host, "bad character in host");
  }
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (label.empty()) return Invalid(host, "empty label in host name");
    if (label.size() > kMaxLabel) return Invalid(host, "host name label over 63 characters");
  }
  if (LooksNumeric(name)) {
    return Invalid(host, "looks like a numeric address but is not a dotted-quad IPv4 address");
  }
  return name;
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, int default_port) {
  absl::string_view host_text = text;
  absl::string_view port_text;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) return Invalid(text, "bad IPv6 literal");
    host_text = text.substr(0, close + 1);
    absl::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return Invalid(text, "is not host:port");
      port_text = rest.substr(1);
      has_port = true;
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const size_t colon = text.find(':');
    host_text = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    has_port = true;
  }
  HostPort out;
  if (has_port) {
    absl::optional<int> port = ParsePort(port_text);
    if (!port.has_value()) return Invalid(text, "port must be 1..65535");
    out.port = *port;
  } else if (default_port >= 1 && default_port <= 65535) {
    out.port = default_port;
  } else {
    return Invalid(text, "is not host:port");
  }
  absl::StatusOr<std::string> host = CanonicalHost(host_text);
  if (!host.ok()) return host.status();
  out.host = *std::move(host);
  out.ip = ParseIp(out.host);
  return out;
}

absl::StatusOr<std::string> CanonicalHostPort(absl::string_view text, int default_port) {
  absl::StatusOr<HostPort> hp = ParseHostPort(text, default_port);
  if (!hp.ok()) return hp.status();
  return hp->ToString();
}

}  // namespace jobwheel::net
