#include "services/dispatcher/dispatcher_options.h"

#include "common/auth/insecure_dev.h"

namespace jobwheel::dispatcher {

absl::Status DispatcherOptions::Validate() const {
  if (max_runs_per_batch < 1 || max_runs_per_batch > 1000) {
    return absl::InvalidArgumentError(
        "--max_runs_per_batch: must be between 1 and 1000 (the executors' limit)");
  }
  if (run_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--run_deadline: must be positive");
  }
  if (trigger_tick < absl::ZeroDuration() || trigger_tick > absl::Milliseconds(100) ||
      (trigger_tick > absl::ZeroDuration() &&
       absl::Seconds(1) % trigger_tick != absl::ZeroDuration())) {
    return absl::InvalidArgumentError(
        "--trigger_tick: must be between 0 and 100ms and divide 1s (e.g. 1ms, 2ms, 5ms, 10ms)");
  }
  if (max_trigger_hold < absl::ZeroDuration() || max_trigger_hold > absl::Seconds(30)) {
    return absl::InvalidArgumentError("--max_trigger_hold: must be between 0 and 30s");
  }
  if (trigger_write_delay < absl::ZeroDuration() || trigger_write_delay > absl::Seconds(10)) {
    return absl::InvalidArgumentError(
        "--trigger_write_delay: must be between 0 and 10s (runs show PENDING meanwhile)");
  }
  if (get_runs_attempts < 1 || get_runs_attempts > 20) {
    return absl::InvalidArgumentError("--get_runs_attempts: must be between 1 and 20");
  }
  if (get_runs_deadline < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--get_runs_deadline: must not be negative (0: --run_deadline's)");
  }
  if (max_outcomes_per_write < 1) {
    return absl::InvalidArgumentError("max_outcomes_per_write: must be at least 1");
  }
  if (write_retry <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("write_retry: must be positive");
  }
  return absl::OkStatus();
}

absl::Status DispatcherServerOptions::Validate() const {
  if (db_dsn.empty()) return absl::InvalidArgumentError("--db_dsn: required");
  if (registry_target.empty()) return absl::InvalidArgumentError("--registry_target: required");
  if (!insecure_dev && (signing_key.empty() || scheduler_public_keys.empty())) {
    return absl::InvalidArgumentError(
        "no credentials: --signing_key_file and --scheduler_public_key_file are required "
        "(executors then present --executor_token_file's token or per-app API tokens), or "
        "--insecure_dev for local development");
  }
  if (absl::Status s = CheckInsecureDevListen(insecure_dev, listen); !s.ok()) return s;
  if (server_tls.cert_file.empty() != server_tls.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (client_tls.cert_file.empty() != client_tls.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_client_cert and --tls_client_key go together");
  }
  if (db_pool_size < 1) return absl::InvalidArgumentError("--db_pool_size: must be >= 1");
  if (probe_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--probe_deadline: must be positive");
  }
  if (pools.fast_max_in_flight < 1 || pools.slow_max_in_flight < 1) {
    return absl::InvalidArgumentError(
        "--trigger_fast_max_in_flight, --trigger_slow_max_in_flight: must be >= 1");
  }
  if (pools.max_waiting_runs < 1) {
    return absl::InvalidArgumentError("--trigger_max_waiting_runs: must be >= 1");
  }
  return dispatcher.Validate();
}

}  // namespace jobwheel::dispatcher
