#include "services/xxl_gateway/gateway_server_options.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/auth/insecure_dev.h"
#include "common/net/host_port.h"
#include "services/xxl_gateway/xxl_protocol.h"

namespace jobwheel::xxl {

absl::Status ParsePortRange(absl::string_view text, int* from, int* to) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '-');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], from) || !absl::SimpleAtoi(parts[1], to) ||
      *from < 1 || *to > 65535 || *from > *to) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--executor_ports \"", text, "\": want FROM-TO with 1 <= FROM <= TO <= 65535"));
  }
  return absl::OkStatus();
}

std::set<std::string> ParseAppList(absl::string_view text) {
  std::set<std::string> out;
  for (absl::string_view a : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    out.insert(std::string(absl::StripAsciiWhitespace(a)));
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::vector<std::string>>> ParseAppHandlers(
    absl::string_view text) {
  std::map<std::string, std::vector<std::string>> out;
  for (absl::string_view entry : absl::StrSplit(text, ';', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(entry, '=');
    const std::string app(absl::StripAsciiWhitespace(kv.first));
    if (!ValidateAppName(app).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--app_handlers: \"", app, "\" is not an app name"));
    }
    for (absl::string_view h : absl::StrSplit(kv.second, '|', absl::SkipWhitespace())) {
      out[app].push_back(std::string(absl::StripAsciiWhitespace(h)));
    }
  }
  return out;
}

absl::Status GatewayServerOptions::Validate() {
  if (executor_ports.empty()) {
    return absl::InvalidArgumentError(
        "--executor_ports: required (FROM-TO: one port per bridged XXL executor)");
  }
  if (absl::Status s = ParsePortRange(executor_ports, &port_from, &port_to); !s.ok()) return s;
  if (state_dir.empty()) {
    return absl::InvalidArgumentError(
        "--state_dir: required (ports, identities and runs in flight survive restarts there)");
  }
  if (registry_target.empty()) return absl::InvalidArgumentError("--registry_target: required");
  if (dispatcher_target.empty()) {
    return absl::InvalidArgumentError("--dispatcher_target: required");
  }
  if (advertise_host.empty()) return absl::InvalidArgumentError("--advertise_host: required");
  if (bind_host.empty()) bind_host = advertise_host;
  if (absl::Status s = net::ParseHostPort(listen_http).status(); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen_http \"", listen_http, "\": want host:port (", s.message(), ")"));
  }
  if (max_body_bytes < 1024) return absl::InvalidArgumentError("--max_body_bytes: at least 1024");
  if (http_threads < 1 || http_threads > 1024) {
    return absl::InvalidArgumentError("--http_threads: 1..1024");
  }
  if (max_connections_per_client < 1 || max_connections_per_client > http_threads) {
    return absl::InvalidArgumentError("--max_connections_per_client: 1..--http_threads");
  }
  if (probe_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--probe_interval: must be positive");
  }
  if (offline_after < probe_interval) {
    return absl::InvalidArgumentError("--offline_after: must be at least --probe_interval");
  }
  if (call_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--xxl_call_timeout: must be positive");
  }
  if (absl::Status s = ParseAppHandlers(app_handlers).status(); !s.ok()) return s;
  if (insecure_dev) {
    if (absl::Status s = CheckInsecureDevListen(true, listen_http, "--listen_http"); !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckInsecureDevListen(true, absl::StrCat(bind_host, ":1"), "--bind_host");
        !s.ok()) {
      return s;
    }
  } else if (dispatcher_public_key_file.empty() || scheduler_public_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--dispatcher_public_key_file and --scheduler_public_key_file: required to verify "
        "the dispatchers' and the scheduler's calls (or --insecure_dev on loopback)");
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::xxl
