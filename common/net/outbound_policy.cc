#include "common/net/outbound_policy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/net/address_class.h"
#include "common/net/host_port.h"

namespace jobwheel::net {
namespace {

// "connection to 10.0.0.5:80 (host api.example) refused by rule ...": `shown` is the address
// (or the name, before resolution) connected to, `host` the URL's.
absl::Status Refused(absl::string_view host, absl::string_view shown, int port,
                     absl::string_view rule, absl::string_view why) {
  const std::string target = JoinHostPort(shown, port);
  const std::string about = host == shown ? target : absl::StrCat(target, " (host ", host, ")");
  return absl::PermissionDeniedError(
      absl::StrCat("connection to ", about, " refused by rule \"", rule, "\": ", why));
}

}  // namespace

OutboundPolicy::OutboundPolicy(OutboundPolicyOptions options) : options_(std::move(options)) {}

bool OutboundPolicy::HostListed(absl::string_view host, int port) const {
  return options_.allow_hosts.Contains(host, port);
}

absl::Status OutboundPolicy::CheckPort(absl::string_view host, int port) const {
  if (options_.allow_ports.Contains(port)) return absl::OkStatus();
  for (const HostAllowlist::Entry& e : options_.allow_hosts.entries()) {
    if (e.host == host && e.port == port) return absl::OkStatus();
  }
  const std::string target = JoinHostPort(host, port);
  return Refused(host, host, port, "port",
                 absl::StrCat("port ", port, " is not in ", options_.ports_flag, " (",
                              options_.allow_ports.ToString(), ") and no ", options_.hosts_flag,
                              " entry names ", target));
}

absl::Status OutboundPolicy::CheckMetadataName(absl::string_view host, int port) const {
  if (!IsMetadataName(host) || HostListed(host, port)) return absl::OkStatus();
  return Refused(host, host, port, "metadata",
                 absl::StrCat(host, " is a cloud metadata service name; allowed only when ",
                              options_.hosts_flag, " names it"));
}

absl::Status OutboundPolicy::CheckName(absl::string_view host, int port) const {
  absl::Status named = CheckMetadataName(host, port);
  if (!named.ok()) return named;
  return CheckPort(host, port);
}

absl::Status OutboundPolicy::CheckAddress(absl::string_view host, const IpAddress& ip,
                                          int port) const {
  absl::Status named = CheckMetadataName(host, port);
  if (!named.ok()) return named;
  const std::string ip_text = IpToString(ip);
  const AddressClass c = ClassifyIp(ip);
  const absl::string_view rule = AddressClassName(c);
  switch (c) {
    case AddressClass::kUnspecified:
    case AddressClass::kMulticast:
    case AddressClass::kBroadcast:
    case AddressClass::kReserved:
      return Refused(host, ip_text, port, rule,
                     absl::StrCat(ip_text, rule == "unspecified" ? " is an " : " is a ", rule,
                                  " address, never a destination"));
    case AddressClass::kMetadata: {
      bool exact = HostListed(host, port);
      for (const Cidr& cidr : options_.allow_cidrs) {
        if (cidr.IsSingleAddress() && cidr.Contains(ip)) exact = true;
      }
      if (exact) return CheckPort(host, port);
      return Refused(host, ip_text, port, rule,
                     absl::StrCat(ip_text, " is a cloud metadata address; allowed only when ",
                                  options_.hosts_flag, " names it or ", options_.cidrs_flag,
                                  " lists it as a single address"));
    }
    case AddressClass::kPublic:
      if (options_.allow_public) return CheckPort(host, port);
      break;
    case AddressClass::kLoopback:
    case AddressClass::kLinkLocal:
    case AddressClass::kPrivate:
      break;
  }
  if (HostListed(host, port)) return CheckPort(host, port);
  for (const Cidr& cidr : options_.allow_cidrs) {
    if (cidr.Contains(ip)) return CheckPort(host, port);
  }
  return Refused(
      host, ip_text, port, rule,
      absl::StrCat(ip_text, " is a ", rule, " address; allowed only when ", options_.hosts_flag,
                   " names ", host, " or ", options_.cidrs_flag, " holds ", ip_text));
}

std::string OutboundPolicy::Describe() const {
  std::vector<std::string> hosts;
  for (const HostAllowlist::Entry& e : options_.allow_hosts.entries()) {
    hosts.push_back(e.port == 0 ? e.host : JoinHostPort(e.host, e.port));
  }
  std::vector<std::string> cidrs;
  for (const Cidr& c : options_.allow_cidrs) cidrs.push_back(c.ToString());
  return absl::StrCat("outbound: ports ", options_.allow_ports.ToString(), "; public addresses ",
                      options_.allow_public ? "allowed" : "refused",
                      "; loopback, link-local, private and metadata refused except hosts [",
                      absl::StrJoin(hosts, ","), "] and CIDRs [", absl::StrJoin(cidrs, ","), "]");
}

}  // namespace jobwheel::net
