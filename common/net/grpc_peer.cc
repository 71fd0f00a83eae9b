#include "common/net/grpc_peer.h"

#include <string>

#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace jobwheel::net {

absl::optional<IpAddress> ParsePeerIp(absl::string_view peer) {
  const std::string p =
      absl::StrReplaceAll(peer, {{"%5B", "["}, {"%5D", "]"}, {"%5b", "["}, {"%5d", "]"}});
  absl::string_view rest = p;
  if (!absl::ConsumePrefix(&rest, "ipv4:") && !absl::ConsumePrefix(&rest, "ipv6:")) {
    return absl::nullopt;
  }
  const size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos) return absl::nullopt;
  return ParseIp(rest.substr(0, colon));
}

}  // namespace jobwheel::net
