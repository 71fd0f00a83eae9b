#ifndef JOBWHEEL_COMMON_NET_ADDRESS_CLASS_H_
#define JOBWHEEL_COMMON_NET_ADDRESS_CLASS_H_

#include "absl/strings/string_view.h"
#include "common/net/ip_address.h"

namespace jobwheel::net {

// What kind of destination an address is, for policies on where a process may connect or
// what an executor may advertise. Pure functions.
enum class AddressClass {
  kPublic = 0,
  kLoopback,     // 127.0.0.0/8, ::1.
  kLinkLocal,    // 169.254.0.0/16, fe80::/10 (metadata addresses excepted).
  kPrivate,      // 10/8, 172.16/12, 192.168/16, 100.64/10 (shared), fc00::/7, fec0::/10.
  kMetadata,     // Cloud instance metadata services (see IsMetadataIp).
  kUnspecified,  // 0.0.0.0/8, :: (dialling them reaches this host).
  kMulticast,    // 224.0.0.0/4, ff00::/8.
  kBroadcast,    // 255.255.255.255.
  kReserved,     // 240.0.0.0/4 (not broadcast).
};

// The class of `ip`; the first that applies in the order metadata, unspecified, multicast,
// broadcast, reserved, loopback, link-local, private. A NAT64 address (64:ff9b::/96) is
// classified by the IPv4 address it embeds.
AddressClass ClassifyIp(const IpAddress& ip);

// The rule name used in refusals and docs: "public", "loopback", "link-local", "private",
// "metadata", "unspecified", "multicast", "broadcast", "reserved".
absl::string_view AddressClassName(AddressClass c);

bool IsLoopbackIp(const IpAddress& ip);
bool IsLinkLocalIp(const IpAddress& ip);
bool IsPrivateIp(const IpAddress& ip);
// AWS/GCP/Azure/OpenStack 169.254.169.254, AWS over IPv6 fd00:ec2::254, Alibaba 100.100.100.200.
bool IsMetadataIp(const IpAddress& ip);
// Unspecified, multicast or broadcast: never a destination.
bool IsNonTargetIp(const IpAddress& ip);

// "localhost" and names under ".localhost" (`name` in canonical spelling, see host_port.h).
bool IsLoopbackName(absl::string_view name);
// Names of metadata services: metadata.google.internal, metadata, instance-data.
bool IsMetadataName(absl::string_view name);

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_ADDRESS_CLASS_H_
