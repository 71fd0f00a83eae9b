#ifndef JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "jobwheel/v1/executor.pb.h"
#include "sdk/internal/earlier_run_logs.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/lane.h"
#include "sdk/internal/result_sink.h"
#include "sdk/internal/run_execution.h"
#include "sdk/internal/run_ledger.h"
#include "sdk/internal/run_log_store.h"
#include "sdk/internal/run_results.h"
#include "sdk/internal/run_state.h"
#include "sdk/internal/run_threads.h"
#include "sdk/internal/run_watchdog.h"
#include "sdk/internal/script_runner.h"

namespace jobwheel::sdk {

struct RunManagerOptions {
  std::string executor_address;  // Copied into every RunResult (see SetExecutorAddress).
  // The app this executor registered for and its instance tag (common/model/instance_tag.h):
  // a run naming another app or instance is REJECTED without being recorded. Empty: not
  // checked (tests of the manager alone).
  std::string app;
  std::string instance;
  bool allow_scripts = false;
  // A run thread exits after this long without runs.
  absl::Duration worker_idle_timeout = absl::Seconds(30);
  // Run threads are shared by all jobs: one is started when a job has a run to start and no
  // thread is idle, up to this many (more runs than that running at once wait their turn).
  size_t max_threads = 1024;
  // A cancelled run is reported when its handler returns or this long after the cancel.
  absl::Duration cancel_grace = absl::Seconds(5);
  // How often, at least, timeouts and cancel graces are checked against the clock while a
  // run has one.
  absl::Duration watchdog_interval = absl::Milliseconds(20);
  // Run ids remembered after they end or are refused, so a repeated Run call is not executed
  // twice (older ones are still recognised by their run log on disk).
  size_t recent_runs = 10000;
  // Run ids fenced by GetRuns remembered (refused for good), least recently used dropped.
  size_t fenced_runs = 100000;
};

// Accepts runs and executes them, applying each job's block strategy (Lanes: SERIAL_EXECUTION
// queues, DISCARD_LATER refuses while busy, COVER_EARLY cancels the running and queued runs
// and starts the new one on a fresh lane). Each job has a lane (its queue, at most one run
// running); lanes with a run to start are taken by a pool of run threads shared by all jobs
// (RunThreads), so the thread count follows the runs executing at once, not the number of
// jobs (an executor with 5,000 every-second jobs of a few milliseconds needs a handful of
// threads, not 5,000). Enforces timeouts and kills through each run's CancellationToken
// (RunWatchdog); script runs are child processes killed by process group. Every accepted run
// ends with exactly one RunResult handed to the ResultSink (RunResults).
//
// Cancellation is cooperative for C++ handlers: the run's status is decided when it is
// cancelled (KILLED, TIMED_OUT, DISCARDED "covered by run N", FAILED "executor shut down")
// and reported when the handler returns or `cancel_grace` later, whichever comes first; a
// handler result after that is dropped. The run thread stays busy until the handler
// returns, so later runs of that job wait for it (except under COVER_EARLY).
//
// A run id is executed at most once: a Run or RunBatch carrying an id that is queued, running,
// ended or was refused here is answered from what is known of it (RunLedger, a bounded
// memory), and so is an id whose run log exists on disk (it ran in an earlier process of this
// executor). GetRuns reports what is known of run ids and may fence unseen ones: refused for
// good (see RunLedger).
//
// This class coordinates those parts under one mutex (which guards the runs, the lanes and
// the watchdog's list). Every wait (idle threads, timeouts, shutdown grace) is on the injected
// Clock. Thread-safe. Owns its threads (Start/Shutdown). Run threads whose handlers ignore
// cancellation are detached at Shutdown; they hold only shared state and never touch the
// manager afterwards.
class RunManager {
 public:
  // `scripts` may be null when scripts are not allowed.
  RunManager(RunManagerOptions options, HandlerMap handlers, RunLogStore* logs,
             ScriptRunner* scripts, ResultSink* sink, Clock& clock, ExecutorMetrics& metrics);
  ~RunManager();
  RunManager(const RunManager&) = delete;
  RunManager& operator=(const RunManager&) = delete;

  void Start();

  // The address copied into every RunResult (known once the server is bound).
  void SetExecutorAddress(const std::string& address);

  struct SubmitOutcome {
    jobwheel::v1::RunDisposition disposition = jobwheel::v1::RUN_DISPOSITION_UNSPECIFIED;
    std::string message;
  };
  // INVALID_ARGUMENT (naming the field) for a malformed request; otherwise the disposition.
  absl::StatusOr<SubmitOutcome> Submit(const jobwheel::v1::RunRequest& request);
  // INVALID_ARGUMENT "<field>: <problem>" for a malformed request (Submit prefixes it with
  // "run <id>: " once the run id is valid; RunBatch names the batch element instead).
  static absl::Status Validate(const jobwheel::v1::RunRequest& request);

