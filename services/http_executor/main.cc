// The HTTP executor: an ordinary jobwheel executor (app `http` by default) whose one handler,
// `http`, calls the HTTP(S) endpoint its job's param describes (docs/http-jobs.md), behind an
// outbound policy checked after DNS on every connection and every redirect hop.
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/base/flags.h"
#include "common/base/logging.h"
#include "common/base/mutex_mode.h"
#include "common/net/host_port.h"
#include "common/net/outbound_policy.h"
#include "common/server/log_flags.h"
#include "common/server/server_main.h"
#include "common/time/clock.h"
#include "jobwheel/executor.h"
#include "prometheus/registry.h"
#include "services/http_executor/curl_transfer.h"
#include "services/http_executor/http_caller.h"
#include "services/http_executor/http_executor_metrics.h"
#include "services/http_executor/http_executor_options.h"
#include "services/http_executor/http_job_handler.h"
#include "services/http_executor/resolver.h"
#include "services/http_executor/secret_source.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7220", "ExecutorService listen address");
ABSL_FLAG(std::string, advertise_address, "",
          "Address registered for dispatchers to dial (default: --listen)");
ABSL_FLAG(std::string, app, "http", "Executor group (app) name");
ABSL_FLAG(std::string, registry_target, "127.0.0.1:7101",
          "Registry: comma list of host:port tried in turn, or a gRPC target (empty: none)");
ABSL_FLAG(std::string, dispatcher_target, "127.0.0.1:7102",
          "Dispatcher for results: host:port, gRPC target or comma list of ip:port");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9220",
          "Prometheus /metrics listen address (empty disables)");
ABSL_FLAG(std::string, log_dir, "", "Run logs (default /tmp/jobwheel-http-executor-<port>/logs)");
ABSL_FLAG(std::string, spool_dir, "",
          "Unacknowledged results (default /tmp/jobwheel-http-executor-<port>/spool)");
ABSL_FLAG(std::string, executor_token_file, "",
          "File with the token presented to the registry and dispatcher");
ABSL_FLAG(std::string, dispatcher_public_key_file, "",
          "PEM file with the dispatchers' Ed25519 public key(s)");
ABSL_FLAG(std::string, scheduler_public_key_file, "",
          "PEM file with the scheduler's Ed25519 public key(s)");
ABSL_FLAG(bool, insecure_dev, false, "Accept unauthenticated calls (development only)");
ABSL_FLAG(int, capacity, 64, "Capacity advertised to the registry");
ABSL_FLAG(absl::Duration, grace_period, absl::Seconds(10),
          "On SIGTERM, how long in-flight calls may finish");
ABSL_FLAG(int, log_retention_days, 30, "Delete run-log day folders older than this");
ABSL_FLAG(std::string, tls_cert, "", "Server certificate (PEM) for ExecutorService");
ABSL_FLAG(std::string, tls_key, "", "Server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "", "Require client certificates signed by this CA");
ABSL_FLAG(std::string, tls_ca, "", "CA (PEM) to verify the registry and dispatcher (enables TLS)");
ABSL_FLAG(std::string, tls_client_cert, "",
          "Client certificate (PEM) for mutual TLS to the registry and dispatcher");
ABSL_FLAG(std::string, tls_client_key, "", "Private key of --tls_client_cert");
// The outbound policy (docs/http-jobs.md).
ABSL_FLAG(std::string, allow_hosts, "",
          "Comma list of host or host:port that HTTP jobs may reach although they resolve to "
          "loopback, link-local, private or metadata addresses (host:port also opens that port)");
ABSL_FLAG(std::string, allow_cidrs, "",
          "Comma list of CIDRs HTTP jobs may reach although loopback, link-local or private "
          "(a metadata address only as a single address, e.g. 169.254.169.254/32)");
ABSL_FLAG(std::string, allow_ports, "80,443",
          "Ports HTTP jobs may connect to: comma list of ports and lo-hi ranges, or *");
ABSL_FLAG(bool, allow_public, true,
          "Whether HTTP jobs may reach public addresses without an --allow_* entry");
ABSL_FLAG(std::string, secret_dir, "",
          "Directory whose files HTTP jobs may name as secret headers (empty: none)");
ABSL_FLAG(std::string, secret_env_prefix, "",
          "Prefix of the environment variables HTTP jobs may name as secret headers, e.g. "
          "JOBWHEEL_HTTP_SECRET_ (empty: none)");
ABSL_FLAG(std::string, ca_file, "", "PEM CA bundle for https:// endpoints (default: system CAs)");
ABSL_FLAG(int64_t, max_response_bytes, 1 << 20,
          "Read a response body up to this many bytes, then stop reading");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(10), "Bound on each TCP/TLS connect");

