// The scheduler: JobAdminService, TokenAdminService and LeadershipService, and — on the replica
// holding the schedule lock — the fire engine and monitors. Flags only; the logic lives in the
// libraries. LeadershipService (read-only, no secrets), health and reflection need no token.
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/auth/pg_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/base/flags.h"
#include "common/base/logging.h"
#include "common/base/mutex_mode.h"
#include "common/base/signals.h"
#include "common/grpc/grpc_server.h"
#include "common/pg/migrations.h"
#include "common/pg/pg_pool.h"
#include "common/server/log_flags.h"
#include "common/server/pg_readiness_check.h"
#include "common/server/readiness.h"
#include "common/server/readiness_flags.h"
#include "common/server/server_main.h"
#include "common/server/shutdown_tail.h"
#include "common/time/clock.h"
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
#include "services/scheduler/replication_watch.h"
#include "services/scheduler/run_failover.h"
#include "services/scheduler/scheduler_server_options.h"
#include "services/scheduler/webhook_alarm.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7100", "gRPC listen address");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9100",
          "Prometheus /metrics address; empty disables");
ABSL_FLAG(std::string, db_dsn, "",
          "PostgreSQL connection string (libpq); for a highly available database name every "
          "member, host=a,b port=5432,5432 target_session_attrs=read-write (docs/database.md). "
          "Not through a transaction-mode pooler: the schedule lock needs its own session");
ABSL_FLAG(int, db_pool_size, 8,
          "PostgreSQL connections for the admin API, tokens and readiness (2..256); the fire "
          "path runs on the schedule lock's own session");
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

namespace jobwheel::scheduler {
namespace {

absl::StatusOr<SchedulerServerOptions> OptionsFromFlags() {
  SchedulerServerOptions c;
  c.listen = absl::GetFlag(FLAGS_listen);
  c.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  c.db_dsn = absl::GetFlag(FLAGS_db_dsn);
  c.db_pool_size = absl::GetFlag(FLAGS_db_pool_size);
  c.dispatcher_target = absl::GetFlag(FLAGS_dispatcher_target);
  c.readiness = ReadinessOptionsFromFlags();
  c.elector.dsn = c.db_dsn;
  c.elector.replica_id = ReplicaIdOr(absl::GetFlag(FLAGS_replica_id));
  c.elector.retry_interval = absl::GetFlag(FLAGS_lock_retry_interval);
  c.elector.takeover_after = absl::GetFlag(FLAGS_leader_silence_takeover);
  c.engine.preread_window = absl::GetFlag(FLAGS_preread_window);
  c.engine.claim_ahead = absl::GetFlag(FLAGS_claim_ahead);
  c.engine.dispatch_threads = absl::GetFlag(FLAGS_dispatch_threads);
  c.engine.dispatch_lead = absl::GetFlag(FLAGS_dispatch_lead);
  c.engine.misfire_threshold = absl::GetFlag(FLAGS_misfire_threshold);
  c.monitors.lost_after = absl::GetFlag(FLAGS_lost_run_after);
  c.monitors.offline_grace = absl::GetFlag(FLAGS_executor_offline_grace);
  c.monitors.restart_grace = absl::GetFlag(FLAGS_restart_grace);
  c.retention_days = absl::GetFlag(FLAGS_retention_days);
  c.audit_retention_days = absl::GetFlag(FLAGS_audit_retention_days);
  c.monitors.retention = absl::Hours(24) * c.retention_days;
  c.monitors.audit_retention = absl::Hours(24) * c.audit_retention_days;
  c.alarm_webhook_url = absl::GetFlag(FLAGS_alarm_webhook_url);
  c.alarm_webhook_ca_file = absl::GetFlag(FLAGS_alarm_webhook_ca_file);
  c.alarm_webhook_allowlist = absl::GetFlag(FLAGS_alarm_webhook_allowlist);
  c.insecure_dev = absl::GetFlag(FLAGS_insecure_dev);
  c.migrate_only = absl::GetFlag(FLAGS_migrate_only);
  c.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  c.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  c.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  c.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  c.tls_client_cert = absl::GetFlag(FLAGS_tls_client_cert);
  c.tls_client_key = absl::GetFlag(FLAGS_tls_client_key);
  if (!c.migrate_only) {
    auto admin = ReadTokenFile(absl::GetFlag(FLAGS_admin_token_file), "--admin_token_file");
    if (!admin.ok()) return admin.status();
    c.admin_token = *admin;
    auto key = ReadKeyFile(absl::GetFlag(FLAGS_signing_key_file), "--signing_key_file");
    if (!key.ok()) return key.status();
    c.signing_key = *key;
  }
  if (absl::Status valid = c.Validate(); !valid.ok()) return valid;
  return c;
}

// The leader's work: the fire engine, the monitors, run failover and the alarm sender, on
// the schedule lock's fenced session; started and stopped together.
struct LeaderWork {
  LeaderWork(const SchedulerServerOptions& c, LeaderElector& elector, DispatchClient& dispatch,
             AlarmPoster& poster, admin::GrpcExecutorClient& executors, Clock& clock,
             SchedulerMetrics& metrics)
      : fire_store(elector),
        engine(c.engine, fire_store, dispatch, clock, metrics),
        monitors(c.monitors, fire_store, clock, metrics),
        alarm_outbox(elector),
        alarm_sender(AlarmSender::Options(), alarm_outbox, poster, clock, metrics),
        run_failover(
            c.db_dsn, monitors,
            [&executors](const std::string& app, const std::string& address,
                         const jobwheel::v1::KillRequest& req) {
              return executors.Kill(app, address, req);
            },
            clock, metrics) {}

