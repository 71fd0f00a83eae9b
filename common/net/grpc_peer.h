#ifndef JOBWHEEL_COMMON_NET_GRPC_PEER_H_
#define JOBWHEEL_COMMON_NET_GRPC_PEER_H_

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "common/net/ip_address.h"

namespace jobwheel::net {

// The IP of a gRPC peer string (grpc::ServerContext::peer()): "ipv4:10.0.0.5:4711",
// "ipv6:[::1]:4711" (or %5B::1%5D, as newer gRPC versions write it); nullopt for anything
// else (e.g. "unix:/path").
absl::optional<IpAddress> ParsePeerIp(absl::string_view peer);

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_GRPC_PEER_H_
