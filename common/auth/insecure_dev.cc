#include "common/auth/insecure_dev.h"

#include <arpa/inet.h>

#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace jobwheel {
namespace {

// The host part of "host:port", "[v6]:port" or a bare host; nullopt-like empty on junk.
bool SplitHost(absl::string_view address, std::string* host) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos) return false;
    *host = std::string(address.substr(1, close - 1));
    return true;
  }
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    *host = std::string(address);
    return true;
  }
  // More than one colon without brackets: a bare IPv6 address without a port.
  if (address.find(':') != colon) {
    *host = std::string(address);
    return true;
  }
  *host = std::string(address.substr(0, colon));
  return true;
}

}  // namespace

bool IsLoopbackListenAddress(absl::string_view address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  std::string host;
  if (!SplitHost(address, &host) || host.empty()) return false;
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
}

absl::Status CheckInsecureDevListen(bool insecure_dev, absl::string_view listen,
                                    absl::string_view listen_flag) {
  if (!insecure_dev || IsLoopbackListenAddress(listen)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--insecure_dev turns authentication off, so it is allowed only on a loopback listener "
      "(127.0.0.1, [::1], localhost or unix:); ",
      listen_flag, "=", listen,
      " can be reached from other hosts. Listen on loopback, or drop --insecure_dev and give "
      "the token files"));
}

}  // namespace jobwheel
