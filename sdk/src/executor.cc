#include "jobwheel/executor.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/grpc/grpc_keep_warm.h"
#include "common/grpc/grpc_server.h"
#include "common/grpc/target_list.h"
#include "common/model/instance_tag.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "prometheus/registry.h"
#include "sdk/internal/executor_grpc_service.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/grpc_dispatcher_client.h"
#include "sdk/internal/heartbeat_client.h"
#include "sdk/internal/result_reporter.h"
#include "sdk/internal/result_spool.h"
#include "sdk/internal/run_log_store.h"
#include "sdk/internal/run_manager.h"
#include "sdk/internal/script_runner.h"
#include "spdlog/spdlog.h"

namespace jobwheel {
namespace sdk {
namespace {

// Set by the SIGTERM/SIGINT handler installed while Run() waits.
std::atomic<int> g_signal{0};

void OnSignal(int sig) { g_signal.store(sig); }

// host:port from an address; host may be "[v6]".
void SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    *host = address;
    port->clear();
    return;
  }
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
}

bool IsWildcardHost(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::" || host == "*";
}

std::string ComputeAdvertiseAddress(const std::string& advertise, const std::string& listen,
                                    int bound_port) {
  std::string host;
  std::string port;
  SplitHostPort(advertise.empty() ? listen : advertise, &host, &port);
  if (advertise.empty() && IsWildcardHost(host)) {
    char name[256] = {0};
    host = ::gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : "127.0.0.1";
  }
  if (advertise.empty() || port.empty() || port == "0") port = absl::StrCat(bound_port);
  return absl::StrCat(host, ":", port);
}

}  // namespace

// Everything behind jobwheel::Executor: the composition root of the SDK.
class ExecutorCore {
 public:
  explicit ExecutorCore(ExecutorOptions options, Clock& clock)
      : options_(std::move(options)), clock_(clock), process_start_(clock.Now()) {}
  ~ExecutorCore() { Shutdown(); }

  absl::Status Register(const std::string& name, Handler handler) {
    absl::MutexLock lock(&mu_);
    absl::Status st;
    if (started_ || shutting_down_) {
      return absl::FailedPreconditionError(
          absl::StrCat("handler \"", name, "\": register handlers before Start()"));
    }
    if (name.empty()) {
      st = absl::InvalidArgumentError("handler name: must not be empty");
    } else if (!handler) {
      st = absl::InvalidArgumentError(absl::StrCat("handler \"", name, "\": function is empty"));
    } else if (handlers_.contains(name)) {
      st = absl::InvalidArgumentError(absl::StrCat("handler \"", name, "\": already registered"));
    }
    if (!st.ok()) {
      if (register_error_.ok()) register_error_ = st;
      return st;
    }
    handlers_[name] = std::move(handler);
    return absl::OkStatus();
  }

  // Who may call ExecutorService (null: no caller keys configured, insecure_dev alone).
  absl::StatusOr<std::shared_ptr<CallerTokenVerifier>> MakeCallers() {
    std::shared_ptr<CallerTokenVerifier> callers;
    if (!options_.dispatcher_public_keys.empty() || !options_.scheduler_public_keys.empty()) {
      CallerTokenVerifier::Options vo;
      if (!options_.dispatcher_public_keys.empty()) {
        vo.public_keys_pem[std::string(kIssuerDispatcher)] = options_.dispatcher_public_keys;
      }
      if (!options_.scheduler_public_keys.empty()) {
        vo.public_keys_pem[std::string(kIssuerScheduler)] = options_.scheduler_public_keys;
      }
      auto verifier = CallerTokenVerifier::Create(std::move(vo), clock_);
      if (!verifier.ok()) return verifier.status();
      callers = std::move(*verifier);
    }
    return callers;
  }

