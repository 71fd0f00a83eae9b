#ifndef JOBWHEEL_SDK_INTERNAL_SCRIPT_RUNNER_H_
#define JOBWHEEL_SDK_INTERNAL_SCRIPT_RUNNER_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "jobwheel/cancellation.h"

namespace jobwheel::sdk {

struct ScriptRunnerOptions {
  std::string scripts_dir;  // <log_dir>/scripts
  std::string shell_binary = "/bin/sh";
  std::string python_binary = "python3";  // Looked up in PATH.
  absl::Duration kill_grace = absl::Seconds(2);  // SIGTERM → SIGKILL.
  absl::Duration poll_interval = absl::Milliseconds(20);
};

// How a script process ended.
struct ScriptOutcome {
  bool exited = false;  // Exited normally with exit_code; otherwise killed by term_signal.
  int exit_code = 0;
  int term_signal = 0;
};

// Runs script jobs as child processes, each in its own process group so a kill reaches
// everything the script started. Output (stdout and stderr) is passed line by line to a
// callback. Thread-safe: several scripts may run at once.
class ScriptRunner {
 public:
  enum class Language { kShell, kPython };

  explicit ScriptRunner(ScriptRunnerOptions options);

  // Writes the source to <scripts_dir>/<job_id>_v<version>.(sh|py) unless that file already
  // holds it; returns the path.
  absl::StatusOr<std::string> Materialize(int64_t job_id, int version, Language language,
                                          absl::string_view source);

  // Runs the script at `path` with `args` under the language's interpreter until it exits.
  // When `cancel` is cancelled, the process group gets SIGTERM, then SIGKILL after
  // kill_grace. When the script itself exits, whatever is left in its process group is
  // SIGKILLed. `on_start` (optional) receives the process group id.
  absl::StatusOr<ScriptOutcome> Run(Language language, const std::string& path,
                                    const std::vector<std::string>& args,
                                    const CancellationToken& cancel,
                                    const std::function<void(absl::string_view)>& output,
                                    const std::function<void(pid_t)>& on_start = nullptr);

 private:
  const ScriptRunnerOptions options_;
  absl::Mutex write_mu_;  // Serializes Materialize.
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_SCRIPT_RUNNER_H_
