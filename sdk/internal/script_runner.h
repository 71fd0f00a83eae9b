#ifndef JOBWHEEL_SDK_INTERNAL_SCRIPT_RUNNER_H_
#define JOBWHEEL_SDK_INTERNAL_SCRIPT_RUNNER_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/cancellation.h"
#include "sdk/internal/script_isolation.h"

namespace jobwheel::sdk {

struct ScriptRunnerOptions {
  std::string scripts_dir;  // <log_dir>/scripts
  // Each run's private work directory is <work_dir>/run-<run_id> (0700, removed when the
  // script ends); empty: <scripts_dir>/../work, i.e. <log_dir>/work.
  std::string work_dir;
  std::string shell_binary = "/bin/sh";
  std::string python_binary = "python3";         // Looked up in PATH.
  absl::Duration kill_grace = absl::Seconds(2);  // SIGTERM → SIGKILL.
  absl::Duration poll_interval = absl::Milliseconds(20);
  // How scripts are kept from the executor's credentials (script_isolation.h). An Executor
  // uses DefaultScriptIsolation(); kNone is for tests of the runner only.
  ScriptIsolation isolation = ScriptIsolation::kNone;
  // kSwitchUser: the script user (never uid 0 or gid 0).
  uid_t script_uid = 0;
  gid_t script_gid = 0;
  // Files and directories scripts must not see (besides the whole of scripts_dir and
  // work_dir but their own work directory): under isolation, an empty read-only tmpfs is
  // mounted over each directory and /dev/null over each file in the script's mount namespace.
  // The executor's log_dir and spool_dir and the directories of its token and key files.
  std::vector<std::string> hidden_paths;
  // Also pass a context's legacy_args as the script's arguments ($1 $2 $3, sys.argv[1:]).
  // Off by default: a process's arguments are readable by every local user (ps,
  // /proc/<pid>/cmdline), its environment only by its own uid and root.
  bool params_in_argv = false;
};

// Who a script runs for: its run id (names its work directory) and its JOBWHEEL_* variables
// (the param among them). A default context (run_id 0) runs without a work directory, in the
// executor's directory.
struct ScriptContext {
  int64_t run_id = 0;
  std::vector<std::pair<std::string, std::string>> job_vars;
  // The script's arguments under options.params_in_argv only (the param, shard index and
  // shard total); otherwise the script gets none.
  std::vector<std::string> legacy_args;
};

// How a script process ended.
struct ScriptOutcome {
  bool exited = false;  // Exited normally with exit_code; otherwise killed by term_signal.
  int exit_code = 0;
  int term_signal = 0;
};

// Runs script jobs as child processes, each in its own process group so a kill reaches
// everything the script started. Output (stdout and stderr) is passed line by line to a
// callback. A script gets a scrubbed environment (ScriptEnvironment: PATH, LANG, LC_ALL,
// TZ, HOME/TMPDIR/PWD = its work directory, its JOBWHEEL_* variables; nothing else of the
// executor's), starts in its own 0700 work directory (owned by the script user) with a copy
// of its source, and inherits no file descriptor but stdin (/dev/null), stdout and stderr.
// Sources are written 0600 in a private directory. Under isolation (options.isolation) the
// child enters its own mount namespace with hidden_paths masked and its work directory bound
// back, and runs as the script user (or in a user namespace); when any of that fails the
// script is not run: Run fails with FAILED_PRECONDITION naming the step, and the message is
// also written to `output`. The work directory is removed afterwards without following any
// link the script left. Thread-safe: several scripts may run at once.
class ScriptRunner {
 public:
  enum class Language { kShell, kPython };

  // Under kUserNamespace this process is made non-dumpable (prctl PR_SET_DUMPABLE 0), so a
  // script keeping its uid cannot read /proc/<executor pid>/{environ,mem,root,fd}.
  explicit ScriptRunner(ScriptRunnerOptions options, Clock& clock = RealClock::Get());

  // Writes the source to <scripts_dir>/<job_id>_v<version>.(sh|py) unless that file already
  // holds it; returns the path.
  absl::StatusOr<std::string> Materialize(int64_t job_id, int version, Language language,
                                          absl::string_view source);

  // Runs the script at `path` under the language's interpreter until it exits; its only
  // arguments are the context's legacy_args, and those only under options.params_in_argv.
  // When `cancel` is cancelled, the process group gets SIGTERM, then SIGKILL after
  // kill_grace. When the script itself exits, whatever is left in its process group is
  // SIGKILLed. `on_start` (optional) receives the process group id. Under isolation a
  // context with a run id (its work directory) is required.
  absl::StatusOr<ScriptOutcome> Run(Language language, const std::string& path,
                                    const CancellationToken& cancel,
                                    const std::function<void(absl::string_view)>& output,
                                    const std::function<void(pid_t)>& on_start = nullptr,
                                    const ScriptContext& context = {});

 private:
  // Makes <work_dir>/run-<run_id> (0700, owned by the script user) holding a copy of the
  // source; returns the copy's name.
  absl::StatusOr<std::string> PrepareWorkDir(const std::string& work_dir,
                                             const std::string& source_path);
  // Passes the started child's output on line by line until it exits (SIGTERM, then SIGKILL
  // after kill_grace, once `cancel` is cancelled), kills what is left of its process group,
  // drains the pipe (for at most a second) and returns the child's wait status.
  int Supervise(pid_t pid, int read_fd, const CancellationToken& cancel,
                const std::function<void(absl::string_view)>& output);

  const ScriptRunnerOptions options_;
  Clock& clock_;
  absl::Mutex write_mu_;  // Serializes Materialize.
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_SCRIPT_RUNNER_H_
