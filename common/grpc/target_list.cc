#include "common/grpc/target_list.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace jobwheel {

bool HasScheme(absl::string_view target) {
  for (absl::string_view scheme :
       {"dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:", "xds:", "vsock:"}) {
    if (absl::StartsWith(target, scheme)) return true;
  }
  return false;
}

std::vector<std::string> SplitTargets(absl::string_view target) {
  target = absl::StripAsciiWhitespace(target);
  if (target.empty()) return {};
  if (HasScheme(target)) return {std::string(target)};
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(target, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

std::string ChannelTarget(absl::string_view target) {
  target = absl::StripAsciiWhitespace(target);
  if (HasScheme(target) || !absl::StrContains(target, ',')) return std::string(target);
  return "ipv4:" + absl::StrJoin(SplitTargets(target), ",");
}

}  // namespace jobwheel
