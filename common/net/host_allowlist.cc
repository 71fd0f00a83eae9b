#include "common/net/host_allowlist.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/net/host_port.h"

namespace jobwheel::net {

absl::StatusOr<HostAllowlist> HostAllowlist::Parse(absl::string_view text, absl::string_view flag) {
  std::vector<Entry> entries;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    // "host" and a bare IPv6 have no port; "host:port" and "[v6]:port" have one.
    absl::StatusOr<HostPort> hp = ParseHostPort(entry, /*default_port=*/1);
    const bool has_port =
        absl::StrContains(entry, "]:") ||
        (entry.front() != '[' && std::count(entry.begin(), entry.end(), ':') == 1);
    if (!hp.ok()) {
      const bool port_problem = absl::StrContains(hp.status().message(), "port");
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", port_problem ? "bad port" : "bad host", " in \"", entry, "\""));
    }
    entries.push_back(Entry{hp->host, has_port ? hp->port : 0});
  }
  return HostAllowlist(std::move(entries));
}

bool HostAllowlist::Contains(absl::string_view host, int port) const {
  for (const Entry& e : entries_) {
    if (e.host == host && (e.port == 0 || e.port == port)) return true;
  }
  return false;
}

}  // namespace jobwheel::net
