#ifndef JOBWHEEL_COMMON_NET_CIDR_H_
#define JOBWHEEL_COMMON_NET_CIDR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "common/net/ip_address.h"

namespace jobwheel::net {

// An address block: "10.0.0.0/8", "fd00::/8". A value type.
struct Cidr {
  IpAddress network;
  int prefix_len = 0;

  // True when `ip` is in the block (an IPv4 block never holds an IPv6 address and back).
  bool Contains(const IpAddress& ip) const;
  // A /32 (IPv4) or /128 (IPv6): exactly one address.
  bool IsSingleAddress() const { return prefix_len == (network.v6 ? 128 : 32); }
  // "10.0.0.0/8", the network as given (host bits are kept).
  std::string ToString() const;
};

// "ip/len"; a bare IP is its single-address block. nullopt on anything else.
absl::optional<Cidr> ParseCidr(absl::string_view text);

// A comma list of CIDRs or IPs (whitespace around entries ignored, empty: none);
// INVALID_ARGUMENT naming `flag` and the bad entry.
absl::StatusOr<std::vector<Cidr>> ParseCidrList(absl::string_view text, absl::string_view flag);

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_CIDR_H_
