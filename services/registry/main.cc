// The registry: executor liveness (heartbeat streams, leases in PostgreSQL,
// LISTEN/NOTIFY between replicas, WatchExecutors for dispatchers) and app
// administration.

#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/auth/pg_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/base/flags.h"
#include "common/base/logging.h"
#include "common/base/mutex_mode.h"
#include "common/base/signals.h"
#include "common/base/work_pool.h"
#include "common/grpc/grpc_server.h"
#include "common/pg/pg_pool.h"
#include "common/server/log_flags.h"
#include "common/server/pg_readiness_check.h"
#include "common/server/readiness.h"
#include "common/server/readiness_flags.h"
#include "common/server/server_main.h"
#include "common/server/shutdown_tail.h"
#include "common/time/clock.h"
#include "prometheus/registry.h"
#include "services/registry/address_policy.h"
#include "services/registry/app_admin_service.h"
#include "services/registry/executor_view.h"
#include "services/registry/pg_app_store.h"
#include "services/registry/pg_executor_store.h"
#include "services/registry/registry.h"
#include "services/registry/registry_metrics.h"
#include "services/registry/registry_server_options.h"
#include "services/registry/registry_service.h"
#include "services/registry/view_syncer.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7101", "gRPC listen address");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9101",
          "Prometheus /metrics listen address; empty disables");
ABSL_FLAG(std::string, db_dsn, "",
          "PostgreSQL connection string (libpq); for a highly available database name every "
          "member, host=a,b port=5432,5432 target_session_attrs=read-write (docs/database.md)");
ABSL_FLAG(int, db_pool_size, 8, "PostgreSQL connections (and blocking worker threads)");
ABSL_FLAG(std::string, replica_id, "", "This replica's id; default hostname-pid");
ABSL_FLAG(absl::Duration, beat_interval, absl::Seconds(1), "How often executors beat");
ABSL_FLAG(absl::Duration, beat_deadline, absl::Seconds(3),
          "An executor with no beat for this long is offline");
ABSL_FLAG(absl::Duration, lease, absl::Seconds(10),
          "Lease of a registration in the database; a dead replica's executors "
          "go offline "
          "after it");
ABSL_FLAG(int, max_registrations_per_token, 64,
          "Executor registrations one executor token may hold on this replica at once (0: no cap)");
ABSL_FLAG(int, max_registrations_per_peer, 256,
          "Executor registrations one peer host may hold on this replica at once (0: no cap; "
          "raise it for a gateway that registers many executors)");
ABSL_FLAG(absl::Duration, drain_grace, absl::Seconds(2),
          "On SIGTERM: how long executors get to move to another replica "
          "before the rest are "
          "taken offline");
ABSL_FLAG(std::string, executor_token_file, "",
          "Bootstrap executor token (any app) accepted on Heartbeat; optional: per-app EXECUTOR "
          "tokens from TokenAdminService work without it");
ABSL_FLAG(std::string, dispatcher_public_key_file, "",
          "The dispatchers' Ed25519 public key(s) (PEM; several during a rotation): "
          "WatchExecutors accepts only tokens they verify (required)");
ABSL_FLAG(std::string, admin_token_file, "",
          "Bootstrap admin token for AppAdminService; optional: ADMIN/OPERATOR/VIEWER tokens from "
          "TokenAdminService work without it");