  // The runner of script jobs, isolated from what this process holds (its logs, spool, keys).
  absl::StatusOr<std::unique_ptr<ScriptRunner>> MakeScriptRunner() {
    ScriptRunnerOptions so;
    so.scripts_dir = logs_->dir() + "/scripts";
    so.shell_binary = options_.shell_binary;
    so.python_binary = options_.python_binary;
    so.kill_grace = options_.script_kill_grace;
    so.params_in_argv = options_.script_params_in_argv;
    if (so.params_in_argv) {
      spdlog::warn(
          "executor: script params also passed as $1 $2 $3, readable by every "
          "local user (script_params_in_argv)");
    }
    // Never kNone: scripts must not see what this process holds.
    so.isolation = DefaultScriptIsolation();
    if (so.isolation == ScriptIsolation::kSwitchUser) {
      auto user = ResolveScriptUser(options_.script_user);
      if (!user.ok()) return user.status();
      so.script_uid = user->uid;
      so.script_gid = user->gid;
    }
    so.hidden_paths = options_.script_hidden_paths;
    so.hidden_paths.push_back(logs_->dir());
    so.hidden_paths.push_back(options_.log_dir);
    so.hidden_paths.push_back(options_.spool_dir);
    // The executor's own keys (their directories, or the files alone in a top-level one).
    for (const std::string& file : {options_.tls_key_file, options_.tls_client_key_file}) {
      if (!file.empty()) so.hidden_paths.push_back(HiddenPathForCredential(file));
    }
    spdlog::info("executor: script jobs isolated ({}{}), hiding {}",
                 std::string(ScriptIsolationName(so.isolation)),
                 so.isolation == ScriptIsolation::kSwitchUser
                     ? absl::StrCat(", as ", options_.script_user, " uid ", so.script_uid)
                     : std::string(),
                 absl::StrJoin(so.hidden_paths, ", "));
    return std::make_unique<ScriptRunner>(so, clock_);
  }

  // The registration this executor sends the registry, and whom it beats to.
  HeartbeatOptions HeartbeatOptionsFor(const std::vector<std::string>& names) {
    HeartbeatOptions ho;
    ho.targets = SplitTargets(options_.registry_target);
    ho.executor_token = options_.executor_token;
    ho.initial_backoff = options_.heartbeat_initial_backoff;
    ho.max_backoff = options_.heartbeat_max_backoff;
    jobwheel::v1::ExecutorRegistration& reg = ho.registration;
    reg.set_app(options_.app);
    reg.set_address(advertise_);
    reg.set_instance_id(instance_id_);
    for (const auto& n : names) reg.add_handlers(n);
    reg.set_sdk_version(std::string(Executor::kSdkVersion));
    reg.set_capacity(options_.capacity);
    for (const auto& [k, v] : options_.labels) (*reg.mutable_labels())[k] = v;
    // Lets the scheduler tell this process from a predecessor at the same address: runs that
    // started before it will never be reported by it.
    (*reg.mutable_labels())["jobwheel.process_start_us"] =
        std::to_string(absl::ToUnixMicros(process_start_));
    reg.set_allow_scripts(options_.allow_scripts);
    return ho;
  }