namespace jobwheel::http_executor {
namespace {

std::string PortOf(const std::string& address) {
  absl::StatusOr<net::HostPort> hp = net::ParseHostPort(address);
  return hp.ok() ? std::to_string(hp->port) : "0";
}

// The SDK's options from the flags, credentials read from their files.
absl::StatusOr<jobwheel::ExecutorOptions> ExecutorOptionsFromFlags() {
  jobwheel::ExecutorOptions o;
  o.app = absl::GetFlag(FLAGS_app);
  o.listen_address = absl::GetFlag(FLAGS_listen);
  o.advertise_address = absl::GetFlag(FLAGS_advertise_address);
  o.registry_target = absl::GetFlag(FLAGS_registry_target);
  o.dispatcher_target = absl::GetFlag(FLAGS_dispatcher_target);
  const std::string base = absl::StrCat("/tmp/jobwheel-http-executor-", PortOf(o.listen_address));
  o.log_dir = absl::GetFlag(FLAGS_log_dir).empty() ? base + "/logs" : absl::GetFlag(FLAGS_log_dir);
  o.spool_dir =
      absl::GetFlag(FLAGS_spool_dir).empty() ? base + "/spool" : absl::GetFlag(FLAGS_spool_dir);
  o.insecure_dev = absl::GetFlag(FLAGS_insecure_dev);
  o.allow_scripts = false;
  o.capacity = absl::GetFlag(FLAGS_capacity);
  o.grace_period = absl::GetFlag(FLAGS_grace_period);
  o.log_retention_days = absl::GetFlag(FLAGS_log_retention_days);
  o.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  o.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  o.tls_client_cert_file = absl::GetFlag(FLAGS_tls_client_cert);
  o.tls_client_key_file = absl::GetFlag(FLAGS_tls_client_key);
  o.handle_signals = true;
  absl::StatusOr<std::string> token =
      ReadTokenFile(absl::GetFlag(FLAGS_executor_token_file), "--executor_token_file");
  if (!token.ok()) return token.status();
  o.executor_token = *std::move(token);
  absl::StatusOr<std::string> dispatcher_keys =
      ReadKeyFile(absl::GetFlag(FLAGS_dispatcher_public_key_file), "--dispatcher_public_key_file");
  if (!dispatcher_keys.ok()) return dispatcher_keys.status();
  o.dispatcher_public_keys = *std::move(dispatcher_keys);
  absl::StatusOr<std::string> scheduler_keys =
      ReadKeyFile(absl::GetFlag(FLAGS_scheduler_public_key_file), "--scheduler_public_key_file");
  if (!scheduler_keys.ok()) return scheduler_keys.status();
  o.scheduler_public_keys = *std::move(scheduler_keys);
  absl::Status valid = o.Validate();
  if (!valid.ok()) return valid;
  return o;
}

absl::StatusOr<HttpExecutorOptions> HttpOptionsFromFlags() {
  HttpExecutorOptions o;
  o.allow_hosts = absl::GetFlag(FLAGS_allow_hosts);
  o.allow_cidrs = absl::GetFlag(FLAGS_allow_cidrs);
  o.allow_ports = absl::GetFlag(FLAGS_allow_ports);
  o.allow_public = absl::GetFlag(FLAGS_allow_public);
  o.secret_dir = absl::GetFlag(FLAGS_secret_dir);
  o.secret_env_prefix = absl::GetFlag(FLAGS_secret_env_prefix);
  o.ca_file = absl::GetFlag(FLAGS_ca_file);
  o.max_response_bytes = absl::GetFlag(FLAGS_max_response_bytes);
  o.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
  absl::Status valid = o.Validate();
  if (!valid.ok()) return valid;
  return o;
}

int Run(jobwheel::ExecutorOptions executor_options, const HttpExecutorOptions& o) {
  auto prom = std::make_shared<prometheus::Registry>();
  executor_options.metrics_registry = prom;
  auto exposer = StartMetricsExposer(absl::GetFlag(FLAGS_metrics_address), prom);
  if (!exposer.ok()) return Fail(exposer.status(), 2);
  HttpExecutorMetrics metrics(*prom);

  Clock& clock = RealClock::Get();
  const net::OutboundPolicy policy(*o.PolicyOptions());
  SystemResolver resolver;
  CurlTransfer transfer(CurlTransfer::Options{o.ca_file}, clock);
  HttpCaller::Options caller_options;
  caller_options.max_body_bytes = static_cast<size_t>(o.max_response_bytes);
  caller_options.connect_timeout = o.connect_timeout;
  HttpCaller caller(policy, resolver, transfer, clock, caller_options);
  const SecretSource secrets(SecretSource::Options{o.secret_dir, o.secret_env_prefix});
  HttpJobHandler handler(caller, secrets, metrics, clock);

  jobwheel::Executor executor(executor_options);
  absl::Status st =
      executor.Register("http", [&handler](jobwheel::JobContext& ctx) { return handler.Run(ctx); });
  if (!st.ok()) return Fail(st);
  spdlog::info(
      "http executor for app {}: {}; secrets from {} and {}", executor_options.app,
      policy.Describe(), o.secret_dir.empty() ? "no directory" : o.secret_dir,
      o.secret_env_prefix.empty() ? "no variables" : absl::StrCat(o.secret_env_prefix, "*"));
  st = executor.Run();
  if (!st.ok()) return Fail("executor", st);
  return 0;
}

}  // namespace
}  // namespace jobwheel::http_executor

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  jobwheel::ParseFlagsWithEnv(argc, argv, "jobwheel HTTP executor: HTTP(S) calls as jobs");
  jobwheel::InitLoggingFromFlags("http_executor");
  auto executor_options = jobwheel::http_executor::ExecutorOptionsFromFlags();
  if (!executor_options.ok()) return jobwheel::Fail(executor_options.status(), 2);
  auto http_options = jobwheel::http_executor::HttpOptionsFromFlags();
  if (!http_options.ok()) return jobwheel::Fail(http_options.status(), 2);
  return jobwheel::http_executor::Run(*std::move(executor_options), *http_options);
}