ABSL_FLAG(bool, insecure_dev, false, "Accept unauthenticated calls (development only)");
ABSL_FLAG(std::string, tls_cert, "", "Server certificate (PEM); plaintext when empty");
ABSL_FLAG(std::string, tls_key, "", "Server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "", "When set, clients must present a cert signed by it");
ABSL_FLAG(std::string, allow_loopback_executors, "auto",
          "Executors may register loopback addresses: auto (only when --listen is loopback, i.e. "
          "a local stack), true or false");
ABSL_FLAG(bool, allow_link_local_executors, false,
          "Executors may register link-local addresses (cloud metadata addresses never)");
ABSL_FLAG(std::string, executor_address_allowlist, "",
          "app=cidr|ip|host,... (app * = every app): addresses executors may register besides "
          "their own peer address (NAT, proxies, DNS names without mutual TLS)");
ABSL_FLAG(absl::Duration, register_deadline, absl::Seconds(5),
          "A Heartbeat stream without a valid register after this long is closed");

namespace jobwheel::registry {
namespace {

absl::StatusOr<RegistryServerOptions> OptionsFromFlags() {
  RegistryServerOptions c;
  c.listen = absl::GetFlag(FLAGS_listen);
  c.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  c.db_dsn = absl::GetFlag(FLAGS_db_dsn);
  c.db_pool_size = absl::GetFlag(FLAGS_db_pool_size);
  c.drain_grace = absl::GetFlag(FLAGS_drain_grace);
  c.readiness = ReadinessOptionsFromFlags();
  c.registry.replica_id = ReplicaIdOr(absl::GetFlag(FLAGS_replica_id));
  c.registry.beat_interval = absl::GetFlag(FLAGS_beat_interval);
  c.registry.beat_deadline = absl::GetFlag(FLAGS_beat_deadline);
  c.registry.lease = absl::GetFlag(FLAGS_lease);
  c.registry.register_deadline = absl::GetFlag(FLAGS_register_deadline);
  c.registry.max_registrations_per_token = absl::GetFlag(FLAGS_max_registrations_per_token);
  c.registry.max_registrations_per_peer = absl::GetFlag(FLAGS_max_registrations_per_peer);
  c.insecure_dev = absl::GetFlag(FLAGS_insecure_dev);
  auto executor = ReadTokenFile(absl::GetFlag(FLAGS_executor_token_file), "--executor_token_file");
  if (!executor.ok()) return executor.status();
  c.executor_token = *executor;
  auto dispatcher_keys =
      ReadKeyFile(absl::GetFlag(FLAGS_dispatcher_public_key_file), "--dispatcher_public_key_file");
  if (!dispatcher_keys.ok()) return dispatcher_keys.status();
  c.dispatcher_public_keys = *dispatcher_keys;
  auto admin = ReadTokenFile(absl::GetFlag(FLAGS_admin_token_file), "--admin_token_file");
  if (!admin.ok()) return admin.status();
  c.admin_token = *admin;
  c.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  c.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  c.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  c.allow_loopback_executors = absl::GetFlag(FLAGS_allow_loopback_executors);
  c.allow_link_local_executors = absl::GetFlag(FLAGS_allow_link_local_executors);
  c.executor_address_allowlist = absl::GetFlag(FLAGS_executor_address_allowlist);
  absl::Status valid = c.Validate();
  if (!valid.ok()) return valid;
  return c;
}

int Run(const RegistryServerOptions& config) {
  if (config.insecure_dev) {
    spdlog::warn("--insecure_dev: accepting unauthenticated calls; never use this in production");
  }
  if (absl::Status s = ConnectAndMigrate(config.db_dsn); !s.ok()) return Fail(s);

  auto prom = std::make_shared<prometheus::Registry>();
  RegistryMetrics metrics(*prom);
  auto exposer = StartMetricsExposer(config.metrics_address, prom);
  if (!exposer.ok()) return Fail(exposer.status());

  PgPool pool(config.db_dsn, config.db_pool_size,
              [&metrics](absl::string_view op, absl::Duration d, bool ok) {
                metrics.ObserveDb(op, d, ok);
              });
  PgExecutorStore executor_store(pool);
  PgAppStore app_store(pool);
  Clock& clock = RealClock::Get();
  // Ready while the database answers (the executors' leases and app admin live there).
  Readiness readiness(clock, prom.get(), "jobwheel_registry");
  AddDatabaseCheck(readiness, pool, config.readiness);
  readiness.Start();
  ExecutorView view(metrics, absl::ToUnixMicros(clock.Now()));
  ViewSyncer syncer(executor_store, std::make_unique<PgChangeFeed>(config.db_dsn), view, metrics,
                    clock, ViewSyncer::Options());
  if (absl::Status s = syncer.Start(); !s.ok()) {
    return Fail("loading executors", s);
  }
  // Leave one connection for the lease and deadline thread.
  WorkPool work(config.db_pool_size - 1, 10000);
  Registry registry(config.registry, executor_store, clock, metrics);
  registry.Start();

  PgTokenStore token_store(pool);
  TokenAuthenticator::Options auth_options;
  auth_options.insecure_dev = config.insecure_dev;
  auth_options.admin_token = config.admin_token;
  auth_options.executor_token = config.executor_token;
  TokenAuthenticator authenticator(auth_options, &token_store, clock);
  RegistryService::Options service_options;
  service_options.authenticator = &authenticator;
  service_options.watch_policy.insecure_dev = config.insecure_dev;
  if (!config.dispatcher_public_keys.empty()) {
    // WatchExecutors: only dispatchers, with tokens for audience "registry".
    CallerTokenVerifier::Options verifier_options;
    verifier_options.public_keys_pem[std::string(kIssuerDispatcher)] =
        config.dispatcher_public_keys;
    verifier_options.audience = std::string(kAudienceRegistry);
    auto verifier = CallerTokenVerifier::Create(verifier_options, clock);
    if (!verifier.ok()) {
      return Fail("--dispatcher_public_key_file", verifier.status(), 2);
    }
    service_options.watch_policy.callers = std::move(*verifier);
  }
  // API-token callers (the console) get running/queued/last beat from the table, which beats
  // update; the in-memory view holds them as of registration.
  service_options.load_store = &executor_store;
  auto address_options = config.AddressPolicy();  // Validate() checked it.
  if (!address_options.ok()) return Fail(address_options.status(), 2);
  spdlog::info("{}", DescribeAddressPolicy(*address_options));
  const AddressPolicy address_policy(*std::move(address_options));
  service_options.address_policy = &address_policy;
  RegistryService registry_service(registry, view, work, metrics, service_options);
  AppAdminService app_admin(app_store, view, work, authenticator);
  int port = 0;
  auto server = StartGrpcServer(config.listen, {&registry_service, &app_admin}, config.tls, &port);
  if (!server.ok()) return Fail(server.status());
  readiness.Attach((*server)->GetHealthCheckService(), {v1::RegistryService::service_full_name(),
                                                        v1::AppAdminService::service_full_name()});
  spdlog::info("registry {} serving on {} (port {}), beat {} deadline {} lease {}",
               config.registry.replica_id, config.listen, port,
               absl::FormatDuration(config.registry.beat_interval),
               absl::FormatDuration(config.registry.beat_deadline),
               absl::FormatDuration(config.registry.lease));

  ShutdownTail tail;
  tail.service = "registry";
  // Health checks see NOT_SERVING for at least --drain_delay before the server goes.
  tail.drain_delay = config.readiness.drain_delay;
  tail.drain = [&] {
    spdlog::info("draining {} sessions", registry.open_sessions());
    // Executors move to another replica; what is left after the grace period goes offline.
    registry.Drain(absl::StrCat("registry replica ", config.registry.replica_id, " shutting down"));
    const absl::Time grace_end = clock.Now() + config.drain_grace;
    // Until every executor has left and re-registered elsewhere (or the grace period ends).
    while ((registry.open_sessions() > 0 || registry.drained_still_here() > 0) &&
           clock.Now() < grace_end) {
      clock.SleepFor(absl::Milliseconds(20));
    }
  };
  tail.shutdown = {
      [&] { registry.Shutdown(); },
      [&] { registry.TakeAllOffline(); },
      [&] { registry_service.CloseWatchers(); },
      [&] { (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2)); },
      [&] { syncer.Shutdown(); },
      [&] { work.Shutdown(); },
      [&] { readiness.Shutdown(); },
  };
  AwaitSignalThenShutDown(readiness, clock, tail);
  return 0;
}

}  // namespace
}  // namespace jobwheel::registry

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  // Signals go to the shutdown tail, not to whichever thread happens to run.
  jobwheel::BlockTerminationSignals();
  jobwheel::ParseFlagsWithEnv(argc, argv, "registry: executor liveness and app admin for jobwheel");
  jobwheel::InitLoggingFromFlags("registry");
  auto options = jobwheel::registry::OptionsFromFlags();
  if (!options.ok()) return jobwheel::Fail(options.status(), 2);
  return jobwheel::registry::Run(*options);
}
