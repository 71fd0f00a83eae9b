// The demo executor: the SDK with a few handlers, used by scripts/up and integration tests.
// Flags only and wiring; see docs/sdk.md.

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/base/flags.h"
#include "common/base/logging.h"
#include "common/base/mutex_mode.h"
#include "jobwheel/executor.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7200", "ExecutorService listen address");
ABSL_FLAG(std::string, advertise_address, "",
          "Address registered for dispatchers to dial (default: --listen)");
ABSL_FLAG(std::string, app, "demo", "Executor group (app) name");
ABSL_FLAG(std::string, registry_target, "127.0.0.1:7101",
          "Registry: comma list of host:port tried in turn, or a gRPC target (empty: none)");
ABSL_FLAG(std::string, dispatcher_target, "127.0.0.1:7102",
          "Dispatcher for results: host:port, gRPC target or comma list of ip:port");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9200",
          "Prometheus /metrics listen address (empty disables)");
ABSL_FLAG(std::string, log_dir, "", "Run logs (default /tmp/jobwheel-executor-<port>/logs)");
ABSL_FLAG(std::string, spool_dir, "",
          "Unacknowledged results (default /tmp/jobwheel-executor-<port>/spool)");
ABSL_FLAG(std::string, executor_token_file, "",
          "File with the token presented to the registry and dispatcher");
ABSL_FLAG(std::string, dispatcher_public_key_file, "",
          "PEM file with the dispatchers' Ed25519 public key(s): verifies their Run/Kill/Beat "
          "calls");
ABSL_FLAG(std::string, scheduler_public_key_file, "",
          "PEM file with the scheduler's Ed25519 public key(s): verifies its Kill/Log calls");
ABSL_FLAG(bool, insecure_dev, false, "Accept unauthenticated calls (development only)");
ABSL_FLAG(bool, allow_scripts, false, "Run shell/python script jobs");
ABSL_FLAG(std::string, script_user, "nobody",
          "When running as root: the user script jobs run as (never root); see docs/security.md");
ABSL_FLAG(std::vector<std::string>, script_hidden_paths, {},
          "Comma list of files and directories script jobs must not see, besides --log_dir, "
          "--spool_dir and the directories of the token and key files (always hidden)");
ABSL_FLAG(bool, script_params_in_argv, false,
          "Legacy: also pass a script's param, shard index and total as $1 $2 $3, where every "
          "local user can read them (scripts read $JOBWHEEL_PARAM and friends without it)");
ABSL_FLAG(int, log_retention_days, 30, "Delete run-log day folders older than this");
ABSL_FLAG(absl::Duration, grace_period, absl::Seconds(10),
          "On SIGTERM, how long in-flight runs may finish");
