#ifndef JOBWHEEL_COMMON_NET_URL_H_
#define JOBWHEEL_COMMON_NET_URL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "common/net/ip_address.h"

namespace jobwheel::net {

// An absolute http:// or https:// URL, host in canonical spelling (host_port.h). The fragment
// is dropped (it never goes on the wire). A value type.
struct Url {
  std::string scheme;            // "http" or "https" (lower case).
  std::string host;              // Canonical, never bracketed.
  int port = 0;                  // Explicit, or the scheme's default.
  std::string path;              // Path and query; starts with "/".
  absl::optional<IpAddress> ip;  // Set when host is an IP literal.

  // host[:port] as in a Host header: IPv6 bracketed, the port left out when it is the
  // scheme's default.
  std::string Authority() const;
  // "scheme://authority/path?query".
  std::string ToString() const;
  // "scheme://host:port", always with the port: two URLs of one origin have equal origins.
  std::string Origin() const;
};

// 80 for "http", 443 for "https", 0 otherwise.
int DefaultPort(absl::string_view scheme);

// Parses an absolute http[s]:// URL (scheme case-insensitive). Refused with INVALID_ARGUMENT
// and a reason (no field name: callers prefix theirs): another scheme, user info
// (user@host), a missing or bad host (see CanonicalHost), a port outside 1..65535, spaces,
// control or non-ASCII characters, and backslashes.
absl::StatusOr<Url> ParseHttpUrl(absl::string_view text);

// The URL a redirect's Location header points to, relative to `base` (absolute,
// scheme-relative "//host/p", absolute-path "/p", "?query" or relative "p" references; "."
// and ".." segments removed). INVALID_ARGUMENT as ParseHttpUrl for what it leads to.
absl::StatusOr<Url> ResolveReference(const Url& base, absl::string_view location);

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_URL_H_
