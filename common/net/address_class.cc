#include "common/net/address_class.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "common/net/cidr.h"

namespace jobwheel::net {
namespace {

constexpr absl::string_view kMetadataIps[] = {"169.254.169.254", "fd00:ec2::254",
                                              "100.100.100.200"};
constexpr absl::string_view kMetadataNames[] = {"metadata.google.internal", "metadata",
                                                "instance-data"};
constexpr absl::string_view kPrivateBlocks[] = {"10.0.0.0/8",    "172.16.0.0/12", "192.168.0.0/16",
                                                "100.64.0.0/10", "fc00::/7",      "fec0::/10"};

bool In(const IpAddress& ip, absl::string_view block) {
  absl::optional<Cidr> cidr = ParseCidr(block);
  return cidr.has_value() && cidr->Contains(ip);
}

// The IPv4 address inside a NAT64 address, or the address itself.
IpAddress Unwrapped(const IpAddress& ip) {
  if (!ip.v6 || !In(ip, "64:ff9b::/96")) return ip;
  IpAddress v4;
  std::copy(ip.bytes.begin() + 12, ip.bytes.end(), v4.bytes.begin());
  return v4;
}

}  // namespace

bool IsLoopbackIp(const IpAddress& ip) { return ip.v6 ? In(ip, "::1/128") : ip.bytes[0] == 127; }

bool IsLinkLocalIp(const IpAddress& ip) {
  return ip.v6 ? In(ip, "fe80::/10") : In(ip, "169.254.0.0/16");
}

bool IsPrivateIp(const IpAddress& ip) {
  for (absl::string_view block : kPrivateBlocks) {
    if (In(ip, block)) return true;
  }
  return false;
}

bool IsMetadataIp(const IpAddress& ip) {
  for (absl::string_view m : kMetadataIps) {
    absl::optional<IpAddress> a = ParseIp(m);
    if (a.has_value() && *a == ip) return true;
  }
  return false;
}

bool IsNonTargetIp(const IpAddress& ip) {
  if (ip.v6) return In(ip, "::/128") || In(ip, "ff00::/8");
  return ip.bytes[0] == 0 || In(ip, "224.0.0.0/4") || In(ip, "255.255.255.255/32");
}

AddressClass ClassifyIp(const IpAddress& original) {
  const IpAddress ip = Unwrapped(original);
  if (IsMetadataIp(ip)) return AddressClass::kMetadata;
  if (ip.v6 ? In(ip, "::/128") : ip.bytes[0] == 0) return AddressClass::kUnspecified;
  if (ip.v6 ? In(ip, "ff00::/8") : In(ip, "224.0.0.0/4")) return AddressClass::kMulticast;
  if (!ip.v6 && In(ip, "255.255.255.255/32")) return AddressClass::kBroadcast;
  if (!ip.v6 && In(ip, "240.0.0.0/4")) return AddressClass::kReserved;
  if (IsLoopbackIp(ip)) return AddressClass::kLoopback;
  if (IsLinkLocalIp(ip)) return AddressClass::kLinkLocal;
  if (IsPrivateIp(ip)) return AddressClass::kPrivate;
  return AddressClass::kPublic;
}

absl::string_view AddressClassName(AddressClass c) {
  switch (c) {
    case AddressClass::kPublic:
      return "public";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kPrivate:
      return "private";
    case AddressClass::kMetadata:
      return "metadata";
    case AddressClass::kUnspecified:
      return "unspecified";
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kBroadcast:
      return "broadcast";
    case AddressClass::kReserved:
      return "reserved";
  }
  return "unknown";
}

bool IsLoopbackName(absl::string_view name) {
  return name == "localhost" || absl::EndsWith(name, ".localhost");
}

bool IsMetadataName(absl::string_view name) {
  for (absl::string_view m : kMetadataNames) {
    if (name == m) return true;
  }
  return false;
}

}  // namespace jobwheel::net
