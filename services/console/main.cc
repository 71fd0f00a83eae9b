// The console: the web pages and a Connect protocol (JSON) gateway in front of the admin gRPC
// services of the scheduler and registry. It forwards each caller's own bearer token and holds
// no credential that acts for a user, nor any database connection.
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
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
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "services/console/backend_health.h"
#include "services/console/connect_gateway.h"
#include "services/console/console_metrics.h"
#include "services/console/console_options.h"
#include "services/console/console_server.h"
#include "services/console/grpc_backend_caller.h"
#include "services/console/route_table.h"
#include "services/console/static_files.h"
#include "services/console/web_root.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7180", "HTTP listen address (host:port)");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9180",
          "Prometheus /metrics listen address; empty disables");
ABSL_FLAG(std::string, scheduler_target, "127.0.0.1:7100",
          "scheduler replicas (JobAdminService, TokenAdminService, LeadershipService): host:port, "
          "a comma-separated list, or a gRPC target (dns:///...)");
ABSL_FLAG(std::string, registry_target, "127.0.0.1:7101",
          "registry replicas (AppAdminService, RegistryService/ListExecutors): host:port, a "
          "comma-separated list, or a gRPC target");
ABSL_FLAG(std::string, web_root, "",
          "directory of the pages; default: services/console/web in the binary's runfiles");
ABSL_FLAG(int64_t, max_body_bytes, 1 << 20, "largest request body accepted (bytes)");
ABSL_FLAG(int, max_concurrent_requests, 32,
          "Connect requests served at once; more are refused as unavailable (HTTP 503)");
ABSL_FLAG(absl::Duration, request_timeout, absl::Seconds(10),
          "deadline of each backend call (a shorter connect-timeout-ms from the client wins)");
ABSL_FLAG(absl::Duration, read_timeout, absl::Seconds(5),
          "deadline of a whole HTTP request, headers and body, from its first byte (a client "
          "that sends slower is answered 408 and disconnected)");
ABSL_FLAG(absl::Duration, write_timeout, absl::Seconds(10),
          "deadline of writing a whole HTTP response");
ABSL_FLAG(absl::Duration, keep_alive_timeout, absl::Seconds(2),
          "how long an idle keep-alive connection is kept open");
ABSL_FLAG(int, max_connections, 128,
          "HTTP connections open at once (one thread each); more are answered 503 and closed");
ABSL_FLAG(int, max_connections_per_client, 16,
          "HTTP connections open at once from one client IP; more are answered 503 and closed "
          "(behind a proxy every client has the proxy's IP: raise it there)");
ABSL_FLAG(double, failed_auth_burst, 20,
          "failed authentications a client IP may have at once before the console stops "
          "forwarding its unknown tokens (RESOURCE_EXHAUSTED)");
ABSL_FLAG(double, failed_auth_per_second, 5,
          "failed authentications a client IP may have per second after the burst");
ABSL_FLAG(std::string, proxy_token_file, "",
          "the console's own API token (a VIEWER token for no app is enough): sent with each "
          "call with the caller's IP, so the scheduler and registry limit failed "
          "authentications per console client instead of for the whole console; empty: "
          "neither is sent");
ABSL_FLAG(absl::Duration, ready_timeout, absl::Seconds(1),
          "deadline of the backends' health checks behind GET /readyz");
ABSL_FLAG(absl::Duration, drain_delay, absl::ZeroDuration(),
          "on SIGTERM: how long GET /readyz answers 503 (draining) while requests are still "
          "served, before the server shuts down");
ABSL_FLAG(std::string, tls_ca, "", "CA to verify the scheduler and registry; empty = plaintext");
ABSL_FLAG(std::string, tls_client_cert, "",
          "client certificate (PEM) for mutual TLS to the scheduler and registry");
ABSL_FLAG(std::string, tls_client_key, "", "private key of --tls_client_cert");

