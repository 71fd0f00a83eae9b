#ifndef JOBWHEEL_COMMON_TESTING_STACK_H_
#define JOBWHEEL_COMMON_TESTING_STACK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/caller_keys.h"
#include "common/testing/client_context.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/token_admin.pb.h"

// The real binaries (registry, dispatcher, scheduler, demo executor, console) on a PostgreSQL
// database, for the multi-process tests and the bench: one place that knows each binary's
// flags, the credentials they take, how to wait until they serve and where their logs are.
namespace jobwheel::testing {

// Runfile paths of the binaries (relative to Options::bin_dir when that is set).
inline constexpr char kRegistryBinary[] = "services/registry/registry";
inline constexpr char kDispatcherBinary[] = "services/dispatcher/dispatcher";
inline constexpr char kSchedulerBinary[] = "services/scheduler/scheduler";
inline constexpr char kConsoleBinary[] = "services/console/console";
inline constexpr char kDemoExecutorBinary[] = "sdk/examples/demo_executor";

std::string Addr(int port);

// Writes `content` to `path` (mode 0600) and returns the path.
std::string WriteFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);

// Waits until something listens on the port of `target`, then until it answers a health check
// of `service` SERVING over `tls` (plaintext when tls.ca_file is empty).
absl::Status WaitForServingTls(const std::string& target, const ClientTls& tls,
                               absl::Duration timeout, const std::string& service = "");

// Starts the runfile `binary` with `args` (output to `log`) and waits up to `timeout` for it to
// exit; returns its exit code, or DEADLINE_EXCEEDED (after killing it) when it kept running.
absl::StatusOr<int> RunToExit(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& log, const std::vector<std::string>& env = {},
                              absl::Duration timeout = absl::Seconds(30));

// One process of a stack: what it runs, where it listens and logs. Start() (re)starts it with
// the same binary, flags and ports.
struct StackProcess {
  std::string name;    // Its log is <stack dir>/<name>.log unless `log` says otherwise.
  std::string binary;  // A runfile path such as kRegistryBinary.
  std::vector<std::string> args;
  std::string log;
  int port = 0;
  int metrics_port = 0;  // 0: --metrics_address= (no metrics listener).
  // False for a process that is no gRPC server: Start() does not wait for it to serve.
  bool serves = true;
  // The health service name Start() waits for: "" (ready) by default; "liveness" for a server
  // that is up but cannot be ready (e.g. a dispatcher without a registry).
  std::string health_service;
  std::unique_ptr<Process> proc = std::make_unique<Process>();

  std::string address() const { return Addr(port); }
};

class Stack {
 public:
  // The replicas of one service.
  struct ServiceOptions {
    int replicas = 1;
    // --replica_id of replica i (none when missing or empty); it also names the process.
    // Without one, replica 0 is "<service>" and replica i "<service>-<i+1>".
    std::vector<std::string> replica_ids;
    // Added to every replica's command line.
    std::vector<std::string> extra_flags;
    // StartServices prepares the replicas (ports, flags) but leaves starting them to
    // StartReplica.
    bool start_later = false;
  };

  struct Options {
    // TLS material (all servers share one certificate; clients present `tls_cert` too).
    std::string tls_ca;
    std::string tls_cert;
    std::string tls_key;
    bool mutual_tls = false;  // Servers require client certificates signed by tls_ca.

    // Where the binaries are: empty for the Bazel runfiles, else a bazel-bin directory.
    std::string bin_dir;
    // Logs, token files, keys and executor files; empty: a fresh directory under TEST_TMPDIR.
    std::string dir;
    // The database; empty: a fresh test database (with the migrations applied when
    // `migrate_database`, else left to the services).
    std::string dsn;
    bool migrate_database = false;

    // Credentials. With `credentials_dir` (as scripts/up and scripts/bench make it: admin,
    // executor, scheduler.key/.pub, dispatcher.key/.pub) those files are used as they are,
    // the shared executor token included. Otherwise the stack writes them into its directory:
    // the bootstrap admin token (`admin_token`, or a random one) and fresh key pairs, and a
    // shared executor token only when `executor_token` is set (else executors need per-app
    // API tokens).
    std::string credentials_dir;
    std::string admin_token;
    std::string executor_token;

    // Each service and demo executor gets a metrics listener on its own port.
    bool metrics = false;
    // When set, every child's pid is appended to this file.
    std::string pids_file;
    // How long a started process may take to serve.
    absl::Duration serving_timeout = absl::Seconds(30);

    ServiceOptions registry, dispatcher, scheduler;
  };

  // One demo executor (see AddExecutor).
  struct ExecutorSpec {
    std::string app = "demo";
    // Presented to the registry and dispatcher; empty: the shared executor token when the
    // stack has one, else an executor token for `app` created through TokenAdminService.
    std::string token;
    bool allow_scripts = false;
    std::vector<std::string> extra_flags;
  };

  // One console (see StartConsole).
  struct ConsoleSpec {
    std::string name = "console";
    std::string scheduler_target;  // Empty: scheduler replica 0.
    std::vector<std::string> extra_flags;
  };

  explicit Stack(Options options) : options_(std::move(options)) {}
  ~Stack();
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  // The directory, the database and the credentials; the ports and flags of every replica.
  // Idempotent; StartServices calls it.
  absl::Status Prepare();
  // Prepare, then starts registry, dispatcher and scheduler replicas in that order (except
  // those `start_later`), each waited for until it serves.
  // With the registry started, app "demo" (the executors' default app) exists afterwards.
  absl::Status StartServices();
  // (Re)starts replica `index` of a service on its ports and waits until it serves.
  absl::Status StartRegistry(int index) { return Start(*registries_[index]); }
  absl::Status StartDispatcher(int index) { return Start(*dispatchers_[index]); }
  absl::Status StartScheduler(int index) { return Start(*schedulers_[index]); }

