#include "common/net/ip_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace jobwheel::net {

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

std::string IpToString(const IpAddress& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(ip.v6 ? AF_INET6 : AF_INET, ip.bytes.data(), buf, sizeof(buf));
  return buf;
}

}  // namespace jobwheel::net
