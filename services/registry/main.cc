// The registry: executor liveness (heartbeat streams, leases in PostgreSQL,
// LISTEN/NOTIFY between replicas, WatchExecutors for dispatchers) and app
// administration.

#include <signal.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/auth/insecure_dev.h"
#include "common/auth/pg_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/base/flags.h"
#include "common/base/logging.h"
#include "common/base/mutex_mode.h"
#include "common/base/work_pool.h"
#include "common/grpc/grpc_server.h"
#include "common/pg/migrations.h"
#include "common/pg/pg_pool.h"
#include "common/time/clock.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "services/registry/address_policy.h"
#include "services/registry/app_admin_service.h"
#include "services/registry/executor_view.h"
#include "services/registry/pg_app_store.h"
#include "services/registry/pg_executor_store.h"
#include "services/registry/registry.h"
#include "services/registry/registry_metrics.h"
#include "services/registry/registry_service.h"
#include "services/registry/view_syncer.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7101", "gRPC listen address");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9101",
          "Prometheus /metrics listen address; empty disables");
ABSL_FLAG(std::string, db_dsn, "", "PostgreSQL connection string (libpq)");
ABSL_FLAG(int, db_pool_size, 8, "PostgreSQL connections (and blocking worker threads)");
ABSL_FLAG(std::string, replica_id, "", "This replica's id; default hostname-pid");
ABSL_FLAG(absl::Duration, beat_interval, absl::Seconds(1), "How often executors beat");
ABSL_FLAG(absl::Duration, beat_deadline, absl::Seconds(3),
          "An executor with no beat for this long is offline");
ABSL_FLAG(absl::Duration, lease, absl::Seconds(10),
          "Lease of a registration in the database; a dead replica's executors "
          "go offline "
          "after it");
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
ABSL_FLAG(bool, log_json, false, "Log one JSON object per line");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn or error");
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

// Everything the flags say, checked before anything starts.
struct ServerConfig {
  std::string listen;
  std::string metrics_address;
  std::string db_dsn;
  int db_pool_size = 8;
  absl::Duration drain_grace;
  RegistryOptions registry;
  bool insecure_dev = false;
  std::string executor_token;
  std::string dispatcher_public_keys;  // PEM.
  std::string admin_token;
  ServerTls tls;

  absl::Status Validate() const {
    if (listen.empty()) return absl::InvalidArgumentError("--listen: must not be empty");
    if (db_dsn.empty()) return absl::InvalidArgumentError("--db_dsn: must not be empty");
    if (db_pool_size < 2) return absl::InvalidArgumentError("--db_pool_size: must be at least 2");
    if (drain_grace < absl::ZeroDuration()) {
      return absl::InvalidArgumentError("--drain_grace: must not be negative");
    }
    if (!insecure_dev && dispatcher_public_keys.empty()) {
      return absl::InvalidArgumentError(
          "no credentials: --dispatcher_public_key_file is required (with "
          "--executor_token_file and --admin_token_file, or API tokens from TokenAdminService), "
          "or --insecure_dev for development");
    }
    if (absl::Status s = CheckInsecureDevListen(insecure_dev, listen); !s.ok()) return s;
    if (tls.cert_file.empty() != tls.key_file.empty()) {
      return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
    }
    return registry.Validate();
  }
};

absl::StatusOr<ServerConfig> ConfigFromFlags() {
  ServerConfig c;
  c.listen = absl::GetFlag(FLAGS_listen);
  c.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  c.db_dsn = absl::GetFlag(FLAGS_db_dsn);
  c.db_pool_size = absl::GetFlag(FLAGS_db_pool_size);
  c.drain_grace = absl::GetFlag(FLAGS_drain_grace);
  c.registry.replica_id = absl::GetFlag(FLAGS_replica_id);
  if (c.registry.replica_id.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    c.registry.replica_id = absl::StrCat(host, "-", getpid());
  }
  c.registry.beat_interval = absl::GetFlag(FLAGS_beat_interval);
  c.registry.beat_deadline = absl::GetFlag(FLAGS_beat_deadline);
  c.registry.lease = absl::GetFlag(FLAGS_lease);
  c.registry.register_deadline = absl::GetFlag(FLAGS_register_deadline);
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
  absl::Status s = c.Validate();
  if (!s.ok()) return s;
  return c;
}

