#ifndef JOBWHEEL_COMMON_TESTING_PROCESS_H_
#define JOBWHEEL_COMMON_TESTING_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace jobwheel::testing {

// A child process for multi-process tests. Its stdout/stderr go to `log_path` (or are
// inherited when empty). The destructor kills it (SIGKILL) if it still runs.
class Process {
 public:
  Process() = default;
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  absl::Status Start(const std::string& binary, const std::vector<std::string>& args,
                     const std::string& log_path = "",
                     const std::vector<std::string>& extra_env = {});
  pid_t pid() const { return pid_; }
  bool running();
  // Sends `sig` (SIGKILL, SIGTERM, SIGSTOP, SIGCONT...).
  void Signal(int sig);
  // Waits up to `timeout` for exit; returns the exit status or DEADLINE_EXCEEDED.
  absl::Status Wait(absl::Duration timeout, int* exit_code = nullptr);
  // SIGKILL and reap.
  void Kill();

 private:
  pid_t pid_ = -1;
  bool reaped_ = true;
};

// The path of a Bazel data dependency, e.g. "services/registry/registry".
std::string RunfilePath(const std::string& workspace_relative);

// A TCP port on 127.0.0.1 that was free a moment ago.
int PickFreePort();

// Polls `condition` every 10 ms until it is true or `timeout` passes; returns whether it held.
bool Eventually(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(10));

// Waits until the gRPC server at `target` answers a health check of `service` ("" is the
// whole server: its readiness; "liveness" where the server tells it apart) with SERVING.
absl::Status WaitForServing(const std::string& target, absl::Duration timeout,
                            const std::string& service = "");

// A scratch directory unique to this test process (under TEST_TMPDIR when set).
std::string TestTempDir(const std::string& name);

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_PROCESS_H_
