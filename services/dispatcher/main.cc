// The dispatcher: turns fires into runs on executors and ingests their results.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
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
#include "common/base/signals.h"
#include "common/base/work_pool.h"
#include "common/grpc/grpc_keep_warm.h"
#include "common/grpc/grpc_server.h"
#include "common/grpc/target_list.h"
#include "common/pg/pg_pool.h"
#include "common/server/log_flags.h"
#include "common/server/pg_readiness_check.h"
#include "common/server/readiness.h"
#include "common/server/readiness_flags.h"
#include "common/server/server_main.h"
#include "common/server/shutdown_tail.h"
#include "common/time/clock.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "services/dispatcher/dispatcher.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/dispatcher_options.h"
#include "services/dispatcher/dispatcher_service.h"
#include "services/dispatcher/executor_directory.h"
#include "services/dispatcher/grpc_executor_clients.h"
#include "services/dispatcher/pg_dispatch_store.h"
#include "services/dispatcher/registry_watcher.h"
#include "services/dispatcher/router.h"
#include "services/dispatcher/trigger_pools.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7102", "gRPC listen address");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9102",
          "Prometheus /metrics address; empty disables");
ABSL_FLAG(std::string, db_dsn, "",
          "PostgreSQL connection string (libpq); for a highly available database name every "
          "member, host=a,b port=5432,5432 target_session_attrs=read-write (docs/database.md)");
ABSL_FLAG(std::string, registry_target, "127.0.0.1:7101",
          "registry replicas: host:port, a comma-separated list, or a gRPC target (dns:///...)");
ABSL_FLAG(std::string, replica_id, "", "this replica's id; default hostname-pid");
ABSL_FLAG(std::string, executor_token_file, "",
          "bootstrap executor token accepted on ReportResults; optional: per-app EXECUTOR API "
          "tokens work without it");
ABSL_FLAG(std::string, signing_key_file, "",
          "this dispatcher's Ed25519 private key (PEM): signs its short-lived tokens to executors "
          "(audience: the executor's address) and the registry (WatchExecutors)");
ABSL_FLAG(std::string, scheduler_public_key_file, "",
          "the scheduler's Ed25519 public key(s) (PEM; several during a rotation): Dispatch "
          "accepts only tokens they verify");
ABSL_FLAG(bool, insecure_dev, false, "accept unauthenticated calls (development only)");
ABSL_FLAG(int, db_pool_size, 8, "PostgreSQL connections (and database worker threads)");
ABSL_FLAG(int, max_runs_per_batch, 256,
          "runs per ExecutorService.RunBatch call (one call per executor and trigger pool per "
          "Dispatch, split above this); 1..1000");
ABSL_FLAG(int, trigger_fast_max_in_flight, 512,
          "trigger calls in flight at once in the fast pool (one app at most half of them)");
ABSL_FLAG(int, trigger_slow_max_in_flight, 64,
          "trigger calls in flight at once in the slow pool (one app at most half of them)");
ABSL_FLAG(int64_t, trigger_max_waiting_runs, 30000,
          "runs of the calls waiting for room, per trigger pool; past that a call's runs fail "
          "at once as 'dispatcher overloaded'");
ABSL_FLAG(absl::Duration, run_deadline, absl::Seconds(3),
          "deadline of ExecutorService.RunBatch calls");
ABSL_FLAG(int, get_runs_attempts, 4,
          "GetRuns attempts to settle a RunBatch whose answer was lost (deadline, cut "
          "connection); the runs stay RUNNING when none gets through");
ABSL_FLAG(absl::Duration, get_runs_deadline, absl::ZeroDuration(),
          "Deadline of each such GetRuns call (0: --run_deadline)");
ABSL_FLAG(absl::Duration, max_trigger_hold, absl::Seconds(2),
          "Runs of a fire handed over ahead of its scheduled time (schedulers' --dispatch_lead) "
          "are held and triggered at that time, never earlier; a fire further ahead than this "
          "is refused (FAILED_PRECONDITION) and the scheduler retries it");
ABSL_FLAG(absl::Duration, trigger_tick, absl::Milliseconds(5),
          "Held runs are triggered on multiples of this (scheduled time rounded up), so runs "
          "due within one tick share a RunBatch call; 0: each at its exact time. Must divide 1s, "
          "so times on whole seconds stay exact");
ABSL_FLAG(absl::Duration, trigger_write_delay, absl::Milliseconds(250),
          "how long an executor's STARTED/QUEUED answer waits to be written together with the "
          "run's result (one write instead of two); the run shows PENDING meanwhile; 0 writes "
          "answers at once");
ABSL_FLAG(absl::Duration, probe_deadline, absl::Milliseconds(500),
          "deadline of Beat/IdleBeat calls of FAILOVER/BUSYOVER routing");
ABSL_FLAG(std::string, tls_cert, "",
          "server certificate (PEM); also the client certificate unless --tls_client_cert");
ABSL_FLAG(std::string, tls_key, "", "private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_cert, "",
          "client certificate (PEM) for mutual TLS to the registry and executors");
