#ifndef JOBWHEEL_COMMON_NET_OUTBOUND_POLICY_H_
#define JOBWHEEL_COMMON_NET_OUTBOUND_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/net/cidr.h"
#include "common/net/host_allowlist.h"
#include "common/net/ip_address.h"
#include "common/net/port_list.h"

namespace jobwheel::net {

struct OutboundPolicyOptions {
  // Hosts (as a URL names them, canonical) that may be reached although their addresses are
  // in a refused class; an entry with a port also opens that port for that host.
  HostAllowlist allow_hosts;
  // Addresses that may be reached although they are in a refused class. A metadata address
  // is opened only by a single-address block (169.254.169.254/32), never by a wider one.
  std::vector<Cidr> allow_cidrs;
  // The ports every connection may use (besides the ports allow_hosts entries name).
  PortList allow_ports;
  // Whether public addresses may be reached without an allowlist entry.
  bool allow_public = true;
  // Flag names for refusal messages.
  std::string hosts_flag = "--allow_hosts";
  std::string cidrs_flag = "--allow_cidrs";
  std::string ports_flag = "--allow_ports";
};

// Decides whether an outbound connection (an HTTP job, a redirect hop) may go to a host, port
// and resolved address. Always refused: unspecified, multicast, broadcast and reserved
// addresses. Refused unless allow-listed: loopback, link-local, private and cloud metadata
// addresses (metadata needs an exact entry), ports outside allow_ports, and public addresses
// when !allow_public. Every refusal is PERMISSION_DENIED and names the rule
// (`refused by rule "metadata"`, see AddressClassName; "port" for the port rule) and the flag
// that would allow it. Call CheckName before resolving a name and CheckAddress for every
// address it resolves to (or the IP a URL names), right before connecting to it.
// Immutable; thread-safe.
class OutboundPolicy {
 public:
  explicit OutboundPolicy(OutboundPolicyOptions options);

  // Before DNS: the port rule, and metadata service names (metadata.google.internal, ...)
  // unless allow_hosts names them. `host` in canonical spelling.
  absl::Status CheckName(absl::string_view host, int port) const;
  // After DNS: `ip` is an address `host` resolved to (or `host` itself when it is an IP).
  // Includes CheckName's rules; the address's class is checked before the port, so a
  // refused address is named as such whatever its port.
  absl::Status CheckAddress(absl::string_view host, const IpAddress& ip, int port) const;

  // One line for the start-up log.
  std::string Describe() const;
  const OutboundPolicyOptions& options() const { return options_; }

 private:
  bool HostListed(absl::string_view host, int port) const;
  absl::Status CheckPort(absl::string_view host, int port) const;
  absl::Status CheckMetadataName(absl::string_view host, int port) const;

  const OutboundPolicyOptions options_;
};

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_OUTBOUND_POLICY_H_
