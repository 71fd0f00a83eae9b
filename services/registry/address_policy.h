#ifndef JOBWHEEL_SERVICES_REGISTRY_ADDRESS_POLICY_H_
#define JOBWHEEL_SERVICES_REGISTRY_ADDRESS_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "common/net/grpc_peer.h"
#include "common/net/ip_address.h"

namespace jobwheel::registry {

// Addresses and gRPC peers as common/net spells them (IPv4-mapped IPv6 addresses are IPv4).
using ::jobwheel::net::IpAddress;
using ::jobwheel::net::ParseIp;
using ::jobwheel::net::ParsePeerIp;

// Who is registering, as the transport proves it.
struct CallerIdentity {
  std::string peer;  // grpc::ServerContext::peer().
  // With mutual TLS: the verified client certificate's subjectAltNames.
  bool certificate_verified = false;
  std::vector<std::string> certificate_dns_names;
  std::vector<std::string> certificate_ips;
};

// One `app=host|ip|cidr` entry of --executor_address_allowlist ("*" = every app).
struct AddressAllowRule {
  std::string app;
  std::string host;  // Lowercased DNS name or IP literal; empty for a CIDR.
  absl::optional<IpAddress> network;
  int prefix_len = 0;
};

struct AddressPolicyOptions {
  // Loopback targets (127.0.0.0/8, ::1, localhost). main.cc allows them by default only
  // when the registry itself listens on loopback (a local stack).
  bool allow_loopback = false;
  // Link-local targets (169.254.0.0/16, fe80::/10), cloud metadata addresses excepted.
  bool allow_link_local = false;
  // Addresses that executors of an app may advertise whatever their peer address (NAT,
  // proxies, DNS names without mutual TLS).
  std::vector<AddressAllowRule> allowlist;
};

// Parses "app=10.0.0.0/8,app=exec.example.com,*=192.168.1.7" (empty: no rules);
// INVALID_ARGUMENT naming `flag` on a bad entry.
absl::StatusOr<std::vector<AddressAllowRule>> ParseAddressAllowlist(absl::string_view text,
                                                                    absl::string_view flag);

// Decides whether a caller may register an executor at an address: the address must not be
// a dangerous target (gRPC schemes, unspecified, multicast, cloud metadata always; loopback
// and link-local unless allowed), and it must be the caller's own — its host equals the
// peer's IP, or a subjectAltName of its verified client certificate, or is allow-listed for
// the app. A DNS name is never resolved (that would be a check-then-use race). Immutable
// after construction; thread-safe.
class AddressPolicy {
 public:
  explicit AddressPolicy(AddressPolicyOptions options);

  // OK, or PERMISSION_DENIED naming register.address. `address` has passed ValidateAddress.
  absl::Status Check(absl::string_view app, absl::string_view address,
                     const CallerIdentity& caller) const;

  const AddressPolicyOptions& options() const { return options_; }

 private:
  bool Allowlisted(absl::string_view app, absl::string_view host,
                   const absl::optional<IpAddress>& ip) const;

  const AddressPolicyOptions options_;
};

// Whether `host` of a listen address ("127.0.0.1", "[::1]", "localhost") is loopback.
bool IsLoopbackHost(absl::string_view host);

// The options from the registry's flags: --allow_loopback_executors ("auto": allowed exactly
// when `listen` is a loopback address, i.e. a local stack; "true"; "false"),
// --allow_link_local_executors and --executor_address_allowlist. INVALID_ARGUMENT naming the
// flag on a bad value.
absl::StatusOr<AddressPolicyOptions> AddressPolicyOptionsFromFlags(absl::string_view allow_loopback,
                                                                   bool allow_link_local,
                                                                   absl::string_view allowlist,
                                                                   absl::string_view listen);
// One line for the start-up log: what the policy allows.
std::string DescribeAddressPolicy(const AddressPolicyOptions& options);

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_ADDRESS_POLICY_H_
