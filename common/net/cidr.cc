#include "common/net/cidr.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace jobwheel::net {

bool Cidr::Contains(const IpAddress& ip) const {
  if (ip.v6 != network.v6) return false;
  const int bits = ip.v6 ? 128 : 32;
  if (prefix_len < 0 || prefix_len > bits) return false;
  for (int i = 0; i < prefix_len; ++i) {
    const int byte = i / 8;
    const int mask = 0x80 >> (i % 8);
    if ((ip.bytes[byte] & mask) != (network.bytes[byte] & mask)) return false;
  }
  return true;
}

std::string Cidr::ToString() const { return absl::StrCat(IpToString(network), "/", prefix_len); }

absl::optional<Cidr> ParseCidr(absl::string_view text) {
  const size_t slash = text.find('/');
  Cidr cidr;
  absl::optional<IpAddress> ip = ParseIp(text.substr(0, slash));
  if (!ip.has_value()) return absl::nullopt;
  cidr.network = *ip;
  const int bits = ip->v6 ? 128 : 32;
  if (slash == absl::string_view::npos) {
    cidr.prefix_len = bits;
    return cidr;
  }
  const absl::string_view len = text.substr(slash + 1);
  if (len.empty() || !absl::ascii_isdigit(len[0]) || !absl::SimpleAtoi(len, &cidr.prefix_len) ||
      cidr.prefix_len < 0 || cidr.prefix_len > bits) {
    return absl::nullopt;
  }
  return cidr;
}

absl::StatusOr<std::vector<Cidr>> ParseCidrList(absl::string_view text, absl::string_view flag) {
  std::vector<Cidr> out;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    absl::optional<Cidr> cidr = ParseCidr(entry);
    if (!cidr.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": \"", entry, "\" is not a CIDR (ip/len) or an IP"));
    }
    out.push_back(*cidr);
  }
  return out;
}

}  // namespace jobwheel::net