ABSL_FLAG(std::string, tls_client_key, "", "private key of --tls_client_cert");
ABSL_FLAG(std::string, tls_client_ca, "", "require client certificates signed by this CA");
ABSL_FLAG(std::string, tls_ca, "", "CA to verify registry and executors; empty = plaintext");

namespace jobwheel::dispatcher {
namespace {

absl::StatusOr<DispatcherServerOptions> OptionsFromFlags() {
  DispatcherServerOptions c;
  c.listen = absl::GetFlag(FLAGS_listen);
  c.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  c.db_dsn = absl::GetFlag(FLAGS_db_dsn);
  // "a:1,b:2" is a static list of replicas for gRPC's ipv4 resolver (round_robin over them).
  c.registry_target = ChannelTarget(absl::GetFlag(FLAGS_registry_target));
  c.replica_id = ReplicaIdOr(absl::GetFlag(FLAGS_replica_id));
  auto executor_token =
      ReadTokenFile(absl::GetFlag(FLAGS_executor_token_file), "--executor_token_file");
  if (!executor_token.ok()) return executor_token.status();
  c.executor_token = *executor_token;
  auto signing_key = ReadKeyFile(absl::GetFlag(FLAGS_signing_key_file), "--signing_key_file");
  if (!signing_key.ok()) return signing_key.status();
  c.signing_key = *signing_key;
  auto scheduler_keys =
      ReadKeyFile(absl::GetFlag(FLAGS_scheduler_public_key_file), "--scheduler_public_key_file");
  if (!scheduler_keys.ok()) return scheduler_keys.status();
  c.scheduler_public_keys = *scheduler_keys;
  c.insecure_dev = absl::GetFlag(FLAGS_insecure_dev);
  c.db_pool_size = absl::GetFlag(FLAGS_db_pool_size);
  c.probe_deadline = absl::GetFlag(FLAGS_probe_deadline);
  const int max_runs_per_batch = absl::GetFlag(FLAGS_max_runs_per_batch);
  c.dispatcher.max_runs_per_batch = static_cast<size_t>(std::max(0, max_runs_per_batch));
  c.pools.fast_max_in_flight = absl::GetFlag(FLAGS_trigger_fast_max_in_flight);
  c.pools.slow_max_in_flight = absl::GetFlag(FLAGS_trigger_slow_max_in_flight);
  c.pools.max_waiting_runs =
      static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_trigger_max_waiting_runs)));
  c.dispatcher.run_deadline = absl::GetFlag(FLAGS_run_deadline);
  c.dispatcher.get_runs_attempts = absl::GetFlag(FLAGS_get_runs_attempts);
  c.dispatcher.get_runs_deadline = absl::GetFlag(FLAGS_get_runs_deadline);
  c.dispatcher.trigger_write_delay = absl::GetFlag(FLAGS_trigger_write_delay);
  c.dispatcher.max_trigger_hold = absl::GetFlag(FLAGS_max_trigger_hold);
  c.dispatcher.trigger_tick = absl::GetFlag(FLAGS_trigger_tick);
  c.server_tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                  absl::GetFlag(FLAGS_tls_client_ca)};
  c.client_tls = ClientTls::WithServerFallback(
      absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_client_cert),
      absl::GetFlag(FLAGS_tls_client_key), c.server_tls.cert_file, c.server_tls.key_file);
  absl::Status valid = c.Validate();
  if (!valid.ok()) return valid;
  return c;
}

