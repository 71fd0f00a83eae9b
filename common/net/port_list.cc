#include "common/net/port_list.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/net/host_port.h"

namespace jobwheel::net {

absl::StatusOr<PortList> PortList::Parse(absl::string_view text, absl::string_view flag) {
  PortList list;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry == "*") {
      list.any_ = true;
      continue;
    }
    const size_t dash = entry.find('-');
    absl::optional<int> lo = ParsePort(entry.substr(0, dash));
    absl::optional<int> hi =
        dash == absl::string_view::npos ? lo : ParsePort(entry.substr(dash + 1));
    if (!lo.has_value() || !hi.has_value() || *lo > *hi) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": \"", entry, "\" is not a port or a lo-hi range of ports (1..65535) or *"));
    }
    list.ranges_.emplace_back(*lo, *hi);
  }
  return list;
}

bool PortList::Contains(int port) const {
  if (any_) return port >= 1 && port <= 65535;
  for (const auto& [lo, hi] : ranges_) {
    if (port >= lo && port <= hi) return true;
  }
  return false;
}

std::string PortList::ToString() const {
  if (any_) return "*";
  return absl::StrJoin(ranges_, ",", [](std::string* out, const std::pair<int, int>& r) {
    absl::StrAppend(out, r.first);
    if (r.second != r.first) absl::StrAppend(out, "-", r.second);
  });
}

}  // namespace jobwheel::net
