#include "common/net/url.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/net/host_port.h"

namespace jobwheel::net {
namespace {

absl::Status Invalid(absl::string_view why) { return absl::InvalidArgumentError(std::string(why)); }

// The length of a leading "scheme:" (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )), or 0.
size_t SchemeLength(absl::string_view text) {
  if (text.empty() || !absl::ascii_isalpha(text[0])) return 0;
  for (size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ':') return i;
    if (!absl::ascii_isalnum(c) && c != '+' && c != '-' && c != '.') return 0;
  }
  return 0;
}

// RFC 3986 section 5.2.4, on a path without its query.
std::string RemoveDotSegments(absl::string_view path) {
  std::vector<absl::string_view> out;
  const std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    const absl::string_view seg = parts[i];
    const bool last = i + 1 == parts.size();
    if (seg == ".") {
      if (last) out.push_back("");
    } else if (seg == "..") {
      if (out.size() > 1) out.pop_back();
      if (last) out.push_back("");
    } else {
      out.push_back(seg);
    }
  }
  std::string joined = absl::StrJoin(out, "/");
  if (joined.empty() || joined[0] != '/') joined.insert(0, "/");
  return joined;
}

std::string WithoutFragment(absl::string_view text) {
  return std::string(text.substr(0, text.find('#')));
}

}  // namespace

int DefaultPort(absl::string_view scheme) {
  if (scheme == "http") return 80;
  if (scheme == "https") return 443;
  return 0;
}

std::string Url::Authority() const {
  const std::string h = host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host;
  return port == DefaultPort(scheme) ? h : absl::StrCat(h, ":", port);
}

std::string Url::ToString() const { return absl::StrCat(scheme, "://", Authority(), path); }

std::string Url::Origin() const { return absl::StrCat(scheme, "://", JoinHostPort(host, port)); }

absl::StatusOr<Url> ParseHttpUrl(absl::string_view text) {
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      return Invalid("must not contain spaces, control or non-ASCII characters");
    }
    if (c == '\\') return Invalid("must not contain backslashes");
  }
  const size_t scheme_len = SchemeLength(text);
  Url url;
  url.scheme = absl::AsciiStrToLower(text.substr(0, scheme_len));
  if (scheme_len == 0 || DefaultPort(url.scheme) == 0 || text.substr(scheme_len, 3) != "://") {
    return Invalid("must start with https:// or http://");
  }
  absl::string_view rest = text.substr(scheme_len + 3);
  const size_t end = rest.find_first_of("/?#");
  absl::string_view authority = rest.substr(0, end);
  rest = end == absl::string_view::npos ? absl::string_view() : rest.substr(end);
  if (authority.find('@') != absl::string_view::npos) {
    return Invalid("user info (user@host) is not supported");
  }
  if (authority.empty()) return Invalid("missing host");
  absl::StatusOr<HostPort> hp = ParseHostPort(authority, DefaultPort(url.scheme));
  if (!hp.ok()) {
    if (absl::StrContains(hp.status().message(), "port")) return Invalid("bad port");
    return Invalid(absl::StrCat("bad host: ", hp.status().message()));
  }
  url.host = hp->host;
  url.port = hp->port;
  url.ip = hp->ip;
  const std::string path = WithoutFragment(rest);
  url.path = path.empty() || path[0] != '/' ? absl::StrCat("/", path) : path;
  return url;
}

absl::StatusOr<Url> ResolveReference(const Url& base, absl::string_view location) {
  if (location.empty()) return Invalid("empty redirect location");
  if (SchemeLength(location) > 0) return ParseHttpUrl(location);
  if (absl::StartsWith(location, "//"))
    return ParseHttpUrl(absl::StrCat(base.scheme, ":", location));
  std::string ref = WithoutFragment(location);
  const std::string base_path = base.path.substr(0, base.path.find('?'));
  std::string target;
  if (ref.empty()) {
    target = base.path;
  } else if (ref[0] == '?') {
    target = base_path + ref;
  } else {
    const size_t q = ref.find('?');
    std::string path = ref.substr(0, q);
    const std::string query = q == std::string::npos ? "" : ref.substr(q);
    if (path[0] != '/') path = base_path.substr(0, base_path.rfind('/') + 1) + path;
    target = RemoveDotSegments(path) + query;
  }
  return ParseHttpUrl(absl::StrCat(base.scheme, "://", base.Authority(), target));
}

}  // namespace jobwheel::net
