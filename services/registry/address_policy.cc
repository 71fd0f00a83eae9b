#include "services/registry/address_policy.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/net/address_class.h"
#include "common/net/cidr.h"
#include "common/net/host_port.h"

namespace jobwheel::registry {
namespace {

constexpr absl::string_view kField = "register.address";

// gRPC target schemes: "unix:80" is a socket path to gRPC, not host "unix" port 80.
constexpr absl::string_view kSchemes[] = {"unix", "unix-abstract", "vsock",      "dns", "ipv4",
                                          "ipv6", "xds",           "google-c2p", "fake"};

absl::Status Denied(absl::string_view what) {
  return absl::PermissionDeniedError(absl::StrCat(kField, ": ", what));
}

std::string NormalizeName(absl::string_view host) { return net::NormalizeHostName(host); }

bool InPrefix(const IpAddress& ip, const IpAddress& network, int prefix_len) {
  return net::Cidr{network, prefix_len}.Contains(ip);
}

}  // namespace

bool IsLoopbackHost(absl::string_view host) {
  absl::optional<IpAddress> ip = ParseIp(host);
  if (ip.has_value()) return net::IsLoopbackIp(*ip);
  return net::IsLoopbackName(NormalizeName(host));
}

absl::StatusOr<std::vector<AddressAllowRule>> ParseAddressAllowlist(absl::string_view text,
                                                                    absl::string_view flag) {
  std::vector<AddressAllowRule> rules;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", entry, "\": ", why));
    };
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos || eq == 0 || eq + 1 == entry.size()) {
      return bad("must be app=host, app=ip or app=cidr (app * for every app)");
    }
    AddressAllowRule rule;
    rule.app = std::string(entry.substr(0, eq));
    absl::string_view target = entry.substr(eq + 1);
    for (char c : rule.app) {
      if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '-' && c != '*') {
        return bad("bad app name");
      }
    }
    const size_t slash = target.find('/');
    if (slash != absl::string_view::npos) {
      absl::optional<net::Cidr> cidr = net::ParseCidr(target);
      if (!cidr.has_value()) return bad("bad CIDR");
      rule.network = cidr->network;
      rule.prefix_len = cidr->prefix_len;
    } else {
      for (char c : target) {
        if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_' && c != ':' && c != '[' &&
            c != ']') {
          return bad("bad host");
        }
      }
      absl::optional<IpAddress> ip = ParseIp(target);
      rule.host = ip.has_value() ? net::IpToString(*ip) : NormalizeName(target);
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

AddressPolicy::AddressPolicy(AddressPolicyOptions options) : options_(std::move(options)) {}

bool AddressPolicy::Allowlisted(absl::string_view app, absl::string_view host,
                                const absl::optional<IpAddress>& ip) const {
  for (const AddressAllowRule& r : options_.allowlist) {
    if (r.app != "*" && r.app != app) continue;
    if (r.network.has_value()) {
      if (ip.has_value() && InPrefix(*ip, *r.network, r.prefix_len)) return true;
    } else if (ip.has_value() ? r.host == net::IpToString(*ip) : r.host == host) {
      return true;
    }
  }
  return false;
}

absl::Status AddressPolicy::Check(absl::string_view app, absl::string_view address,
                                  const CallerIdentity& caller) const {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return Denied(absl::StrCat("\"", address, "\" is not host:port"));
  }
  const absl::string_view raw_host = address.substr(0, colon);
  const std::string name = NormalizeName(raw_host);
  for (absl::string_view scheme : kSchemes) {
    if (name == scheme) {
      return Denied(
          absl::StrCat("\"", address, "\" is a gRPC ", scheme, ": target, not host:port"));
    }
  }
  const absl::optional<IpAddress> ip = ParseIp(raw_host);
  bool loopback = false;
  if (ip.has_value()) {
    if (net::IsNonTargetIp(*ip)) {
      return Denied(absl::StrCat(raw_host, " is an unspecified, multicast or broadcast address"));
    }
    if (net::IsMetadataIp(*ip))
      return Denied(absl::StrCat(raw_host, " is a cloud metadata address"));
    if (net::IsLinkLocalIp(*ip) && !options_.allow_link_local) {
      return Denied(
          absl::StrCat(raw_host, " is link-local (refused unless --allow_link_local_executors)"));
    }
    loopback = net::IsLoopbackIp(*ip);
  } else {
    if (net::IsMetadataName(name)) {
      return Denied(absl::StrCat(raw_host, " is a cloud metadata service name"));
    }
    loopback = net::IsLoopbackName(name);
  }
  if (loopback && !options_.allow_loopback) {
    return Denied(absl::StrCat(raw_host,
                               " is loopback (refused: this registry does not listen on loopback; "
                               "see --allow_loopback_executors)"));
  }

  // Ownership.
  const absl::optional<IpAddress> peer_ip = ParsePeerIp(caller.peer);
  if (ip.has_value() && peer_ip.has_value() && *ip == *peer_ip) return absl::OkStatus();
  // A loopback caller is on this machine, as is every loopback target.
  if (loopback && peer_ip.has_value() && net::IsLoopbackIp(*peer_ip)) return absl::OkStatus();
  if (caller.certificate_verified) {
    if (ip.has_value()) {
      for (const std::string& c : caller.certificate_ips) {
        absl::optional<IpAddress> cert_ip = ParseIp(c);
        if (cert_ip.has_value() && *cert_ip == *ip) return absl::OkStatus();
      }
    } else {
      for (const std::string& c : caller.certificate_dns_names) {
        // Exact names only: a wildcard would let one certificate claim a whole domain.
        if (NormalizeName(c) == name) return absl::OkStatus();
      }
    }
  }
  if (Allowlisted(app, name, ip)) return absl::OkStatus();

  const std::string seen =
      peer_ip.has_value() ? net::IpToString(*peer_ip) : absl::StrCat("\"", caller.peer, "\"");
  if (!ip.has_value()) {
    return Denied(absl::StrCat(
        "host \"", raw_host, "\" is a DNS name, which the registry does not resolve; advertise ",
        "the IP address it sees (", seen, "), present a client certificate naming it, or ",
        "allow-list it for app ", app, " (--executor_address_allowlist)"));
  }
  return Denied(absl::StrCat("host ", raw_host, " is not the caller's address (the registry sees ",
                             seen, "); advertise your own address or allow-list it for app ", app,
                             " (--executor_address_allowlist)"));
}

