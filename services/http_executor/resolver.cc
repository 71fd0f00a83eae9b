#include "services/http_executor/resolver.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace jobwheel::http_executor {

absl::StatusOr<std::vector<net::IpAddress>> SystemResolver::Resolve(const std::string& host) {
  struct addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    const std::string why = absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc));
    return rc == EAI_NONAME ? absl::NotFoundError(why) : absl::UnavailableError(why);
  }
  std::vector<net::IpAddress> out;
  for (const struct addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    net::IpAddress ip;
    if (ai->ai_family == AF_INET) {
      const auto* sin = reinterpret_cast<const struct sockaddr_in*>(ai->ai_addr);
      std::memcpy(ip.bytes.data(), &sin->sin_addr, 4);
    } else if (ai->ai_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const struct sockaddr_in6*>(ai->ai_addr);
      ip.v6 = true;
      std::memcpy(ip.bytes.data(), &sin6->sin6_addr, 16);
      // An IPv4-mapped answer is the IPv4 address (one spelling per host).
      if (absl::optional<net::IpAddress> v = net::ParseIp(net::IpToString(ip)); v.has_value()) {
        ip = *v;
      }
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), ip) == out.end()) out.push_back(ip);
  }
  freeaddrinfo(res);
  if (out.empty())
    return absl::NotFoundError(absl::StrCat("cannot resolve ", host, ": no address"));
  return out;
}

}  // namespace jobwheel::http_executor