  // Starts the demo executor for `app` presenting `executor_token`; waits until it serves.
  absl::Status StartExecutor(const std::string& app, const std::string& executor_token,
                             bool allow_scripts = false);
  // Starts one more demo executor (its own port, log, spool and executions file) and waits
  // until it serves and its app lists it online in the registry. Returns its index: 0 for the
  // first executor of the stack (also the one StartExecutor starts), 1 for the next...
  absl::StatusOr<int> AddExecutor(const ExecutorSpec& spec);
  // Starts a console against the stack and waits until it answers /healthz.
  absl::StatusOr<StackProcess*> StartConsole(const ConsoleSpec& spec);

  // Starts (or restarts: SIGTERM first if it runs) `p` as it says and waits until it serves
  // over the stack's TLS. Also for processes the caller describes and owns itself (name,
  // binary, args, port); the log defaults to <dir>/<name>.log.
  absl::Status Start(StackProcess& p);
  // SIGTERM, SIGKILL after 10 s.
  static void StopProcess(StackProcess& p);
  // kill -9, reaped.
  static void KillProcess(StackProcess& p);

  // Creates an API token through TokenAdminService as the bootstrap admin; returns the secret.
  absl::StatusOr<std::string> CreateToken(const std::string& name, jobwheel::v1::Role role,
                                          const std::vector<std::string>& apps);
  // Waits until the registry lists `address` online for `app` (AppAdminService/ListApps).
  // Creates app `app` through AppAdminService (admins create apps; an executor's registration
  // never does). An app that exists already is fine. StartExecutor calls it.
  absl::Status EnsureApp(const std::string& app) const;
  absl::Status WaitExecutorOnline(const std::string& app, const std::string& address,
                                  absl::Duration timeout) const;
  // Waits until scheduler replica `index` says it leads (LeadershipService/GetLeader).
  absl::Status WaitLeader(int index, absl::Duration timeout) const;
  // Stops every process, executors and consoles first. Idempotent.
  void Stop();

  const std::string& dir() const { return dir_; }
  const std::string& dsn() const { return dsn_; }
  const std::string& admin_token() const { return admin_token_; }
  const std::string& admin_token_file() const { return admin_file_; }
  const CallerKeyFiles& caller_keys() const { return caller_keys_; }
  // A caller token for `audience` signed with the stack's scheduler key (issuer "scheduler")
  // or dispatcher key ("dispatcher"); empty when it cannot be made.
  std::string CallerToken(absl::string_view issuer, absl::string_view audience) const;
  // A caller token for calls to the executor of `app` at `address` (audience "app@address").
  std::string ExecutorCallerToken(absl::string_view issuer, absl::string_view app,
                                  absl::string_view address) const;
  // The instance tag the registry lists for the executor of `app` at `address` (what a run
  // sent to it names in RunRequest.executor_instance); NOT_FOUND when it is not online.
  absl::StatusOr<std::string> ExecutorInstance(const std::string& app,
                                               const std::string& address) const;
  // The flags of each kind of process: credentials (token files and keys) and TLS.
  std::vector<std::string> RegistryFlags() const;
  std::vector<std::string> DispatcherFlags() const;
  std::vector<std::string> SchedulerFlags() const;
  // Keys and TLS of an executor; the token file is the caller's (see executor_token_file).
  std::vector<std::string> ExecutorFlags() const;
  // The shared executor token's file; empty when the stack has none.
  const std::string& executor_token_file() const { return executor_file_; }

  std::string scheduler(int i = 0) const { return schedulers_[i]->address(); }
  std::string registry(int i = 0) const { return registries_[i]->address(); }
  std::string dispatcher(int i = 0) const { return dispatchers_[i]->address(); }
  StackProcess& scheduler_process(int i) { return *schedulers_[i]; }
  StackProcess& registry_process(int i) { return *registries_[i]; }
  StackProcess& dispatcher_process(int i) { return *dispatchers_[i]; }
  // The first executor.
  std::string executor() const { return executor(0); }
  std::string executor_log_dir() const { return executor_log_dir(0); }
  int executor_count() const { return static_cast<int>(executors_.size()); }
  std::string executor(int i) const;
  std::string executor_log_dir(int i) const;
  Process& executor_process(int i) { return *executors_[i]->proc; }
  // Every handler execution recorded by executor i (its --executions_file), or by all.
  std::vector<Execution> Executions(int i) const;
  std::vector<Execution> Executions() const;
  ClientTls client_tls() const;
  std::shared_ptr<grpc::Channel> Channel(const std::string& target) const;

  // The last lines of every process log (for failure messages).
  std::string Logs() const;

 private:
  std::vector<std::string> TlsServerFlags() const;
  std::vector<std::string> TlsClientFlags() const;
  std::string MetricsFlag(StackProcess& p) const;
  absl::Status StartConsoleProcess(StackProcess& p);
  void PrepareReplicas(const std::string& service, const std::string& binary,
                       const ServiceOptions& service_options,
                       std::vector<std::unique_ptr<StackProcess>>& out);
  std::vector<std::string> ServiceArgs(const std::string& service) const;
  absl::Status StartExecutorProcess(const ExecutorSpec& spec, const std::string& token_file);
  std::string BinaryPath(const std::string& binary) const;

  const Options options_;
  bool prepared_ = false;
  std::string dir_, dsn_, admin_token_, admin_file_, executor_file_;
  CallerKeyFiles caller_keys_;
  std::vector<std::unique_ptr<StackProcess>> registries_, dispatchers_, schedulers_;
  std::vector<std::unique_ptr<StackProcess>> executors_, consoles_;
};

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_STACK_H_
