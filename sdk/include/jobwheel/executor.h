#ifndef JOBWHEEL_SDK_EXECUTOR_H_
#define JOBWHEEL_SDK_EXECUTOR_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jobwheel/cancellation.h"
#include "jobwheel/job_context.h"
#include "jobwheel/options.h"
#include "jobwheel/result.h"

namespace jobwheel {

namespace sdk {
class ExecutorCore;
}  // namespace sdk

// A job handler: runs one run of a job and says how it went. Runs on one of the executor's
// run threads (a pool shared by all jobs, as many as runs execute at once), so different
// jobs run concurrently while the runs of one job follow its block strategy. Exceptions are
// caught and fail the run.
using Handler = std::function<Result(JobContext& ctx)>;

// The executor embedded in a user's service: serves jobwheel.v1.ExecutorService, keeps the
// registry heartbeat, runs handlers and reports their results.
//
//   jobwheel::ExecutorOptions options;
//   options.app = "billing";
//   jobwheel::Executor exec(options);
//   exec.Register("echo", [](jobwheel::JobContext& ctx) {
//     ctx.Log("hello");
//     return jobwheel::Result::Ok();
//   });
//   exec.Run();  // Blocks until Shutdown() or SIGTERM/SIGINT.
//
// Register handlers before Start(). Start/Run/Shutdown are thread-safe; Shutdown is
// idempotent and joining, and the destructor calls it.
class Executor {
 public:
  static constexpr absl::string_view kSdkVersion = "0.1.0";

  explicit Executor(ExecutorOptions options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Adds a handler under `name`. INVALID_ARGUMENT for an empty or duplicate name,
  // FAILED_PRECONDITION after Start(). A failed registration also fails Start().
  absl::Status Register(const std::string& name, Handler handler);

  // Starts serving, the heartbeat and the result reporter; returns at once.
  absl::Status Start();

  // Start() (unless started), then blocks until Shutdown() is called, or until SIGTERM or
  // SIGINT when options.handle_signals is set; returns after the shutdown completed.
  absl::Status Run();

  // Graceful shutdown: refuse new runs, say goodbye to the registry, give in-flight runs
  // options.grace_period, fail the rest, flush results, stop the server.
  void Shutdown();

  // The port ExecutorService is bound to (after Start()), e.g. for listen port 0.
  int port() const;
  // The address registered with the registry (after Start()).
  std::string advertise_address() const;
  // This process's public instance tag (after Start()): every run sent here must name it in
  // RunRequest.executor_instance, and its app in RunRequest.app.
  std::string instance() const;

 private:
  std::unique_ptr<sdk::ExecutorCore> core_;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_SDK_EXECUTOR_H_