  absl::Status Start() {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::OkStatus();
    if (shutting_down_) return absl::FailedPreconditionError("executor was shut down");
    if (!register_error_.ok()) return register_error_;
    absl::Status valid = options_.Validate();
    if (!valid.ok()) return valid;
    if (options_.insecure_dev) {
      spdlog::warn("executor: insecure_dev is set: ExecutorService accepts unauthenticated calls");
    }
    Clock& clock = clock_;
    // Who may call ExecutorService: tokens the dispatchers and the scheduler sign for this
    // executor's advertised address, known once the port is bound (SetAudience below).
    absl::StatusOr<std::shared_ptr<CallerTokenVerifier>> verifier = MakeCallers();
    if (!verifier.ok()) return verifier.status();
    std::shared_ptr<CallerTokenVerifier> callers = std::move(*verifier);

    prometheus_ = options_.metrics_registry != nullptr ? options_.metrics_registry
                                                       : std::make_shared<prometheus::Registry>();
    metrics_ = std::make_unique<ExecutorMetrics>(*prometheus_);

    logs_ = std::make_unique<RunLogStore>(options_.log_dir, clock);
    absl::Status st = logs_->Init();
    if (!st.ok()) return st;
    spool_ = std::make_unique<ResultSpool>(options_.spool_dir);
    st = spool_->Init();
    if (!st.ok()) return st;

    const ClientTls client_tls = ClientTls::WithServerFallback(
        options_.tls_ca_file, options_.tls_client_cert_file, options_.tls_client_key_file,
        options_.tls_cert_file, options_.tls_key_file);
    if (!options_.dispatcher_target.empty()) {
      auto channel = MakeChannel(ChannelTarget(options_.dispatcher_target), client_tls);
      if (!channel.ok()) return channel.status();
      dispatcher_ = std::make_unique<GrpcDispatcherClient>(
          jobwheel::v1::DispatcherService::NewStub(*channel), options_.executor_token);
    } else {
      spdlog::warn("executor: no dispatcher_target; results stay in the spool {}",
                   options_.spool_dir);
    }
    reporter_ = std::make_unique<ResultReporter>(spool_.get(), dispatcher_.get(), clock, *metrics_);
    st = reporter_->Start();
    if (!st.ok()) return st;

    if (options_.allow_scripts) {
      absl::StatusOr<std::unique_ptr<ScriptRunner>> scripts = MakeScriptRunner();
      if (!scripts.ok()) return scripts.status();
      scripts_ = std::move(*scripts);
    }

    // This process's name for the registry (kept across reconnects) and its public tag, which
    // every run sent here must carry.
    instance_id_ = NewInstanceId();
    instance_tag_ = InstanceTag(instance_id_);
    RunManagerOptions ro;
    ro.app = options_.app;
    ro.instance = instance_tag_;
    ro.allow_scripts = options_.allow_scripts;
    ro.worker_idle_timeout = options_.worker_idle_timeout;
    ro.cancel_grace = options_.cancel_grace;
    HandlerMap handlers;
    std::vector<std::string> names;
    for (const auto& [name, fn] : handlers_) {
      handlers[name] = fn;
      names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    runs_ = std::make_unique<RunManager>(ro, std::move(handlers), logs_.get(), scripts_.get(),
                                         reporter_.get(), clock, *metrics_);

    // Each issuer only on its own RPCs: the dispatchers run and probe, the scheduler kills and
    // reads logs.
    ExecutorCallers auth;
    auth.insecure_dev = options_.insecure_dev;
    auth.verifier = callers;
    service_ = std::make_unique<ExecutorGrpcService>(runs_.get(), logs_.get(), auth);
    ServerTls server_tls{options_.tls_cert_file, options_.tls_key_file,
                         options_.tls_client_ca_file};
    auto server = StartGrpcServer(options_.listen_address, {service_.get()}, server_tls, &port_);
    if (!server.ok()) {
      runs_->Shutdown(absl::ZeroDuration(), absl::Seconds(1));
      reporter_->Shutdown();
      return server.status();
    }
    server_ = std::move(*server);
    // Without it a Run arriving about a second after the previous one often waits ~100 ms
    // for gRPC's callback threads (see grpc_keep_warm.h).
    keep_warm_ =
        std::make_unique<GrpcKeepWarm>(server_->InProcessChannel(grpc::ChannelArguments()));
    keep_warm_->Start();
    advertise_ =
        ComputeAdvertiseAddress(options_.advertise_address, options_.listen_address, port_);
    if (callers != nullptr) callers->SetAudience(ExecutorAudience(options_.app, advertise_));
    runs_->SetExecutorAddress(advertise_);
    runs_->Start();

    HeartbeatOptions ho = HeartbeatOptionsFor(names);
    if (ho.targets.empty()) {
      spdlog::warn("executor: no registry_target; not registering (reachable only by address)");
    }
    auto factory = [this, client_tls](const std::string& target)
        -> std::unique_ptr<jobwheel::v1::RegistryService::StubInterface> {
      absl::MutexLock lock(&channels_mu_);
      auto it = registry_channels_.find(target);
      if (it == registry_channels_.end()) {
        auto channel = MakeChannel(target, client_tls);
        if (!channel.ok()) {
          spdlog::error("registry {}: {}", target, channel.status().ToString());
          return nullptr;
        }
        it = registry_channels_.emplace(target, *channel).first;
      }
      return jobwheel::v1::RegistryService::NewStub(it->second);
    };
    RunManager* runs = runs_.get();
    heartbeat_ = std::make_unique<HeartbeatClient>(
        std::move(ho), factory,
        [runs](jobwheel::v1::ExecutorBeat* beat) {
          RunManager::Snapshot s = runs->GetSnapshot();
          for (int64_t id : s.running_job_ids) beat->add_running_job_ids(id);
          beat->set_running(s.running);
          beat->set_queued(s.queued);
        },
        *metrics_);
    heartbeat_->Start();

    cleanup_thread_ = std::thread([this] { CleanupLoop(); });
    started_ = true;
    spdlog::info("executor app={} serving on {} (advertised {}), handlers [{}], scripts {}",
                 options_.app, options_.listen_address, advertise_, absl::StrJoin(names, ", "),
                 options_.allow_scripts ? "allowed" : "disabled");
    return absl::OkStatus();
  }

  absl::Status Run() {
    absl::Status st = Start();
    if (!st.ok()) return st;
    struct sigaction old_term = {};
    struct sigaction old_int = {};
    const bool signals = options_.handle_signals;
    if (signals) {
      g_signal.store(0);
      struct sigaction sa = {};
      sa.sa_handler = OnSignal;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGTERM, &sa, &old_term);
      sigaction(SIGINT, &sa, &old_int);
    }
    bool shutdown_by_signal = false;
    {
      absl::MutexLock lock(&mu_);
      while (!shutting_down_) {
        // Polls the flag the signal handler sets.
        clock_.AwaitWithDeadline(&mu_, absl::Condition(&shutting_down_),
                                 clock_.Now() + absl::Milliseconds(100));
        if (signals && g_signal.load() != 0) {
          shutdown_by_signal = true;
          break;
        }
      }
    }
    if (shutdown_by_signal) {
      spdlog::info("executor: signal {} received; shutting down", g_signal.load());
    }
    Shutdown();
    if (signals) {
      sigaction(SIGTERM, &old_term, nullptr);
      sigaction(SIGINT, &old_int, nullptr);
    }
    return absl::OkStatus();
  }

