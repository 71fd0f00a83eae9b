#ifndef JOBWHEEL_TESTS_SECURITY_STACK_H_
#define JOBWHEEL_TESTS_SECURITY_STACK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "common/testing/process.h"
#include "grpcpp/grpcpp.h"

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

  explicit Stack(Options options) : options_(std::move(options)) {}
  ~Stack();

  // Creates a database, writes the bootstrap admin and cluster tokens, starts registry,
  // dispatcher and scheduler (no bootstrap executor token anywhere: executors need per-app
  // API tokens) and waits until they serve.
  absl::Status StartServices();
  // Starts the demo executor for `app` presenting `executor_token`.
  absl::Status StartExecutor(const std::string& app, const std::string& executor_token,
                             bool allow_scripts = false);
  void Stop();

  const std::string& dir() const { return dir_; }
  const std::string& dsn() const { return dsn_; }
  const std::string& admin_token() const { return admin_token_; }
  const std::string& cluster_token() const { return cluster_token_; }
  std::string scheduler() const { return Addr(scheduler_port_); }
  std::string registry() const { return Addr(registry_port_); }
  std::string dispatcher() const { return Addr(dispatcher_port_); }
  std::string executor() const { return Addr(executor_port_); }
  std::string executor_log_dir() const { return dir_ + "/exec-logs"; }
  ClientTls client_tls() const;
  std::shared_ptr<grpc::Channel> Channel(const std::string& target) const;

  // The last lines of every process log (for failure messages).
  std::string Logs() const;

 private:
  std::vector<std::string> TlsServerFlags() const;
  std::vector<std::string> TlsClientFlags() const;
  absl::Status WaitServing(const std::string& target) const;

  const Options options_;
  std::string dir_, dsn_, admin_token_, cluster_token_;
  int registry_port_ = 0, dispatcher_port_ = 0, scheduler_port_ = 0, executor_port_ = 0;
  testing::Process registry_, dispatcher_, scheduler_, executor_;
};

}  // namespace jobwheel::security_testing

#endif  // JOBWHEEL_TESTS_SECURITY_STACK_H_