int Run(const DispatcherServerOptions& c, const ReadinessOptions& readiness_options) {
  if (c.insecure_dev) {
    spdlog::warn("--insecure_dev: accepting unauthenticated Dispatch and ReportResults calls");
  }
  if (absl::Status s = ConnectAndMigrate(c.db_dsn); !s.ok()) {
    return Fail("database", s);
  }

  auto registry = std::make_shared<prometheus::Registry>();
  DispatcherMetrics metrics(*registry);
  auto exposer = StartMetricsExposer(c.metrics_address, registry);
  if (!exposer.ok()) return Fail(exposer.status());

  // Every statement of the store selects rows by key: plans made once, through indexes.
  PgPool pg(
      c.db_dsn, c.db_pool_size,
      [&metrics](absl::string_view what, absl::Duration d, bool ok) {
        metrics.DbQuery(what, d, ok);
      },
      PgPool::PlanMode::kIndexLookups);
  PgDispatchStore store(pg);
  // Ready: the database answers and the first registry snapshot arrived (before it the
  // dispatcher knows no executor and would fail every fire).
  Readiness readiness(RealClock::Get(), registry.get(), "jobwheel_dispatcher");
  AddDatabaseCheck(readiness, pg, readiness_options);
  readiness.AddCondition(kRegistrySnapshotCondition);
  // Every applied event comes after a snapshot; ready stays once a snapshot arrived (the
  // cache keeps its last state while the watch reconnects).
  ExecutorDirectory directory([&metrics, &readiness](size_t n) {
    metrics.ExecutorsKnown(n);
    readiness.Set(kRegistrySnapshotCondition, true);
  });

  auto registry_channel = MakeChannel(c.registry_target, c.client_tls);
  if (!registry_channel.ok()) {
    return Fail("--registry_target", registry_channel.status());
  }
  std::unique_ptr<CallerTokenSigner> signer;
  if (!c.signing_key.empty()) {
    CallerTokenSigner::Options signer_options;
    signer_options.issuer = std::string(kIssuerDispatcher);
    auto created = CallerTokenSigner::Create(c.signing_key, signer_options, RealClock::Get());
    if (!created.ok()) {
      return Fail("--signing_key_file", created.status(), 2);
    }
    signer = std::move(*created);
  }
  // Dispatch: only the scheduler, with tokens for audience "dispatcher".
  std::shared_ptr<CallerTokenVerifier> scheduler_verifier;
  if (!c.scheduler_public_keys.empty()) {
    CallerTokenVerifier::Options verifier_options;
    verifier_options.public_keys_pem[std::string(kIssuerScheduler)] = c.scheduler_public_keys;
    verifier_options.audience = std::string(kAudienceDispatcher);
    auto created = CallerTokenVerifier::Create(verifier_options, RealClock::Get());
    if (!created.ok()) {
      return Fail("--scheduler_public_key_file", created.status(), 2);
    }
    scheduler_verifier = std::move(*created);
  }
  RegistryWatcher::Options watcher_options;
  watcher_options.signer = signer.get();
  RegistryWatcher watcher(v1::RegistryService::NewStub(*registry_channel), directory,
                          RealClock::Get(), watcher_options);
  GrpcExecutorClients executors(signer.get(), c.client_tls);
  absl::BitGen gen;
  Router::Options router_options;
  router_options.probe_deadline = c.probe_deadline;
  Router router(RealClock::Get(), gen, executors, router_options);
  TriggerPools pools(
      RealClock::Get(), c.pools,
      [&metrics](TriggerPool p, absl::Duration d) {
        metrics.TriggerLatency(TriggerPoolName(p), d);
      },
      [&metrics](TriggerPool p, size_t calls, size_t runs) {
        metrics.PoolDepth(TriggerPoolName(p), calls, runs);
      });
  Dispatcher dispatcher(store, directory, router, executors, pools, metrics, RealClock::Get(),
                        c.dispatcher);
  WorkPool db_work(c.db_pool_size, /*max_queue=*/1000);
  PgTokenStore token_store(pg);
  TokenAuthenticator::Options auth_options;
  auth_options.insecure_dev = c.insecure_dev;
  auth_options.executor_token = c.executor_token;
  TokenAuthenticator executor_auth(auth_options, &token_store, RealClock::Get());
  DispatcherServiceImpl service(dispatcher, db_work,
                                TokenPolicy{c.insecure_dev, {}, scheduler_verifier}, executor_auth,
                                c.limits);

  dispatcher.Start();
  watcher.Start();
  readiness.Start();
  int port = 0;
  auto server = StartGrpcServer(c.listen, {&service}, c.server_tls, &port);
  if (!server.ok()) {
    readiness.Shutdown();
    watcher.Shutdown();
    dispatcher.Shutdown();
    return Fail("--listen", server.status());
  }
  readiness.Attach((*server)->GetHealthCheckService(),
                   {v1::DispatcherService::service_full_name()});
  spdlog::info("dispatcher {} listening on {} (port {}), registry {}", c.replica_id, c.listen, port,
               c.registry_target);
  // Dispatch calls a second apart would often wait ~100 ms for gRPC's callback threads.
  GrpcKeepWarm keep_warm((*server)->InProcessChannel(grpc::ChannelArguments()));
  keep_warm.Start();

  ShutdownTail tail;
  tail.service = "dispatcher";
  tail.drain_delay = readiness_options.drain_delay;
  tail.shutdown = {
      [&] { keep_warm.Shutdown(); },
      [&] { (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5)); },
      [&] { db_work.Shutdown(); },
      [&] { dispatcher.Shutdown(); },  // Runs queued triggers and writes their answers.
      [&] { watcher.Shutdown(); },
      [&] { readiness.Shutdown(); },
  };
  AwaitSignalThenShutDown(readiness, RealClock::Get(), tail);
  return 0;
}

}  // namespace
}  // namespace jobwheel::dispatcher

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  // Signals go to the shutdown tail, not to whichever thread happens to run.
  jobwheel::BlockTerminationSignals();
  jobwheel::ParseFlagsWithEnv(argc, argv, "jobwheel dispatcher: routes fires to executors");
  jobwheel::InitLoggingFromFlags("dispatcher");
  auto config = jobwheel::dispatcher::OptionsFromFlags();
  if (!config.ok()) return jobwheel::Fail(config.status(), 2);
  const jobwheel::ReadinessOptions readiness = jobwheel::ReadinessOptionsFromFlags();
  if (absl::Status s = readiness.Validate(); !s.ok()) return jobwheel::Fail(s, 2);
  return jobwheel::dispatcher::Run(*config, readiness);
}