  void Start() {
    engine.Start();
    monitors.Start();
    run_failover.Start();
    alarm_sender.Start();
  }
  void Shutdown() {
    alarm_sender.Shutdown();
    run_failover.Shutdown();
    monitors.Shutdown();
    engine.Shutdown();
  }

  PgFireStore fire_store;
  FireEngine engine;
  Monitors monitors;
  PgAlarmOutbox alarm_outbox;
  AlarmSender alarm_sender;
  RunFailover run_failover;
};

int Run(const SchedulerServerOptions& c) {
  if (absl::Status s = ConnectAndMigrate(c.db_dsn); !s.ok()) return Fail(s, 2);
  if (c.migrate_only) {
    spdlog::info("schema at version {}", LatestSchemaVersion());
    return 0;
  }
  Clock& clock = RealClock::Get();
  std::unique_ptr<CallerTokenSigner> signer;
  if (!c.signing_key.empty()) {
    CallerTokenSigner::Options signer_options;
    signer_options.issuer = std::string(kIssuerScheduler);
    auto created = CallerTokenSigner::Create(c.signing_key, signer_options, clock);
    if (!created.ok()) return Fail("--signing_key_file", created.status(), 2);
    signer = std::move(*created);
  }
  if (c.insecure_dev)
    spdlog::warn("INSECURE DEV MODE: the admin API accepts unauthenticated calls");

  auto registry = std::make_shared<prometheus::Registry>();
  auto exposer = StartMetricsExposer(c.metrics_address, registry);
  if (!exposer.ok()) return Fail(exposer.status(), 2);
  SchedulerMetrics metrics(*registry);
  PgPool pool(
      c.db_dsn, c.db_pool_size,
      [&metrics](absl::string_view op, absl::Duration d, bool ok) { metrics.DbQuery(op, d, ok); });
  // Ready while the database answers; a standby is ready too (no leader condition).
  Readiness readiness(clock, registry.get(), "jobwheel_scheduler");
  AddDatabaseCheck(readiness, pool, c.readiness);
  readiness.Start();
  // Says so (metric, log) while a failover of the database could lose commits.
  ReplicationWatch replication(
      {}, [&pool] { return ProbeReplication(pool); }, *registry, clock);
  replication.Start();

  const ClientTls client_tls = ClientTls::WithServerFallback(
      c.tls_ca, c.tls_client_cert, c.tls_client_key, c.tls.cert_file, c.tls.key_file);
  auto dispatcher_channel = MakeChannel(c.dispatcher_target, client_tls);
  if (!dispatcher_channel.ok()) return Fail("--dispatcher_target", dispatcher_channel.status(), 2);
  GrpcDispatchClient dispatch_client(*dispatcher_channel, signer.get(), clock);
  std::unique_ptr<AlarmPoster> alarm_poster = std::make_unique<DropAlarmPoster>();
  if (!c.alarm_webhook_url.empty()) {
    WebhookAlarm::Options webhook_options;
    webhook_options.ca_file = c.alarm_webhook_ca_file;
    auto webhook = WebhookAlarm::Create(c.alarm_webhook_url, webhook_options);
    if (!webhook.ok()) return Fail("--alarm_webhook_url", webhook.status(), 2);
    alarm_poster = std::move(webhook).value();
  }
  admin::GrpcExecutorClient executor_client(client_tls, signer.get(), {}, clock);

  LeaderElector elector(c.elector, {}, clock);
  LeaderWork work(c, elector, dispatch_client, *alarm_poster, executor_client, clock, metrics);

  admin::PgJobStore job_store(pool);
  admin::JobAdmin job_admin(job_store, executor_client, clock);
  PgTokenStore token_store(pool);
  TokenAuthenticator::Options auth_options;
  auth_options.insecure_dev = c.insecure_dev;
  auth_options.admin_token = c.admin_token;
  TokenAuthenticator authenticator(auth_options, &token_store, clock);
  admin::JobAdminService admin_service(job_admin, authenticator);
  admin::TokenAdmin token_admin(token_store, clock);
  admin::TokenAdminService token_service(token_admin, authenticator);
  // Open on purpose: read-only, no secrets, used by probes and operators to find the leader.
  LeadershipService leadership_service(elector);

  work.Start();
  // Before serving: Start returns after the first try of the lock, so GetLeader answers from
  // the first call on.
  elector.Start({[&work](int64_t epoch) { work.engine.OnElected(epoch); },
                 [&work]() { work.engine.OnDeposed(); }});
  auto server =
      StartGrpcServer(c.listen, {&admin_service, &token_service, &leadership_service}, c.tls);
  if (!server.ok()) {
    elector.Shutdown();
    work.Shutdown();
    readiness.Shutdown();
    return Fail(server.status(), 2);
  }
  readiness.Attach((*server)->GetHealthCheckService(),
                   {jobwheel::v1::JobAdminService::service_full_name(),
                    jobwheel::v1::TokenAdminService::service_full_name(),
                    jobwheel::v1::LeadershipService::service_full_name()});
  spdlog::info("scheduler {} serving on {}", c.elector.replica_id, c.listen);

  ShutdownTail tail;
  tail.service = absl::StrCat("scheduler ", c.elector.replica_id);
  tail.drain_delay = c.readiness.drain_delay;
  tail.shutdown = {
      [&] { elector.Shutdown(); },  // Releases the lock so a standby takes over at once.
      [&] { work.Shutdown(); },
      [&] { (*server)->Shutdown(absl::ToChronoTime(clock.Now() + absl::Seconds(5))); },
      [&] { readiness.Shutdown(); },
  };
  AwaitSignalThenShutDown(readiness, clock, tail);
  return 0;
}

}  // namespace
}  // namespace jobwheel::scheduler

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  // Signals go to the shutdown tail, not to whichever thread happens to run.
  jobwheel::BlockTerminationSignals();
  jobwheel::ParseFlagsWithEnv(argc, argv, "jobwheel scheduler");
  jobwheel::InitLoggingFromFlags("scheduler");
  auto options = jobwheel::scheduler::OptionsFromFlags();
  if (!options.ok()) return jobwheel::Fail(options.status(), 2);
  return jobwheel::scheduler::Run(*options);
}
