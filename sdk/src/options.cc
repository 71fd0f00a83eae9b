#include "jobwheel/options.h"

#include "absl/strings/str_cat.h"
#include "common/auth/insecure_dev.h"

namespace jobwheel {

absl::Status ExecutorOptions::Validate() const {
  if (app.empty()) return absl::InvalidArgumentError("app: must not be empty");
  if (listen_address.empty()) {
    return absl::InvalidArgumentError("listen_address: must not be empty");
  }
  if (absl::Status s = CheckInsecureDevListen(insecure_dev, listen_address, "listen_address");
      !s.ok()) {
    return s;
  }
  if (log_dir.empty()) return absl::InvalidArgumentError("log_dir: must not be empty");
  if (spool_dir.empty()) return absl::InvalidArgumentError("spool_dir: must not be empty");
  if (!insecure_dev) {
    if (dispatcher_public_keys.empty() || scheduler_public_keys.empty()) {
      return absl::InvalidArgumentError(
          "dispatcher_public_keys/scheduler_public_keys: required (callers of ExecutorService "
          "present tokens signed with their keys) unless insecure_dev is set");
    }
    if (executor_token.empty()) {
      return absl::InvalidArgumentError(
          "executor_token: required (presented to the registry and dispatcher) unless "
          "insecure_dev is set");
    }
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert_file/tls_key_file: set both or neither");
  }
  if (tls_client_cert_file.empty() != tls_client_key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls_client_cert_file/tls_client_key_file: set both or neither");
  }
  if (capacity < 0) return absl::InvalidArgumentError("capacity: must not be negative");
  auto positive = [](absl::Duration d) { return d > absl::ZeroDuration(); };
  if (!positive(worker_idle_timeout)) {
    return absl::InvalidArgumentError("worker_idle_timeout: must be positive");
  }
  if (cancel_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("cancel_grace: must not be negative");
  }
  if (script_kill_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("script_kill_grace: must not be negative");
  }
  if (!positive(heartbeat_initial_backoff) || heartbeat_max_backoff < heartbeat_initial_backoff) {
    return absl::InvalidArgumentError(
        "heartbeat_initial_backoff/heartbeat_max_backoff: need 0 < initial <= max");
  }
  if (grace_period < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("grace_period: must not be negative");
  }
  if (result_flush_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("result_flush_timeout: must not be negative");
  }
  if (allow_scripts && script_user.empty()) {
    return absl::InvalidArgumentError(
        "script_user: must not be empty when scripts are allowed (\"nobody\" is a good choice)");
  }
  if (allow_scripts && (script_user == "root" || script_user == "0")) {
    return absl::InvalidArgumentError("script_user: scripts never run as root");
  }
  for (const std::string& path : script_hidden_paths) {
    if (path.empty() || path.find_first_not_of('/') == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("script_hidden_paths: \"", path, "\" cannot be hidden"));
    }
  }
  if (allow_scripts && shell_binary.empty()) {
    return absl::InvalidArgumentError("shell_binary: must not be empty when scripts are allowed");
  }
  return absl::OkStatus();
}

}  // namespace jobwheel
