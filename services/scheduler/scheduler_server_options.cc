#include "services/scheduler/scheduler_server_options.h"

#include "absl/strings/str_cat.h"
#include "common/auth/insecure_dev.h"
#include "services/scheduler/webhook_alarm.h"

namespace jobwheel::scheduler {

absl::Status SchedulerServerOptions::Validate() const {
  if (db_dsn.empty()) return absl::InvalidArgumentError("--db_dsn: must not be empty");
  if (migrate_only) return absl::OkStatus();
  if (listen.empty()) return absl::InvalidArgumentError("--listen: must not be empty");
  // The admin API, the tokens and the readiness check share the pool.
  if (db_pool_size < 2 || db_pool_size > 256) {
    return absl::InvalidArgumentError("--db_pool_size: must be between 2 and 256");
  }
  if (dispatcher_target.empty()) {
    return absl::InvalidArgumentError("--dispatcher_target: must not be empty");
  }
  if (absl::Status s = readiness.Validate(); !s.ok()) return s;
  if (absl::Status s = CheckInsecureDevListen(insecure_dev, listen); !s.ok()) return s;
  if (!insecure_dev && (admin_token.empty() || signing_key.empty())) {
    return absl::InvalidArgumentError(
        "no credentials: give --admin_token_file and --signing_key_file, or --insecure_dev "
        "for a development setup without authentication");
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (tls_client_cert.empty() != tls_client_key.empty()) {
    return absl::InvalidArgumentError("--tls_client_cert and --tls_client_key go together");
  }
  if (elector.retry_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--lock_retry_interval: must be positive");
  }
  if (elector.takeover_after < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--leader_silence_takeover: must not be negative");
  }
  if (engine.preread_window <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--preread_window: must be positive");
  }
  if (engine.claim_ahead < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--claim_ahead: must not be negative");
  }
  if (engine.dispatch_threads < 1 || engine.dispatch_threads > 64) {
    return absl::InvalidArgumentError("--dispatch_threads: must be between 1 and 64");
  }
  // Plus the 100 ms hand-off grid and retry backoff, it stays below the dispatchers'
  // default --max_trigger_hold (2s).
  if (engine.dispatch_lead < absl::ZeroDuration() || engine.dispatch_lead > absl::Seconds(1)) {
    return absl::InvalidArgumentError("--dispatch_lead: must be between 0 and 1s");
  }
  if (engine.misfire_threshold <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--misfire_threshold: must be positive");
  }
  if (monitors.lost_after <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--lost_run_after: must be positive");
  }
  if (monitors.offline_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--executor_offline_grace: must not be negative");
  }
  if (monitors.restart_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--restart_grace: must not be negative");
  }
  if (retention_days < 1) return absl::InvalidArgumentError("--retention_days: must be at least 1");
  if (audit_retention_days < 1 || audit_retention_days > 36500) {
    return absl::InvalidArgumentError("--audit_retention_days: must be between 1 and 36500");
  }
  if (!alarm_webhook_url.empty()) {
    if (absl::Status s = WebhookAlarm::CheckAllowlist(alarm_webhook_url, alarm_webhook_allowlist);
        !s.ok()) {
      return absl::InvalidArgumentError(s.message());
    }
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::scheduler
