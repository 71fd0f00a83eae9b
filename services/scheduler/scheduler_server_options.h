#ifndef JOBWHEEL_SERVICES_SCHEDULER_SCHEDULER_SERVER_OPTIONS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_SCHEDULER_SERVER_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/grpc/grpc_server.h"
#include "common/server/readiness.h"
#include "services/scheduler/fire_engine.h"
#include "services/scheduler/leader_elector.h"
#include "services/scheduler/monitors.h"

namespace jobwheel::scheduler {

// Everything the scheduler's flags say, checked by Validate() before anything starts.
struct SchedulerServerOptions {
  std::string listen;
  std::string metrics_address;
  std::string db_dsn;
  int db_pool_size = 8;
  std::string dispatcher_target;
  // --db_check_interval, --db_check_timeout, --drain_delay.
  ReadinessOptions readiness;
  // dsn and replica_id come from --db_dsn and --replica_id; retry_interval from
  // --lock_retry_interval, takeover_after from --leader_silence_takeover.
  LeaderElector::Options elector;
  // --preread_window, --claim_ahead, --dispatch_threads, --dispatch_lead, --misfire_threshold.
  FireEngine::Options engine;
  // --lost_run_after, --executor_offline_grace, --restart_grace.
  Monitors::Options monitors;
  int retention_days = 30;
  int audit_retention_days = 365;
  std::string alarm_webhook_url;
  std::string alarm_webhook_ca_file;
  std::string alarm_webhook_allowlist;
  std::string admin_token;
  std::string signing_key;  // PEM.
  bool insecure_dev = false;
  bool migrate_only = false;
  ServerTls tls;
  // --tls_ca, --tls_client_cert, --tls_client_key: to dispatchers and executors.
  std::string tls_ca;
  std::string tls_client_cert;
  std::string tls_client_key;

  // INVALID_ARGUMENT naming the flag of the first bad value. With migrate_only, only what
  // the migration needs.
  absl::Status Validate() const;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_SCHEDULER_SERVER_OPTIONS_H_