namespace jobwheel::console {
namespace {

std::string ExePath() {
  char buf[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

absl::StatusOr<ConsoleOptions> OptionsFromFlags() {
  ConsoleOptions c;
  c.server.listen = absl::GetFlag(FLAGS_listen);
  c.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  c.scheduler_target = ChannelTarget(absl::GetFlag(FLAGS_scheduler_target));
  c.registry_target = ChannelTarget(absl::GetFlag(FLAGS_registry_target));
  c.web_root = absl::GetFlag(FLAGS_web_root);
  if (c.web_root.empty()) {
    const char* runfiles = std::getenv("RUNFILES_DIR");
    c.web_root = DefaultWebRoot(ExePath(), runfiles != nullptr ? runfiles : "");
  }
  // A negative value wraps to more than the limit, which Validate refuses naming the flag.
  c.server.max_body_bytes = c.gateway.max_body_bytes =
      static_cast<size_t>(absl::GetFlag(FLAGS_max_body_bytes));
  c.server.max_concurrent_requests = absl::GetFlag(FLAGS_max_concurrent_requests);
  c.gateway.request_timeout = absl::GetFlag(FLAGS_request_timeout);
  c.server.read_timeout = absl::GetFlag(FLAGS_read_timeout);
  c.server.write_timeout = absl::GetFlag(FLAGS_write_timeout);
  c.server.keep_alive_timeout = absl::GetFlag(FLAGS_keep_alive_timeout);
  c.server.max_connections = absl::GetFlag(FLAGS_max_connections);
  c.server.max_connections_per_client = absl::GetFlag(FLAGS_max_connections_per_client);
  c.gateway.failed_auth.burst = absl::GetFlag(FLAGS_failed_auth_burst);
  c.gateway.failed_auth.per_second = absl::GetFlag(FLAGS_failed_auth_per_second);
  c.proxy_token_file = absl::GetFlag(FLAGS_proxy_token_file);
  c.ready_timeout = absl::GetFlag(FLAGS_ready_timeout);
  c.drain_delay = absl::GetFlag(FLAGS_drain_delay);
  c.client_tls = ClientTls{absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_client_cert),
                           absl::GetFlag(FLAGS_tls_client_key)};
  absl::Status valid = c.Validate();
  if (!valid.ok()) return valid;
  return c;
}

int Run(const ConsoleOptions& c) {
  auto prom = std::make_shared<prometheus::Registry>();
  const RouteTable& routes = RouteTable::Console();
  ConsoleMetrics metrics(*prom, routes.Procedures());
  auto exposer = StartMetricsExposer(c.metrics_address, prom);
  if (!exposer.ok()) return Fail(exposer.status());

  auto scheduler = MakeChannel(c.scheduler_target, c.client_tls);
  if (!scheduler.ok()) {
    spdlog::error("--scheduler_target: {}", scheduler.status().ToString());
    return 1;
  }
  auto registry = MakeChannel(c.registry_target, c.client_tls);
  if (!registry.ok()) {
    spdlog::error("--registry_target: {}", registry.status().ToString());
    return 1;
  }
  absl::StatusOr<std::string> proxy_token = ReadTokenFile(c.proxy_token_file, "--proxy_token_file");
  if (!proxy_token.ok()) return Fail(proxy_token.status(), 2);
  GrpcBackendCaller backends(*scheduler, *registry, *proxy_token);
  BackendHealth health({{"scheduler", *scheduler}, {"registry", *registry}});
  Clock& clock = RealClock::Get();
  // The console's own conditions: none but draining; its backends are asked on each /readyz.
  Readiness readiness(clock);
  ConnectGateway gateway(routes, backends, clock, c.gateway);
  StaticFiles pages(c.web_root);

  const absl::Duration ready_timeout = c.ready_timeout;
  ConsoleServer server(
      c.server, gateway, pages,
      [&readiness, &health, &clock, ready_timeout] {
        if (absl::Status own = readiness.ReadyStatus(); !own.ok()) return own;
        return health.Check(clock.Now() + ready_timeout);
      },
      metrics, clock);
  absl::Status started = server.Start();
  if (!started.ok()) {
    spdlog::error("{}", started.ToString());
    return 1;
  }
  spdlog::info("console listening on {} (port {}), scheduler {}, registry {}, pages from {}",
               c.server.listen, server.port(), c.scheduler_target, c.registry_target, c.web_root);

  ShutdownTail tail;
  tail.service = "console";
  tail.drain_delay = c.drain_delay;
  tail.shutdown = {[&server] { server.Shutdown(); }};  // Requests in progress finish first.
  AwaitSignalThenShutDown(readiness, clock, tail);
  return 0;
}

}  // namespace
}  // namespace jobwheel::console

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  // Signals go to the shutdown tail, not to whichever thread happens to run.
  jobwheel::BlockTerminationSignals();
  jobwheel::ParseFlagsWithEnv(argc, argv,
                              "jobwheel console: web pages and a Connect gateway to the admin API");
  jobwheel::InitLoggingFromFlags("console");
  auto config = jobwheel::console::OptionsFromFlags();
  if (!config.ok()) return jobwheel::Fail(config.status(), 2);
  return jobwheel::console::Run(*config);
}