  struct KillOutcome {
    bool killed = false;
    std::string message;
  };
  KillOutcome Kill(int64_t run_id, absl::string_view reason);

  struct Load {
    int running = 0;
    int queued = 0;
  };
  Load JobLoad(int64_t job_id) const;

  struct Snapshot {
    std::vector<int64_t> running_job_ids;
    int running = 0;
    int queued = 0;
  };
  Snapshot GetSnapshot() const;

  // Whether the run is queued or running here (its log may still grow).
  bool IsActive(int64_t run_id) const;

  // What this executor knows of each run id (ids must be positive), in order: QUEUED,
  // RUNNING, ENDED (its status when known), REFUSED (DISCARDED or REJECTED, never ran),
  // FENCED, or NOT_SEEN. With `fence`, an id never seen here is fenced (FENCED): a Run of it
  // arriving later is REJECTED.
  std::vector<jobwheel::v1::RunPresenceState> Presence(const std::vector<int64_t>& run_ids,
                                                       bool fence);

  // Run threads alive (idle ones included, until worker_idle_timeout).
  size_t WorkerThreads() const;

  // New runs are REJECTED "shutting down" from now on.
  void StopAccepting();

  // Waits up to `grace` for queued and running runs to end, then cancels the rest (reported
  // FAILED "executor shut down"), waits up to `join_timeout` for worker threads and detaches
  // those still stuck in a handler. Idempotent.
  void Shutdown(absl::Duration grace, absl::Duration join_timeout);

 private:
  // The mutex outlives the manager: a detached run thread checks `alive` before touching
  // anything else.
  struct Lifeline {
    absl::Mutex mu;
    bool alive = true;
  };

  // A run thread's work: the lane's runs one after the other, as long as it has any.
  void RunLane(const std::shared_ptr<Lifeline>& life, const std::shared_ptr<Lane>& lane);
  // Starts the lane's next run: running, watched if it has a timeout. Returns its handler.
  HandlerFn StartRun(RunState& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Cancels a queued run (never started): off its queue, reported, its log closed (by the
  // caller, outside the lock: appended to *to_close). The notes (when not empty) are logged
  // before and after its "ended" line.
  void CancelQueued(const std::shared_ptr<RunState>& run, CancelReason reason,
                    const std::string& message, absl::Time now, absl::string_view note_before,
                    absl::string_view note_after, std::vector<jobwheel::v1::RunResult>* to_report,
                    std::vector<std::shared_ptr<RunLogFile>>* to_close)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The answer for a run id already known here (queued, running, ended, refused or fenced).
  std::optional<SubmitOutcome> KnownLocked(int64_t run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What is known here of a run id, without looking at the disk; NOT_SEEN when nothing.
  jobwheel::v1::RunPresenceState PresenceLocked(int64_t run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A run id not known in memory whose run log an earlier process left: remembered as ended.
  void NoteEarlierRunLocked(int64_t run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A refusal, remembered so that a repeated call gets the same answer.
  // Why `request` is not for this executor (another app or instance), if it is not.
  std::optional<std::string> NotForThisExecutor(const jobwheel::v1::RunRequest& request) const;
  SubmitOutcome Refuse(int64_t run_id, jobwheel::v1::RunDisposition disposition,
                       std::string message);
  // The run ended: forgotten by the table and the watchdog.
  void Forget(RunState& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateGauges() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void CloseLogs(const std::vector<std::shared_ptr<RunLogFile>>& logs);

  const RunManagerOptions options_;
  const HandlerMap handlers_;
  RunLogStore* const logs_;
  ScriptRunner* const scripts_;
  Clock& clock_;
  ExecutorMetrics& metrics_;

  const std::shared_ptr<Lifeline> life_;
  absl::Mutex& mu_;
  RunLedger ledger_;
  EarlierRunLogs earlier_;  // Looked up without holding mu_.
  LedgerSink ledger_sink_;  // Notes each result in ledger_, then hands it to the sink.
  RunResults results_;
  RunTable runs_ ABSL_GUARDED_BY(mu_);
  Lanes lanes_ ABSL_GUARDED_BY(mu_);
  RunWatchdog watchdog_;
  RunThreads threads_;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // Run threads between concluding a run and forgetting it (reporting outside the lock).
  int in_report_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_H_
