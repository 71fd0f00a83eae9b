// The scheduler: JobAdminService, TokenAdminService and LeadershipService, and — on the replica
// holding the schedule lock — the fire engine and monitors. Flags only; the logic lives in the
// libraries. LeadershipService (read-only, no secrets), health and reflection need no token.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/auth/insecure_dev.h"
#include "common/auth/pg_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/base/flags.h"
#include "common/base/logging.h"
#include "common/base/mutex_mode.h"
#include "common/base/signals.h"
#include "common/grpc/grpc_server.h"
#include "common/pg/migrations.h"
#include "common/pg/pg_pool.h"
#include "common/server/pg_readiness_check.h"
#include "common/server/readiness.h"
#include "common/server/readiness_flags.h"
#include "common/time/clock.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "services/scheduler/admin/grpc_executor_client.h"
#include "services/scheduler/admin/job_admin.h"
#include "services/scheduler/admin/job_admin_service.h"
#include "services/scheduler/admin/pg_job_store.h"
#include "services/scheduler/admin/token_admin.h"
#include "services/scheduler/admin/token_admin_service.h"
#include "services/scheduler/alarm_outbox_pg.h"
#include "services/scheduler/alarm_sender.h"
#include "services/scheduler/dispatch_client.h"
#include "services/scheduler/fire_engine.h"
#include "services/scheduler/leader_elector.h"
#include "services/scheduler/leadership_service.h"
#include "services/scheduler/monitors.h"
#include "services/scheduler/pg_fire_store.h"
#include "services/scheduler/run_failover.h"
#include "services/scheduler/webhook_alarm.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7100", "gRPC listen address");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9100",
          "Prometheus /metrics address; empty disables");
ABSL_FLAG(std::string, db_dsn, "", "PostgreSQL connection string (libpq)");
ABSL_FLAG(std::string, replica_id, "", "This replica's id; default hostname-pid");
ABSL_FLAG(std::string, dispatcher_target, "127.0.0.1:7102",
          "Dispatcher gRPC target (several: ipv4:a:1,b:2 or dns:///name:port)");
ABSL_FLAG(absl::Duration, leader_silence_takeover, absl::Seconds(4),
          "A standby ends the leader's lock session after it has been silent this long (a frozen "
          "leader); 0 disables");
ABSL_FLAG(absl::Duration, lock_retry_interval, absl::Milliseconds(500),
          "How often a standby tries the schedule lock");
ABSL_FLAG(absl::Duration, preread_window, absl::Seconds(5),
          "Jobs due within this window are claimed: their fires recorded and held in memory");
ABSL_FLAG(absl::Duration, claim_ahead, absl::Seconds(5),
          "A claimed job's fires are recorded this far beyond --preread_window, so frequent "
          "jobs are claimed once per this period rather than once per fire");
ABSL_FLAG(int, dispatch_threads, 4,
          "Hand-offs to dispatchers in flight at once; each takes every fire due when it starts");
ABSL_FLAG(absl::Duration, dispatch_lead, absl::Milliseconds(300),
          "Fires are handed to a dispatcher this long before their scheduled time; it records "
          "the runs at once and triggers them at the scheduled time (0: hand off when due). "
          "0 to 1s; with the 100 ms hand-off grid it must stay below the dispatchers' "
          "--max_trigger_hold (2s)");
ABSL_FLAG(absl::Duration, misfire_threshold, absl::Seconds(5),
          "A fire later than this follows the job's misfire strategy");
ABSL_FLAG(absl::Duration, lost_run_after, absl::Minutes(10),
          "A RUNNING run on an executor offline since an unknown time (no offline time "
          "recorded) becomes LOST once it is older than this");
ABSL_FLAG(absl::Duration, executor_offline_grace, absl::Milliseconds(500),
          "RUNNING runs of an executor the registry took offline become LOST this long after "
          "(the same process reconnecting within it keeps them)");
ABSL_FLAG(absl::Duration, restart_grace, absl::Seconds(1),
          "RUNNING runs of an executor that restarted (a new process under its address) become "
          "LOST this long after the new process registered (it may replay spooled results)");
ABSL_FLAG(int, retention_days, 30, "Fires and runs older than this are deleted");
ABSL_FLAG(int, audit_retention_days, 365,
          "Audit events (ListAuditEvents) older than this are deleted; 1..36500");