  void Shutdown() {
    {
      absl::MutexLock lock(&mu_);
      if (shutting_down_) {
        // Another thread shuts down: wait for it.
        while (!shut_down_) cv_.Wait(&mu_);
        return;
      }
      shutting_down_ = true;
      cv_.SignalAll();
      if (!started_) {
        shut_down_ = true;
        return;
      }
    }
    spdlog::info("executor: shutting down (grace {})", absl::FormatDuration(options_.grace_period));
    runs_->StopAccepting();
    heartbeat_->Shutdown("executor shutting down");
    runs_->Shutdown(options_.grace_period,
                    options_.cancel_grace + options_.script_kill_grace + absl::Seconds(1));
    const size_t left = reporter_->Flush(options_.result_flush_timeout);
    if (left > 0) {
      spdlog::warn("executor: {} result(s) not yet acknowledged stay in {} for the next start",
                   left, options_.spool_dir);
    }
    reporter_->Shutdown();
    keep_warm_->Shutdown();
    server_->Shutdown(absl::ToChronoTime(clock_.Now() + absl::Seconds(2)));
    {
      absl::MutexLock lock(&mu_);
      cleanup_stop_ = true;
      cv_.SignalAll();
    }
    if (cleanup_thread_.joinable()) cleanup_thread_.join();
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    cv_.SignalAll();
    spdlog::info("executor: shut down");
  }

  int port() const {
    absl::MutexLock lock(&mu_);
    return port_;
  }
  std::string instance() const {
    absl::MutexLock lock(&mu_);
    return instance_tag_;
  }
  std::string advertise_address() const {
    absl::MutexLock lock(&mu_);
    return advertise_;
  }

 private:
  void CleanupLoop() {
    absl::MutexLock lock(&mu_);
    while (!cleanup_stop_) {
      mu_.Unlock();
      const int removed = logs_->Cleanup(options_.log_retention_days);
      if (removed > 0) spdlog::info("run logs: removed {} day folder(s)", removed);
      mu_.Lock();
      const absl::Time until = clock_.Now() + absl::Hours(1);
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&cleanup_stop_), until);
    }
  }

  const ExecutorOptions options_;
  Clock& clock_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  absl::flat_hash_map<std::string, Handler> handlers_ ABSL_GUARDED_BY(mu_);
  absl::Status register_error_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  bool cleanup_stop_ ABSL_GUARDED_BY(mu_) = false;
  int port_ = 0;
  std::string advertise_;
  std::string instance_id_;   // Sent to the registry only.
  std::string instance_tag_;  // InstanceTag(instance_id_).

  const absl::Time process_start_;
  absl::Mutex channels_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>> registry_channels_
      ABSL_GUARDED_BY(channels_mu_);

  // Destroyed in reverse order: heartbeat and server before what they use.
  std::shared_ptr<prometheus::Registry> prometheus_;
  std::unique_ptr<ExecutorMetrics> metrics_;
  std::unique_ptr<RunLogStore> logs_;
  std::unique_ptr<ResultSpool> spool_;
  std::unique_ptr<DispatcherClient> dispatcher_;
  std::unique_ptr<ResultReporter> reporter_;
  std::unique_ptr<ScriptRunner> scripts_;
  std::unique_ptr<RunManager> runs_;
  std::unique_ptr<ExecutorGrpcService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcKeepWarm> keep_warm_;
  std::unique_ptr<HeartbeatClient> heartbeat_;
  std::thread cleanup_thread_;
};

}  // namespace sdk

Executor::Executor(ExecutorOptions options)
    : core_(std::make_unique<sdk::ExecutorCore>(std::move(options), RealClock::Get())) {}

Executor::~Executor() = default;

absl::Status Executor::Register(const std::string& name, Handler handler) {
  return core_->Register(name, std::move(handler));
}

absl::Status Executor::Start() { return core_->Start(); }

absl::Status Executor::Run() { return core_->Run(); }

void Executor::Shutdown() { core_->Shutdown(); }

int Executor::port() const { return core_->port(); }

std::string Executor::advertise_address() const { return core_->advertise_address(); }
std::string Executor::instance() const { return core_->instance(); }

}  // namespace jobwheel