absl::StatusOr<AddressPolicyOptions> AddressPolicyOptionsFromFlags(absl::string_view allow_loopback,
                                                                   bool allow_link_local,
                                                                   absl::string_view allowlist,
                                                                   absl::string_view listen) {
  AddressPolicyOptions o;
  if (allow_loopback == "auto") {
    const size_t colon = listen.rfind(':');
    o.allow_loopback =
        colon != absl::string_view::npos && colon > 0 && IsLoopbackHost(listen.substr(0, colon));
  } else if (allow_loopback == "true") {
    o.allow_loopback = true;
  } else if (allow_loopback != "false") {
    return absl::InvalidArgumentError(absl::StrCat("--allow_loopback_executors: \"", allow_loopback,
                                                   "\" is not auto, true or false"));
  }
  o.allow_link_local = allow_link_local;
  absl::StatusOr<std::vector<AddressAllowRule>> rules =
      ParseAddressAllowlist(allowlist, "--executor_address_allowlist");
  if (!rules.ok()) return rules.status();
  o.allowlist = *std::move(rules);
  return o;
}

std::string DescribeAddressPolicy(const AddressPolicyOptions& options) {
  return absl::StrCat("executor addresses: the caller's own; loopback ",
                      options.allow_loopback ? "allowed" : "refused", ", link-local ",
                      options.allow_link_local ? "allowed" : "refused", ", ",
                      options.allowlist.size(), " allowlist entries");
}

}  // namespace jobwheel::registry