ABSL_FLAG(int, capacity, 16, "Capacity advertised to the registry");
ABSL_FLAG(std::string, tls_cert, "", "Server certificate (PEM) for ExecutorService");
ABSL_FLAG(std::string, tls_key, "", "Server private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "", "Require client certificates signed by this CA");
ABSL_FLAG(std::string, tls_ca, "", "CA (PEM) to verify the registry and dispatcher (enables TLS)");
ABSL_FLAG(std::string, tls_client_cert, "",
          "Client certificate (PEM) for mutual TLS to the registry and dispatcher; default "
          "--tls_cert");
ABSL_FLAG(std::string, tls_client_key, "", "Private key of --tls_client_cert");
ABSL_FLAG(bool, log_json, false, "Log one JSON object per line");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");
ABSL_FLAG(std::string, executions_file, "",
          "Tests: append one line when each handler execution starts and one when it ends "
          "(empty: none)");

namespace {

// Appends a line per handler start and end to a file, so tests count executions on the
// executor itself: "start handler=H job=J fire=F run=R attempt=A" and
// "end handler=H job=J fire=F run=R attempt=A ok=0|1 cancelled=0|1". Each line is one
// O_APPEND write, so lines of concurrent runs never interleave. Thread-safe.
class ExecutionRecorder {
 public:
  explicit ExecutionRecorder(const std::string& path)
      : fd_(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0) spdlog::critical("executions_file {}: cannot open", path);
  }
  ~ExecutionRecorder() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  jobwheel::Handler Wrap(jobwheel::Handler handler) {
    return [this, handler = std::move(handler)](jobwheel::JobContext& ctx) {
      const std::string what =
          absl::StrCat("handler=", ctx.handler(), " job=", ctx.job_id(), " fire=", ctx.fire_id(),
                       " run=", ctx.run_id(), " attempt=", ctx.attempt());
      Append(absl::StrCat("start ", what, "\n"));
      jobwheel::Result result = handler(ctx);
      Append(absl::StrCat("end ", what, " ok=", result.ok() ? 1 : 0,
                          " cancelled=", ctx.cancelled() ? 1 : 0, "\n"));
      return result;
    };
  }

 private:
  void Append(const std::string& line) {
    if (fd_ >= 0 && write(fd_, line.data(), line.size()) < 0) {
      spdlog::error("executions_file: write failed");
    }
  }

  const int fd_;
};

void RegisterDemoHandlers(jobwheel::Executor& exec, ExecutionRecorder* recorder) {
  auto wrap = [recorder](jobwheel::Handler h) {
    return recorder == nullptr ? h : recorder->Wrap(std::move(h));
  };
  // Logs the param and succeeds with it.
  (void)exec.Register("echo", wrap([](jobwheel::JobContext& ctx) {
                        ctx.Log(ctx.param());
                        return jobwheel::Result::Ok(ctx.param());
                      }));
  // Sleeps `param` milliseconds, returning early when cancelled.
  (void)exec.Register(
      "sleep", wrap([](jobwheel::JobContext& ctx) {
        int64_t ms = 0;
        if (!absl::SimpleAtoi(ctx.param(), &ms) || ms < 0) {
          return jobwheel::Result::Fail(
              400, absl::StrCat("param: want milliseconds, got \"", ctx.param(), "\""));
        }
        ctx.Logf("sleeping %lld ms", static_cast<long long>(ms));
        if (!ctx.SleepFor(absl::Milliseconds(ms))) {
          ctx.Logf("interrupted: %s",
                   std::string(jobwheel::CancelReasonName(ctx.cancel_reason())).c_str());
          return jobwheel::Result::Fail("interrupted");
        }
        return jobwheel::Result::Ok(absl::StrCat("slept ", ms, " ms"));
      }));
  // Always fails with code 500.
  (void)exec.Register("fail", wrap([](jobwheel::JobContext& ctx) {
                        ctx.Log("failing on purpose");
                        return jobwheel::Result::Fail(
                            500, ctx.param().empty() ? "failed on purpose" : ctx.param());
                      }));
  // Logs its shard.
  (void)exec.Register("shard", wrap([](jobwheel::JobContext& ctx) {
                        const std::string shard =
                            absl::StrCat("shard ", ctx.shard_index(), "/", ctx.shard_total());
                        ctx.Log(shard);
                        return jobwheel::Result::Ok(shard);
                      }));
  // Fails unless attempt >= param (so it succeeds on the param-th retry).
  (void)exec.Register(
      "flaky", wrap([](jobwheel::JobContext& ctx) {
        int needed = 0;
        if (!ctx.param().empty() && !absl::SimpleAtoi(ctx.param(), &needed)) {
          return jobwheel::Result::Fail(400, "param: want an attempt number");
        }
        ctx.Logf("attempt %d, succeeds from attempt %d", ctx.attempt(), needed);
        if (ctx.attempt() >= needed) {
          return jobwheel::Result::Ok(absl::StrCat("succeeded at attempt ", ctx.attempt()));
        }
        return jobwheel::Result::Fail(
            500, absl::StrCat("flaky: attempt ", ctx.attempt(), " < ", needed));
      }));
}

// What to hide from script jobs for a credential file: its directory, or the file alone when
// that directory is a system one scripts need (/, /etc, /usr, ...: a top-level directory).
std::string CredentialMask(const std::string& file) {
  const std::string absolute = std::filesystem::absolute(file).lexically_normal().string();
  const std::string dir = std::filesystem::path(absolute).parent_path().string();
  const bool top_level = dir.empty() || dir == "/" || dir.find('/', 1) == std::string::npos;
  return top_level ? absolute : dir;
}

std::string PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(colon + 1);
}

}  // namespace

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  jobwheel::ParseFlagsWithEnv(argc, argv, "jobwheel demo executor");
  jobwheel::InitLogging("executor", absl::GetFlag(FLAGS_log_json), absl::GetFlag(FLAGS_log_level));

  jobwheel::ExecutorOptions options;
  options.app = absl::GetFlag(FLAGS_app);
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.advertise_address = absl::GetFlag(FLAGS_advertise_address);
  options.registry_target = absl::GetFlag(FLAGS_registry_target);
  options.dispatcher_target = absl::GetFlag(FLAGS_dispatcher_target);
  const std::string base = absl::StrCat("/tmp/jobwheel-executor-", PortOf(options.listen_address));
  options.log_dir =
      absl::GetFlag(FLAGS_log_dir).empty() ? base + "/logs" : absl::GetFlag(FLAGS_log_dir);
  options.spool_dir =
      absl::GetFlag(FLAGS_spool_dir).empty() ? base + "/spool" : absl::GetFlag(FLAGS_spool_dir);
  options.insecure_dev = absl::GetFlag(FLAGS_insecure_dev);
  options.allow_scripts = absl::GetFlag(FLAGS_allow_scripts);
  options.script_user = absl::GetFlag(FLAGS_script_user);
  options.script_hidden_paths = absl::GetFlag(FLAGS_script_hidden_paths);
  options.script_params_in_argv = absl::GetFlag(FLAGS_script_params_in_argv);
  for (const std::string& file :
       {absl::GetFlag(FLAGS_executor_token_file), absl::GetFlag(FLAGS_dispatcher_public_key_file),
        absl::GetFlag(FLAGS_scheduler_public_key_file), absl::GetFlag(FLAGS_tls_key),
        absl::GetFlag(FLAGS_tls_client_key)}) {
    if (!file.empty()) options.script_hidden_paths.push_back(CredentialMask(file));
  }
  options.log_retention_days = absl::GetFlag(FLAGS_log_retention_days);
  options.grace_period = absl::GetFlag(FLAGS_grace_period);
  options.capacity = absl::GetFlag(FLAGS_capacity);
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  options.tls_client_cert_file = absl::GetFlag(FLAGS_tls_client_cert);
  options.tls_client_key_file = absl::GetFlag(FLAGS_tls_client_key);
  options.handle_signals = true;

  auto executor_token =
      jobwheel::ReadTokenFile(absl::GetFlag(FLAGS_executor_token_file), "executor_token_file");
  if (!executor_token.ok()) {
    spdlog::critical("{}", executor_token.status().ToString());
    return 2;
  }
  options.executor_token = *executor_token;
  auto dispatcher_keys = jobwheel::ReadKeyFile(absl::GetFlag(FLAGS_dispatcher_public_key_file),
                                               "--dispatcher_public_key_file");
  auto scheduler_keys = jobwheel::ReadKeyFile(absl::GetFlag(FLAGS_scheduler_public_key_file),
                                              "--scheduler_public_key_file");
  if (!dispatcher_keys.ok() || !scheduler_keys.ok()) {
    spdlog::critical(
        "{}", (!dispatcher_keys.ok() ? dispatcher_keys : scheduler_keys).status().ToString());
    return 2;
  }
  options.dispatcher_public_keys = *dispatcher_keys;
  options.scheduler_public_keys = *scheduler_keys;
  const bool callers_known =
      !options.dispatcher_public_keys.empty() && !options.scheduler_public_keys.empty();
  if (!options.insecure_dev && (options.executor_token.empty() || !callers_known)) {
    spdlog::critical(
        "refusing to start: set --executor_token_file, --dispatcher_public_key_file and "
        "--scheduler_public_key_file, or --insecure_dev for development");
    return 2;
  }

  std::unique_ptr<prometheus::Exposer> exposer;
  if (!absl::GetFlag(FLAGS_metrics_address).empty()) {
    options.metrics_registry = std::make_shared<prometheus::Registry>();
    try {
      exposer = std::make_unique<prometheus::Exposer>(absl::GetFlag(FLAGS_metrics_address));
    } catch (const std::exception& e) {
      spdlog::critical("metrics_address {}: {}", absl::GetFlag(FLAGS_metrics_address), e.what());
      return 2;
    }
    exposer->RegisterCollectable(options.metrics_registry);
  }

  std::unique_ptr<ExecutionRecorder> recorder;
  if (!absl::GetFlag(FLAGS_executions_file).empty()) {
    recorder = std::make_unique<ExecutionRecorder>(absl::GetFlag(FLAGS_executions_file));
    if (!recorder->ok()) return 2;
  }
  jobwheel::Executor exec(options);
  RegisterDemoHandlers(exec, recorder.get());
  absl::Status st = exec.Run();
  if (!st.ok()) {
    spdlog::critical("executor: {}", st.ToString());
    return 1;
  }
  return 0;
}
