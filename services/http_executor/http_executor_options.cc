#include "services/http_executor/http_executor_options.h"

#include <sys/stat.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace jobwheel::http_executor {
namespace {

absl::Status Invalid(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

}  // namespace

absl::StatusOr<net::OutboundPolicyOptions> HttpExecutorOptions::PolicyOptions() const {
  net::OutboundPolicyOptions o;
  absl::StatusOr<net::HostAllowlist> hosts =
      net::HostAllowlist::Parse(allow_hosts, "--allow_hosts");
  if (!hosts.ok()) return hosts.status();
  o.allow_hosts = *std::move(hosts);
  absl::StatusOr<std::vector<net::Cidr>> cidrs = net::ParseCidrList(allow_cidrs, "--allow_cidrs");
  if (!cidrs.ok()) return cidrs.status();
  o.allow_cidrs = *std::move(cidrs);
  absl::StatusOr<net::PortList> ports = net::PortList::Parse(allow_ports, "--allow_ports");
  if (!ports.ok()) return ports.status();
  o.allow_ports = *std::move(ports);
  o.allow_public = allow_public;
  return o;
}

absl::Status HttpExecutorOptions::Validate() const {
  absl::StatusOr<net::OutboundPolicyOptions> policy = PolicyOptions();
  if (!policy.ok()) return policy.status();
  if (!secret_dir.empty()) {
    struct stat st;
    if (secret_dir[0] != '/') return Invalid("secret_dir", "must be an absolute path");
    if (stat(secret_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Invalid("secret_dir", absl::StrCat(secret_dir, " is not a directory"));
    }
  }
  if (!secret_env_prefix.empty()) {
    for (char c : secret_env_prefix) {
      if (!absl::ascii_isupper(c) && !absl::ascii_isdigit(c) && c != '_') {
        return Invalid("secret_env_prefix", "upper-case letters, digits and _ only");
      }
    }
    if (secret_env_prefix.size() < 4 || !absl::EndsWith(secret_env_prefix, "_") ||
        secret_env_prefix == "JOBWHEEL_") {
      return Invalid("secret_env_prefix",
                     "must end in _, have at least 4 characters and not be JOBWHEEL_ alone (the "
                     "prefix of every flag's variable)");
    }
  }
  if (max_response_bytes < 1024) return Invalid("max_response_bytes", "must be at least 1024");
  if (connect_timeout <= absl::ZeroDuration()) return Invalid("connect_timeout", "must be > 0");
  return absl::OkStatus();
}

}  // namespace jobwheel::http_executor