int Run() {
  auto config_or = ConfigFromFlags();
  if (!config_or.ok()) {
    spdlog::critical("{}", std::string(config_or.status().message()));
    return 2;
  }
  const ServerConfig config = *std::move(config_or);
  if (config.insecure_dev) {
    spdlog::warn(
        "--insecure_dev: accepting unauthenticated calls; never use "
        "this in production");
  }

  // Signals go to the sigwait below, not to whichever thread happens to run.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  {
    auto conn = PgPool::Connect(config.db_dsn);
    if (!conn.ok()) {
      spdlog::critical("{}", conn.status().ToString());
      return 1;
    }
    absl::Status s = ApplyMigrations(**conn);
    if (!s.ok()) {
      spdlog::critical("{}", s.ToString());
      return 1;
    }
  }

  auto prom = std::make_shared<prometheus::Registry>();
  RegistryMetrics metrics(*prom);
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!config.metrics_address.empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(config.metrics_address);
      exposer->RegisterCollectable(prom);
    } catch (const std::exception& e) {
      spdlog::critical("--metrics_address {}: {}", config.metrics_address, e.what());
      return 1;
    }
  }

  PgPool pool(config.db_dsn, config.db_pool_size,
              [&metrics](absl::string_view op, absl::Duration d, bool ok) {
                metrics.ObserveDb(op, d, ok);
              });
  PgExecutorStore executor_store(pool);
  PgAppStore app_store(pool);
  Clock& clock = RealClock::Get();
  ExecutorView view(&metrics, absl::ToUnixMicros(clock.Now()));
  ViewSyncer syncer(executor_store, std::make_unique<PgChangeFeed>(config.db_dsn), view, &metrics,
                    clock, ViewSyncer::Options());
  absl::Status s = syncer.Start();
  if (!s.ok()) {
    spdlog::critical("loading executors: {}", s.ToString());
    return 1;
  }
  // Leave one connection for the lease and deadline thread.
  WorkPool work(config.db_pool_size - 1, 10000);
  Registry registry(config.registry, executor_store, clock, &metrics);
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
      spdlog::critical("--dispatcher_public_key_file: {}", verifier.status().ToString());
      return 2;
    }
    service_options.watch_policy.callers = std::move(*verifier);
  }
  // API-token callers (the console) get running/queued/last beat from the table, which beats
  // update; the in-memory view holds them as of registration.
  service_options.load_store = &executor_store;
  auto address_options =
      AddressPolicyOptionsFromFlags(absl::GetFlag(FLAGS_allow_loopback_executors),
                                    absl::GetFlag(FLAGS_allow_link_local_executors),
                                    absl::GetFlag(FLAGS_executor_address_allowlist), config.listen);
  if (!address_options.ok()) {
    spdlog::critical("{}", std::string(address_options.status().message()));
    return 2;
  }
  spdlog::info("{}", DescribeAddressPolicy(*address_options));
  const AddressPolicy address_policy(*std::move(address_options));
  service_options.address_policy = &address_policy;
  RegistryService registry_service(registry, view, work, &metrics, service_options);
  AppAdminService app_admin(app_store, view, work, authenticator);
  int port = 0;
  auto server = StartGrpcServer(config.listen, {&registry_service, &app_admin}, config.tls, &port);
  if (!server.ok()) {
    spdlog::critical("{}", server.status().ToString());
    return 1;
  }
  spdlog::info("registry {} serving on {} (port {}), beat {} deadline {} lease {}",
               config.registry.replica_id, config.listen, port,
               absl::FormatDuration(config.registry.beat_interval),
               absl::FormatDuration(config.registry.beat_deadline),
               absl::FormatDuration(config.registry.lease));

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {}, draining {} sessions", sig, registry.open_sessions());

  // Executors move to another replica; what is left after the grace period goes
  // offline.
  registry.Drain(absl::StrCat("registry replica ", config.registry.replica_id, " shutting down"));
  const absl::Time grace_end = clock.Now() + config.drain_grace;
  while (registry.open_sessions() > 0 && clock.Now() < grace_end) {
    clock.SleepFor(absl::Milliseconds(20));
  }
  registry.Shutdown();
  registry.TakeAllOffline();
  registry_service.CloseWatchers();
  (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  syncer.Shutdown();
  work.Shutdown();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace jobwheel::registry

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  jobwheel::ParseFlagsWithEnv(argc, argv, "registry: executor liveness and app admin for jobwheel");
  jobwheel::InitLogging("registry", absl::GetFlag(FLAGS_log_json), absl::GetFlag(FLAGS_log_level));
  return jobwheel::registry::Run();
}
