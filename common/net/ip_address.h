#ifndef JOBWHEEL_COMMON_NET_IP_ADDRESS_H_
#define JOBWHEEL_COMMON_NET_IP_ADDRESS_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace jobwheel::net {

// An IPv4 or IPv6 address. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are stored as IPv4, so
// one host has one spelling. A value type.
struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4: the first 4.

  friend bool operator==(const IpAddress& a, const IpAddress& b) {
    return a.v6 == b.v6 && a.bytes == b.bytes;
  }
  friend bool operator!=(const IpAddress& a, const IpAddress& b) { return !(a == b); }
};

// "10.0.0.5", "::1", "[::1]", "::ffff:10.0.0.5" (→ IPv4); an IPv6 zone ("%eth0") is dropped.
// Only the strict forms inet_pton accepts: "127.1", "0x7f.0.0.1" or "2130706433" are not IPs.
absl::optional<IpAddress> ParseIp(absl::string_view text);

// The canonical text: dotted quad for IPv4, RFC 5952 (lower case, zeros compressed, no
// brackets) for IPv6.
std::string IpToString(const IpAddress& ip);

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_IP_ADDRESS_H_
