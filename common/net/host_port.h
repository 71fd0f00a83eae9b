#ifndef JOBWHEEL_COMMON_NET_HOST_PORT_H_
#define JOBWHEEL_COMMON_NET_HOST_PORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "common/net/ip_address.h"

namespace jobwheel::net {

// A host and port in canonical spelling, so that two spellings of one destination compare
// equal as strings:
//   - DNS names lower case, without a trailing dot ("Exec-1.Example.COM." → "exec-1.example.com");
//   - IPv4 dotted quad; an IPv4-mapped IPv6 address becomes IPv4 ("[::ffff:10.0.0.5]" →
//     "10.0.0.5");
//   - IPv6 in RFC 5952 form ("[2001:DB8:0::1]" → "2001:db8::1"), bracketed in ToString()
//     ("[2001:db8::1]:80");
//   - the port as a decimal number without leading zeros.
// A value type.
struct HostPort {
  std::string host;  // Canonical, never bracketed.
  int port = 0;
  absl::optional<IpAddress> ip;  // Set when host is an IP literal.

  // "host:port", "[v6]:port".
  std::string ToString() const;
};

// "host:port" with IPv6 hosts bracketed. `host` is taken as it is.
std::string JoinHostPort(absl::string_view host, int port);

// Lower case, without one trailing dot; no validation (for comparing names).
std::string NormalizeHostName(absl::string_view name);

// The canonical spelling of a host alone: a DNS name (letters, digits, '-', '_', labels of at
// most 63 characters, at most 253 in all), an IPv4 address, or an IPv6 address with or
// without brackets (no zone). A name that looks numeric but is not a dotted quad ("127.1",
// "0x7f000001", "2130706433": resolvers read them as IPs) is refused. INVALID_ARGUMENT with
// the reason otherwise (no field name: callers prefix theirs).
absl::StatusOr<std::string> CanonicalHost(absl::string_view host);

// Parses "host:port", "[v6]:port", or — when `default_port` is 1..65535 — "host", "[v6]" or
// a bare "v6" without a port, which then gets `default_port`. The port must be 1..65535 in
// decimal digits. INVALID_ARGUMENT with the reason otherwise (no field name).
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, int default_port = 0);

// ParseHostPort(text).ToString(): the one spelling of an address such as an executor's.
absl::StatusOr<std::string> CanonicalHostPort(absl::string_view text, int default_port = 0);

// Parses a port: decimal digits only, 1..65535 ("080" is 80). nullopt otherwise.
absl::optional<int> ParsePort(absl::string_view text);

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_HOST_PORT_H_
