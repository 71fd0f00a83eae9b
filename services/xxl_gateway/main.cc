// The XXL-JOB gateway: plays xxl-job-admin's HTTP API towards unchanged XXL-JOB executors and
// makes each of them a jobwheel executor of its app (docs/xxl-job.md).
#include <map>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/auth/caller_token.h"
#include "common/base/flags.h"
#include "common/base/logging.h"
#include "common/base/mutex_mode.h"
#include "common/base/signals.h"
#include "common/grpc/channel.h"
#include "common/grpc/target_list.h"
#include "common/server/log_flags.h"
#include "common/server/readiness.h"
#include "common/server/server_main.h"
#include "common/server/shutdown_tail.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "prometheus/registry.h"
#include "services/xxl_gateway/admin_http_server.h"
#include "services/xxl_gateway/gateway.h"
#include "services/xxl_gateway/gateway_metrics.h"
#include "services/xxl_gateway/gateway_server_options.h"
#include "services/xxl_gateway/result_sink.h"
#include "services/xxl_gateway/state_dir.h"
#include "services/xxl_gateway/xxl_client.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen_http, "127.0.0.1:7190",
          "HTTP address where XXL executors find the admin (xxl.job.admin.addresses)");
ABSL_FLAG(std::string, executor_ports, "",
          "FROM-TO: the gRPC ports standing for the XXL executors, one each (required)");
ABSL_FLAG(std::string, advertise_host, "127.0.0.1",
          "host the registry lists for the executors' ports (this gateway's address)");
ABSL_FLAG(std::string, bind_host, "",
          "where the executors' ports listen; default --advertise_host");
ABSL_FLAG(std::string, registry_target, "127.0.0.1:7101", "registry replicas");
ABSL_FLAG(std::string, dispatcher_target, "127.0.0.1:7102", "dispatcher replicas (ReportResults)");
ABSL_FLAG(std::string, state_dir, "",
          "durable state: ports, identities (with the XXL executors' tokens, mode 0600), runs");
ABSL_FLAG(std::string, script_apps, "",
          "apps whose GLUE_SHELL / GLUE_PYTHON jobs may reach their XXL executors (a,b)");
ABSL_FLAG(std::string, app_handlers, "",
          "handler names to advertise per app (app=h1|h2;app2=h3); \"*\" is always advertised");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9190",
          "Prometheus /metrics listen address; empty disables");
ABSL_FLAG(std::string, dispatcher_public_key_file, "",
          "the dispatchers' Ed25519 public key(s) (PEM): Run, RunBatch, GetRuns, Beat, IdleBeat");
ABSL_FLAG(std::string, scheduler_public_key_file, "",
          "the scheduler's Ed25519 public key(s) (PEM): Kill, Log");
