#ifndef JOBWHEEL_TESTS_SECURITY_STACK_H_
#define JOBWHEEL_TESTS_SECURITY_STACK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/caller_keys.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/token_admin.pb.h"

// The real binaries (registry, dispatcher, scheduler, demo executor) on the real test
// PostgreSQL, for the security tests. Token files are written into the stack's directory.
namespace jobwheel::security_testing {

std::string Addr(int port);

// Writes `content` to `path` (mode 0600) and returns the path.
std::string WriteFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);

// Waits until `target` answers a health check SERVING over `tls`.
absl::Status WaitForServingTls(const std::string& target, const ClientTls& tls,
                               absl::Duration timeout);

// Adds `authorization: Bearer <token>` (when non-empty) and a 10 s deadline.
std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token);

class Stack {
 public:
  struct Options {
    // TLS material (all servers share one certificate; clients present `tls_cert` too).
    std::string tls_ca;
    std::string tls_cert;
    std::string tls_key;
    bool mutual_tls = false;  // Servers require client certificates signed by tls_ca.
  };

  // One demo executor (see AddExecutor).
  struct ExecutorSpec {
    std::string app = "demo";
    // Presented to the registry and dispatcher; empty: an executor token for `app` is created
    // through TokenAdminService/CreateToken.
    std::string token;
    bool allow_scripts = false;
    std::vector<std::string> extra_flags;
  };

  explicit Stack(Options options) : options_(std::move(options)) {}
  ~Stack();

  // Creates a database, writes the bootstrap admin token and the scheduler's and dispatcher's
  // key pairs (executors get only the public keys), starts registry,
  // dispatcher and scheduler (no bootstrap executor token anywhere: executors need per-app
  // API tokens) and waits until they serve.
  absl::Status StartServices();
  // Starts the demo executor for `app` presenting `executor_token`.
  absl::Status StartExecutor(const std::string& app, const std::string& executor_token,
                             bool allow_scripts = false);
  // Starts one more demo executor (its own port, log, spool and executions file) and waits
  // until it serves and its app lists it online in the registry. Returns its index: 0 for the
  // first executor of the stack (also the one StartExecutor starts), 1 for the next...
  absl::StatusOr<int> AddExecutor(const ExecutorSpec& spec);
  // Creates an API token through TokenAdminService as the bootstrap admin; returns the secret.
  absl::StatusOr<std::string> CreateToken(const std::string& name, jobwheel::v1::Role role,
                                          const std::vector<std::string>& apps);
  // Waits until the registry lists `address` online for `app` (AppAdminService/ListApps).
  absl::Status WaitExecutorOnline(const std::string& app, const std::string& address,
                                  absl::Duration timeout) const;
  void Stop();

  const std::string& dir() const { return dir_; }
  const std::string& dsn() const { return dsn_; }
  const std::string& admin_token() const { return admin_token_; }
  const testing::CallerKeyFiles& caller_keys() const { return caller_keys_; }
  // A caller token for `audience` signed with the stack's scheduler key (issuer "scheduler")
  // or dispatcher key ("dispatcher"); empty when it cannot be made.
  std::string CallerToken(absl::string_view issuer, absl::string_view audience) const;
  std::string scheduler() const { return Addr(scheduler_port_); }
  std::string registry() const { return Addr(registry_port_); }
  std::string dispatcher() const { return Addr(dispatcher_port_); }
  // The first executor.
  std::string executor() const { return executor(0); }
  std::string executor_log_dir() const { return executor_log_dir(0); }
  int executor_count() const { return static_cast<int>(executors_.size()); }
  std::string executor(int i) const;
  std::string executor_log_dir(int i) const;
  testing::Process& executor_process(int i) { return executors_[i]->process; }
  // Every handler execution recorded by executor i (its --executions_file), or by all.
  std::vector<testing::Execution> Executions(int i) const;
  std::vector<testing::Execution> Executions() const;
  ClientTls client_tls() const;
  std::shared_ptr<grpc::Channel> Channel(const std::string& target) const;

  // The last lines of every process log (for failure messages).
  std::string Logs() const;

 private:
  std::vector<std::string> TlsServerFlags() const;
  std::vector<std::string> TlsClientFlags() const;
  absl::Status WaitServing(const std::string& target) const;
  absl::Status StartExecutorProcess(int index, const ExecutorSpec& spec,
                                    const std::string& token_file);

  const Options options_;
  std::string dir_, dsn_, admin_token_;
  testing::CallerKeyFiles caller_keys_;
  struct ExecutorProcess {
    int port = 0;
    std::string name;  // "executor", "executor-1", ...: its log is <dir>/<name>.log.
    testing::Process process;
  };
  int registry_port_ = 0, dispatcher_port_ = 0, scheduler_port_ = 0;
  testing::Process registry_, dispatcher_, scheduler_;
  std::vector<std::unique_ptr<ExecutorProcess>> executors_;
};

}  // namespace jobwheel::security_testing

#endif  // JOBWHEEL_TESTS_SECURITY_STACK_H_