ABSL_FLAG(std::string, alarm_webhook_url, "",
          "https:// (or http://) URL that receives alarms as JSON, each with an Idempotency-Key "
          "header; empty: alarms are recorded in alarm_outbox but not posted");
ABSL_FLAG(std::string, alarm_webhook_ca_file, "",
          "PEM file of the CAs that verify an https:// --alarm_webhook_url (default: the system "
          "CAs)");
ABSL_FLAG(std::string, alarm_webhook_allowlist, "",
          "Comma list of host or host:port that --alarm_webhook_url may name (required with it)");
ABSL_FLAG(std::string, admin_token_file, "",
          "File holding the bootstrap admin token (ADMIN role; create further tokens with "
          "TokenAdminService)");
ABSL_FLAG(std::string, signing_key_file, "",
          "The scheduler's Ed25519 private key (PEM): signs its short-lived tokens to dispatchers "
          "(Dispatch) and executors (Kill, Log), who hold its public key");
ABSL_FLAG(bool, insecure_dev, false, "Run without authentication (development only)");
ABSL_FLAG(bool, migrate_only, false, "Apply schema migrations and exit");
ABSL_FLAG(std::string, tls_cert, "", "Server certificate (PEM); enables TLS");
ABSL_FLAG(std::string, tls_key, "", "Server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "", "CA for client certificates (mutual TLS)");
ABSL_FLAG(std::string, tls_ca, "", "CA to verify dispatchers and executors (client TLS)");
ABSL_FLAG(
    std::string, tls_client_cert, "",
    "Client certificate (PEM) for mutual TLS to dispatchers and executors; default --tls_cert");
ABSL_FLAG(std::string, tls_client_key, "", "Private key of --tls_client_cert; default --tls_key");
ABSL_FLAG(bool, log_json, false, "Log JSON lines instead of text");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn or error");

namespace {

std::string DefaultReplicaId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat(host, "-", getpid());
}

int Fail(const std::string& message) {
  spdlog::critical("{}", message);  // spdlog writes to stderr, as text or as JSON.
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  jobwheel::BlockTerminationSignals();
  jobwheel::ParseFlagsWithEnv(argc, argv, "jobwheel scheduler");
  jobwheel::InitLogging("scheduler", absl::GetFlag(FLAGS_log_json), absl::GetFlag(FLAGS_log_level));
  using namespace jobwheel;             // NOLINT
  using namespace jobwheel::scheduler;  // NOLINT

  const std::string dsn = absl::GetFlag(FLAGS_db_dsn);
  if (dsn.empty()) return Fail("--db_dsn is required");
  std::string replica = absl::GetFlag(FLAGS_replica_id);
  if (replica.empty()) replica = DefaultReplicaId();
  if (absl::Status s =
          CheckInsecureDevListen(absl::GetFlag(FLAGS_insecure_dev), absl::GetFlag(FLAGS_listen));
      !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (absl::GetFlag(FLAGS_tls_cert).empty() != absl::GetFlag(FLAGS_tls_key).empty()) {
    return Fail("--tls_cert and --tls_key go together");
  }
  if (absl::GetFlag(FLAGS_tls_client_cert).empty() != absl::GetFlag(FLAGS_tls_client_key).empty()) {
    return Fail("--tls_client_cert and --tls_client_key go together");
  }
  if (!absl::GetFlag(FLAGS_alarm_webhook_url).empty()) {
    absl::Status allowed = WebhookAlarm::CheckAllowlist(
        absl::GetFlag(FLAGS_alarm_webhook_url), absl::GetFlag(FLAGS_alarm_webhook_allowlist));
    if (!allowed.ok()) return Fail(std::string(allowed.message()));
  }

  {
    auto conn = PgPool::Connect(dsn);
    if (!conn.ok()) return Fail(std::string(conn.status().message()));
    absl::Status migrated = ApplyMigrations(**conn);
    if (!migrated.ok()) return Fail(migrated.ToString());
  }
  if (absl::GetFlag(FLAGS_migrate_only)) {
    spdlog::info("schema at version {}", LatestSchemaVersion());
    return 0;
  }

  const bool insecure = absl::GetFlag(FLAGS_insecure_dev);
  auto admin_token = ReadTokenFile(absl::GetFlag(FLAGS_admin_token_file), "--admin_token_file");
  if (!admin_token.ok()) return Fail(admin_token.status().ToString());
  auto signing_key = ReadKeyFile(absl::GetFlag(FLAGS_signing_key_file), "--signing_key_file");
  if (!signing_key.ok()) return Fail(signing_key.status().ToString());
  if (!insecure && (admin_token->empty() || signing_key->empty())) {
    return Fail(
        "no credentials: give --admin_token_file and --signing_key_file, or --insecure_dev "
        "for a development setup without authentication");
  }
  std::unique_ptr<CallerTokenSigner> signer;
  if (!signing_key->empty()) {
    CallerTokenSigner::Options signer_options;
    signer_options.issuer = std::string(kIssuerScheduler);
    auto created = CallerTokenSigner::Create(*signing_key, signer_options, RealClock::Get());
    if (!created.ok())
      return Fail(absl::StrCat("--signing_key_file: ", created.status().message()));
    signer = std::move(*created);
  }
  if (insecure) spdlog::warn("INSECURE DEV MODE: the admin API accepts unauthenticated calls");

  auto registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!absl::GetFlag(FLAGS_metrics_address).empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(absl::GetFlag(FLAGS_metrics_address));
      exposer->RegisterCollectable(registry);
    } catch (const std::exception& e) {
      return Fail(absl::StrCat("--metrics_address: ", e.what()));
    }
  }
  SchedulerMetrics metrics(*registry);
  PgPool pool(dsn, 8, [&metrics](absl::string_view op, absl::Duration d, bool ok) {
    metrics.DbQuery(op, d, ok);
  });
  // Ready while the database answers; a standby is ready too (no leader condition).
  const ReadinessOptions readiness_options = ReadinessOptionsFromFlags();
  if (absl::Status s = readiness_options.Validate(); !s.ok()) return Fail(s.ToString());
  Readiness readiness(RealClock::Get(), registry.get(), "jobwheel_scheduler");
  AddDatabaseCheck(readiness, pool, readiness_options);
  readiness.Start();

  const ClientTls client_tls = ClientTls::WithServerFallback(
      absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_client_cert),
      absl::GetFlag(FLAGS_tls_client_key), absl::GetFlag(FLAGS_tls_cert),
      absl::GetFlag(FLAGS_tls_key));
  auto dispatcher_channel = MakeChannel(absl::GetFlag(FLAGS_dispatcher_target), client_tls);
  if (!dispatcher_channel.ok()) return Fail(dispatcher_channel.status().ToString());
  Clock& clock = RealClock::Get();
  GrpcDispatchClient dispatch_client(*dispatcher_channel, signer.get(), clock);

  std::unique_ptr<AlarmPoster> alarm_poster = std::make_unique<DropAlarmPoster>();
  if (!absl::GetFlag(FLAGS_alarm_webhook_url).empty()) {
    WebhookAlarm::Options webhook_options;
    webhook_options.ca_file = absl::GetFlag(FLAGS_alarm_webhook_ca_file);
    auto webhook = WebhookAlarm::Create(absl::GetFlag(FLAGS_alarm_webhook_url), webhook_options);
    if (!webhook.ok()) return Fail(webhook.status().ToString());
    alarm_poster = std::move(webhook).value();
  }

  FireEngine::Options engine_options;
  engine_options.preread_window = absl::GetFlag(FLAGS_preread_window);
  engine_options.claim_ahead = absl::GetFlag(FLAGS_claim_ahead);
  engine_options.dispatch_threads = absl::GetFlag(FLAGS_dispatch_threads);
  if (engine_options.dispatch_threads < 1 || engine_options.dispatch_threads > 64) {
    return Fail("--dispatch_threads: must be between 1 and 64");
  }
  engine_options.dispatch_lead = absl::GetFlag(FLAGS_dispatch_lead);
  if (engine_options.dispatch_lead < absl::ZeroDuration() ||
      engine_options.dispatch_lead > absl::Seconds(1)) {
    // Plus the 100 ms hand-off grid and retry backoff, it stays below the dispatchers'
    // default --max_trigger_hold (2s).
    return Fail("--dispatch_lead: must be between 0 and 1s");
  }
  engine_options.misfire_threshold = absl::GetFlag(FLAGS_misfire_threshold);
  Monitors::Options monitor_options;
  monitor_options.lost_after = absl::GetFlag(FLAGS_lost_run_after);
  monitor_options.offline_grace = absl::GetFlag(FLAGS_executor_offline_grace);
  monitor_options.restart_grace = absl::GetFlag(FLAGS_restart_grace);
  monitor_options.retention = absl::Hours(24) * absl::GetFlag(FLAGS_retention_days);
  const int audit_days = absl::GetFlag(FLAGS_audit_retention_days);
  if (audit_days < 1 || audit_days > 36500) {
    return Fail("--audit_retention_days: must be between 1 and 36500");
  }
  monitor_options.audit_retention = absl::Hours(24) * audit_days;

  FireEngine* engine_ptr = nullptr;
  LeaderElector::Options elector_options;
  elector_options.dsn = dsn;
  elector_options.replica_id = replica;
  elector_options.retry_interval = absl::GetFlag(FLAGS_lock_retry_interval);
  elector_options.takeover_after = absl::GetFlag(FLAGS_leader_silence_takeover);
  LeaderElector elector(elector_options,
                        {[&engine_ptr](int64_t epoch) { engine_ptr->OnElected(epoch); },
                         [&engine_ptr]() { engine_ptr->OnDeposed(); }},
                        clock);
  PgFireStore fire_store(elector);
  FireEngine engine(engine_options, fire_store, dispatch_client, clock, metrics);
  engine_ptr = &engine;
  Monitors monitors(monitor_options, fire_store, clock, metrics);
  PgAlarmOutbox alarm_outbox(elector);
  AlarmSender alarm_sender(AlarmSender::Options(), alarm_outbox, *alarm_poster, clock, metrics);

  admin::PgJobStore job_store(pool);
  admin::GrpcExecutorClient executor_client(client_tls, signer.get(), {}, clock);
  admin::JobAdmin job_admin(job_store, executor_client, clock);
  RunFailover run_failover(
      dsn, monitors,
      [&executor_client](const std::string& app, const std::string& address,
                         const jobwheel::v1::KillRequest& req) {
        return executor_client.Kill(app, address, req);
      },
      clock, metrics);
  PgTokenStore token_store(pool);
  TokenAuthenticator::Options auth_options;
  auth_options.insecure_dev = insecure;
  auth_options.admin_token = *admin_token;
  TokenAuthenticator authenticator(auth_options, &token_store, clock);
  admin::JobAdminService admin_service(job_admin, authenticator);
  admin::TokenAdmin token_admin(token_store, clock);
  admin::TokenAdminService token_service(token_admin, authenticator);
  // Open on purpose: read-only, no secrets, used by probes and operators to find the leader.
  LeadershipService leadership_service(elector);

  engine.Start();
  monitors.Start();
  run_failover.Start();
  alarm_sender.Start();
  // Before serving: Start returns after the first try of the lock, so GetLeader answers from
  // the first call on.
  elector.Start();
  ServerTls tls{absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                absl::GetFlag(FLAGS_tls_client_ca)};
  auto server = StartGrpcServer(absl::GetFlag(FLAGS_listen),
                                {&admin_service, &token_service, &leadership_service}, tls);
  if (!server.ok()) {
    elector.Shutdown();
    alarm_sender.Shutdown();
    run_failover.Shutdown();
    monitors.Shutdown();
    engine.Shutdown();
    readiness.Shutdown();
    return Fail(server.status().ToString());
  }
  readiness.Attach((*server)->GetHealthCheckService(),
                   {jobwheel::v1::JobAdminService::service_full_name(),
                    jobwheel::v1::TokenAdminService::service_full_name(),
                    jobwheel::v1::LeadershipService::service_full_name()});
  spdlog::info("scheduler {} serving on {}", replica, absl::GetFlag(FLAGS_listen));

  const int sig = jobwheel::WaitForTerminationSignal();
  readiness.Drain(absl::StrCat("signal ", sig));
  RealClock::Get().SleepFor(readiness_options.drain_delay);

  spdlog::info("scheduler {} shutting down", replica);
  elector.Shutdown();  // Releases the lock so a standby takes over at once.
  alarm_sender.Shutdown();
  run_failover.Shutdown();
  monitors.Shutdown();
  engine.Shutdown();
  (*server)->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  readiness.Shutdown();
  return 0;
}