ABSL_FLAG(bool, insecure_dev, false, "accept unauthenticated calls (loopback only, development)");
ABSL_FLAG(std::string, tls_cert, "", "server certificate (PEM) of the executors' ports");
ABSL_FLAG(std::string, tls_key, "", "private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "", "require client certificates signed by this CA");
ABSL_FLAG(std::string, tls_ca, "", "CA to verify the registry and dispatchers; empty = plaintext");
ABSL_FLAG(std::string, tls_client_cert, "", "client certificate (PEM) for mutual TLS");
ABSL_FLAG(std::string, tls_client_key, "", "private key of --tls_client_cert");
ABSL_FLAG(int64_t, max_body_bytes, 1 << 20, "largest admin-side request body (bytes)");
ABSL_FLAG(int, http_threads, 64, "admin-side connections served at once (each on a worker)");
ABSL_FLAG(int, max_connections_per_client, 16,
          "admin-side connections one client IP may hold (XXL executors on one host share it)");
ABSL_FLAG(absl::Duration, probe_interval, absl::Seconds(1), "how often each /beat is probed");
ABSL_FLAG(absl::Duration, offline_after, absl::Seconds(2),
          "an XXL executor not answering /beat this long goes offline");
ABSL_FLAG(absl::Duration, xxl_call_timeout, absl::Seconds(3), "each call to an XXL executor");
ABSL_FLAG(absl::Duration, drain_delay, absl::ZeroDuration(),
          "on SIGTERM: how long /readyz answers 503 before the gateway stops");

namespace jobwheel::xxl {
namespace {

absl::StatusOr<GatewayServerOptions> OptionsFromFlags() {
  GatewayServerOptions c;
  c.listen_http = absl::GetFlag(FLAGS_listen_http);
  c.executor_ports = absl::GetFlag(FLAGS_executor_ports);
  c.advertise_host = absl::GetFlag(FLAGS_advertise_host);
  c.bind_host = absl::GetFlag(FLAGS_bind_host);
  c.registry_target = absl::GetFlag(FLAGS_registry_target);
  c.dispatcher_target = absl::GetFlag(FLAGS_dispatcher_target);
  c.state_dir = absl::GetFlag(FLAGS_state_dir);
  c.script_apps = absl::GetFlag(FLAGS_script_apps);
  c.app_handlers = absl::GetFlag(FLAGS_app_handlers);
  c.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  c.dispatcher_public_key_file = absl::GetFlag(FLAGS_dispatcher_public_key_file);
  c.scheduler_public_key_file = absl::GetFlag(FLAGS_scheduler_public_key_file);
  c.insecure_dev = absl::GetFlag(FLAGS_insecure_dev);
  c.server_tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                  absl::GetFlag(FLAGS_tls_client_ca)};
  c.client_tls = ClientTls::WithServerFallback(
      absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_client_cert),
      absl::GetFlag(FLAGS_tls_client_key), absl::GetFlag(FLAGS_tls_cert),
      absl::GetFlag(FLAGS_tls_key));
  const int64_t body = absl::GetFlag(FLAGS_max_body_bytes);
  c.max_body_bytes = body > 0 ? static_cast<size_t>(body) : 0;
  c.http_threads = absl::GetFlag(FLAGS_http_threads);
  c.max_connections_per_client = absl::GetFlag(FLAGS_max_connections_per_client);
  c.probe_interval = absl::GetFlag(FLAGS_probe_interval);
  c.offline_after = absl::GetFlag(FLAGS_offline_after);
  c.call_timeout = absl::GetFlag(FLAGS_xxl_call_timeout);
  c.drain_delay = absl::GetFlag(FLAGS_drain_delay);
  if (absl::Status s = c.Validate(); !s.ok()) return s;
  return c;
}

int Run(const GatewayServerOptions& c) {
  Clock& clock = RealClock::Get();
  auto prom = std::make_shared<prometheus::Registry>();
  GatewayMetrics metrics(*prom);
  auto exposer = StartMetricsExposer(c.metrics_address, prom);
  if (!exposer.ok()) return Fail(exposer.status());

  GatewayOptions g;
  g.advertise_host = c.advertise_host;
  g.bind_host = c.bind_host;
  g.port_from = c.port_from;
  g.port_to = c.port_to;
  g.registry_targets = SplitTargets(c.registry_target);
  g.script_apps = ParseAppList(c.script_apps);
  g.app_handlers = *ParseAppHandlers(c.app_handlers);
  g.insecure_dev = c.insecure_dev;
  g.server_tls = c.server_tls;
  g.runs.call_timeout = c.call_timeout;
  g.probe_interval = c.probe_interval;
  g.offline_after = c.offline_after;
  if (!c.insecure_dev) {
    auto dispatcher_keys =
        ReadKeyFile(c.dispatcher_public_key_file, "--dispatcher_public_key_file");
    if (!dispatcher_keys.ok()) return Fail(dispatcher_keys.status(), 2);
    auto scheduler_keys = ReadKeyFile(c.scheduler_public_key_file, "--scheduler_public_key_file");
    if (!scheduler_keys.ok()) return Fail(scheduler_keys.status(), 2);
    g.caller_public_keys[std::string(kIssuerDispatcher)] = *dispatcher_keys;
    g.caller_public_keys[std::string(kIssuerScheduler)] = *scheduler_keys;
  } else {
    spdlog::warn("--insecure_dev: the executors' ports accept unauthenticated calls");
  }

  auto dispatcher = MakeChannel(ChannelTarget(c.dispatcher_target), c.client_tls);
  if (!dispatcher.ok()) return Fail("--dispatcher_target", dispatcher.status());
  GrpcResultSink results(jobwheel::v1::DispatcherService::NewStub(*dispatcher), absl::Seconds(5));
  const ClientTls client_tls = c.client_tls;
  RegistryStubFactory registry_stubs = [client_tls](const std::string& target)
      -> std::unique_ptr<jobwheel::v1::RegistryService::StubInterface> {
    auto channel = MakeChannel(target, client_tls);
    if (!channel.ok()) return nullptr;
    return jobwheel::v1::RegistryService::NewStub(*channel);
  };
  StateDir state(c.state_dir);
  if (absl::Status s = state.Open(); !s.ok()) return Fail(s, 2);
  HttplibXxlClient xxl(HttplibXxlClient::Options{}, clock);
  Gateway gateway(g, state, xxl, results, registry_stubs, metrics, clock);
  if (absl::Status s = gateway.Start(); !s.ok()) return Fail(s);

  // The gateway's own conditions: none but draining (/readyz answers 503 once it drains).
  Readiness readiness(clock);
  AdminHttpServer::Options ho;
  ho.listen = c.listen_http;
  ho.max_body_bytes = c.max_body_bytes;
  ho.threads = c.http_threads;
  ho.max_connections_per_client = c.max_connections_per_client;
  AdminHttpServer http(ho, gateway, metrics, [&readiness] { return readiness.ReadyStatus(); });
  if (absl::Status s = http.Start(); !s.ok()) return Fail(s);
  spdlog::info("xxl gateway: admin side on {} (port {}), executor ports {}-{} as {}", c.listen_http,
               http.port(), c.port_from, c.port_to, c.advertise_host);

  ShutdownTail tail;
  tail.service = "xxl gateway";
  tail.drain_delay = c.drain_delay;
  tail.shutdown = {[&http] { http.Shutdown(); }, [&gateway] { gateway.Shutdown(); }};
  AwaitSignalThenShutDown(readiness, clock, tail);
  return 0;
}

}  // namespace
}  // namespace jobwheel::xxl

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  // Signals go to the shutdown tail, not to whichever thread happens to run.
  jobwheel::BlockTerminationSignals();
  jobwheel::ParseFlagsWithEnv(argc, argv,
                              "jobwheel xxl_gateway: XXL-JOB executors as jobwheel executors");
  jobwheel::InitLoggingFromFlags("xxl_gateway");
  auto options = jobwheel::xxl::OptionsFromFlags();
  if (!options.ok()) return jobwheel::Fail(options.status(), 2);
  return jobwheel::xxl::Run(*options);
}
