#include "services/registry/address_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace jobwheel::registry {
namespace {

constexpr absl::string_view kField = "register.address";

// gRPC target schemes: "unix:80" is a socket path to gRPC, not host "unix" port 80.
constexpr absl::string_view kSchemes[] = {"unix", "unix-abstract", "vsock",      "dns", "ipv4",
                                          "ipv6", "xds",           "google-c2p", "fake"};
// Cloud instance metadata services (AWS, GCP, Azure, OpenStack; AWS over IPv6; Alibaba).
constexpr absl::string_view kMetadataIps[] = {"169.254.169.254", "fd00:ec2::254",
                                              "100.100.100.200"};
constexpr absl::string_view kMetadataNames[] = {"metadata.google.internal", "metadata",
                                                "instance-data"};

absl::Status Denied(absl::string_view what) {
  return absl::PermissionDeniedError(absl::StrCat(kField, ": ", what));
}

// Lowercase, without a trailing dot.
std::string NormalizeName(absl::string_view host) {
  std::string h = absl::AsciiStrToLower(host);
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h;
}

bool InPrefix(const IpAddress& ip, const IpAddress& net, int prefix_len) {
  if (ip.v6 != net.v6) return false;
  const int bits = ip.v6 ? 128 : 32;
  if (prefix_len < 0 || prefix_len > bits) return false;
  for (int i = 0; i < prefix_len; ++i) {
    const int byte = i / 8;
    const int mask = 0x80 >> (i % 8);
    if ((ip.bytes[byte] & mask) != (net.bytes[byte] & mask)) return false;
  }
  return true;
}

bool InCidr(const IpAddress& ip, absl::string_view net, int prefix_len) {
  absl::optional<IpAddress> n = ParseIp(net);
  return n.has_value() && InPrefix(ip, *n, prefix_len);
}

bool IsLoopbackIp(const IpAddress& ip) {
  return ip.v6 ? InCidr(ip, "::1", 128) : ip.bytes[0] == 127;
}
bool IsLoopbackName(absl::string_view name) {
  return name == "localhost" || absl::EndsWith(name, ".localhost");
}
bool IsLinkLocal(const IpAddress& ip) {
  return ip.v6 ? InCidr(ip, "fe80::", 10) : InCidr(ip, "169.254.0.0", 16);
}
bool IsMetadataIp(const IpAddress& ip) {
  for (absl::string_view m : kMetadataIps) {
    absl::optional<IpAddress> a = ParseIp(m);
    if (a.has_value() && *a == ip) return true;
  }
  return false;
}
// 0.0.0.0/8 and :: (dialling them reaches this host), multicast, broadcast.
bool IsNeverATarget(const IpAddress& ip) {
  if (ip.v6) return InCidr(ip, "::", 128) || InCidr(ip, "ff00::", 8);
  return ip.bytes[0] == 0 || InCidr(ip, "224.0.0.0", 4) || InCidr(ip, "255.255.255.255", 32);
}

std::string IpString(const IpAddress& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(ip.v6 ? AF_INET6 : AF_INET, ip.bytes.data(), buf, sizeof(buf));
  return buf;
}

}  // namespace

absl::optional<IpAddress> ParseIp(absl::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  const size_t zone = text.find('%');
  if (zone != absl::string_view::npos) text = text.substr(0, zone);
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return absl::nullopt;
  const std::string s(text);
  IpAddress ip;
  if (inet_pton(AF_INET, s.c_str(), ip.bytes.data()) == 1) return ip;
  if (inet_pton(AF_INET6, s.c_str(), ip.bytes.data()) != 1) return absl::nullopt;
  ip.v6 = true;
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(ip.bytes.data(), kMapped, sizeof(kMapped)) == 0) {
    IpAddress v4;
    std::copy(ip.bytes.begin() + 12, ip.bytes.end(), v4.bytes.begin());
    return v4;
  }
  return ip;
}

absl::optional<IpAddress> ParsePeerIp(absl::string_view peer) {
  std::string p(peer);
  // Newer gRPC versions percent-encode the brackets.
  p = absl::StrReplaceAll(p, {{"%5B", "["}, {"%5D", "]"}, {"%5b", "["}, {"%5d", "]"}});
  absl::string_view rest = p;
  if (!absl::ConsumePrefix(&rest, "ipv4:") && !absl::ConsumePrefix(&rest, "ipv6:")) {
    return absl::nullopt;
  }
  const size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos) return absl::nullopt;
  return ParseIp(rest.substr(0, colon));
}

bool IsLoopbackHost(absl::string_view host) {
  absl::optional<IpAddress> ip = ParseIp(host);
  if (ip.has_value()) return IsLoopbackIp(*ip);
  return IsLoopbackName(NormalizeName(host));
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
      rule.network = ParseIp(target.substr(0, slash));
      if (!rule.network.has_value() ||
          !absl::SimpleAtoi(target.substr(slash + 1), &rule.prefix_len) || rule.prefix_len < 0 ||
          rule.prefix_len > (rule.network->v6 ? 128 : 32)) {
        return bad("bad CIDR");
      }
    } else {
      for (char c : target) {
        if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_' && c != ':' && c != '[' &&
            c != ']') {
          return bad("bad host");
        }
      }
      absl::optional<IpAddress> ip = ParseIp(target);
      rule.host = ip.has_value() ? IpString(*ip) : NormalizeName(target);
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
    } else if (ip.has_value() ? r.host == IpString(*ip) : r.host == host) {
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
    if (IsNeverATarget(*ip)) {
      return Denied(absl::StrCat(raw_host, " is an unspecified, multicast or broadcast address"));
    }
    if (IsMetadataIp(*ip)) return Denied(absl::StrCat(raw_host, " is a cloud metadata address"));
    if (IsLinkLocal(*ip) && !options_.allow_link_local) {
      return Denied(
          absl::StrCat(raw_host, " is link-local (refused unless --allow_link_local_executors)"));
    }
    loopback = IsLoopbackIp(*ip);
  } else {
    for (absl::string_view m : kMetadataNames) {
      if (name == m) return Denied(absl::StrCat(raw_host, " is a cloud metadata service name"));
    }
    loopback = IsLoopbackName(name);
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
  if (loopback && peer_ip.has_value() && IsLoopbackIp(*peer_ip)) return absl::OkStatus();
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
      peer_ip.has_value() ? IpString(*peer_ip) : absl::StrCat("\"", caller.peer, "\"");
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
