#ifndef JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/cancellation.h"
#include "jobwheel/job_context.h"
#include "jobwheel/result.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "jobwheel/v1/executor.pb.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/result_sink.h"
#include "sdk/internal/run_log.h"
#include "sdk/internal/script_runner.h"

namespace jobwheel::sdk {

using HandlerFn = std::function<Result(JobContext&)>;
using HandlerMap = absl::flat_hash_map<std::string, HandlerFn>;

struct RunManagerOptions {
  std::string executor_address;  // Copied into every RunResult (see SetExecutorAddress).
  bool allow_scripts = false;
  // A run thread exits after this long without runs.
  absl::Duration worker_idle_timeout = absl::Seconds(30);
  // Run threads are shared by all jobs: one is started when a job has a run to start and no
  // thread is idle, up to this many (more runs than that running at once wait their turn).
  size_t max_threads = 1024;
  // A cancelled run is reported when its handler returns or this long after the cancel.
  absl::Duration cancel_grace = absl::Seconds(5);
  // How often timeouts and cancel graces are checked against the clock.
  absl::Duration watchdog_interval = absl::Milliseconds(20);
  // Run ids remembered after they end, so a repeated Run call is not executed twice.
  size_t recent_runs = 10000;
};

// Accepts runs and executes them, applying each job's block strategy (SERIAL_EXECUTION
// queues, DISCARD_LATER refuses while busy, COVER_EARLY cancels the running and queued runs
// and starts the new one on a fresh lane). Each job has a lane (its queue, at most one run
// running); lanes with a run to start are taken by a pool of run threads shared by all jobs,
// so the thread count follows the runs executing at once, not the number of jobs (an
// executor with 5,000 every-second jobs of a few milliseconds needs a handful of threads,
// not 5,000). Enforces timeouts and kills through each run's CancellationToken; script runs
// are child processes killed by process group. Every accepted run ends with exactly one
// RunResult handed to the ResultSink.
//
// Cancellation is cooperative for C++ handlers: the run's status is decided when it is
// cancelled (KILLED, TIMED_OUT, DISCARDED "covered by run N", FAILED "executor shut down")
// and reported when the handler returns or `cancel_grace` later, whichever comes first; a
// handler result after that is dropped. The run thread stays busy until the handler
// returns, so later runs of that job wait for it (except under COVER_EARLY).
//
// Thread-safe. Owns its threads (Start/Shutdown). Run threads whose handlers ignore
// cancellation are detached at Shutdown; they hold only shared state and never touch the
// manager afterwards.
class RunManager {
 public:
  // `scripts` may be null when scripts are not allowed.
  RunManager(RunManagerOptions options, HandlerMap handlers, RunLogStore* logs,
             ScriptRunner* scripts, ResultSink* sink, const Clock& clock, ExecutorMetrics& metrics);
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

  // Run threads alive (idle ones included, until worker_idle_timeout).
  size_t WorkerThreads() const;

  // New runs are REJECTED "shutting down" from now on.
  void StopAccepting();

  // Waits up to `grace` for queued and running runs to end, then cancels the rest (reported
  // FAILED "executor shut down"), waits up to `join_timeout` for worker threads and detaches
  // those still stuck in a handler. Idempotent.
  void Shutdown(absl::Duration grace, absl::Duration join_timeout);

 private:
  enum class Phase { kQueued, kRunning, kDone };
  struct Worker;
  struct RunState {
    jobwheel::v1::RunRequest request;
    std::shared_ptr<CancellationToken> token = std::make_shared<CancellationToken>();
    // Null when the log could not be made. Closed (written) when the run ends.
    std::shared_ptr<RunLogFile> log;
    Phase phase = Phase::kQueued;
    bool reported = false;
    Worker* worker = nullptr;  // Whose queue or current slot holds the run.
    absl::Time accepted;
    absl::Time started = absl::InfinitePast();
    absl::Time deadline = absl::InfiniteFuture();
    absl::Time cancelled_at = absl::InfiniteFuture();
    void Log(absl::string_view text) const {
      if (log != nullptr) log->Append(text);
    }
  };
  // A job's lane: its runs in order, at most one of them running.
  struct Worker {
    int64_t job_id = 0;
    std::deque<std::shared_ptr<RunState>> queue;
    std::shared_ptr<RunState> current;
    bool ready = false;  // In ready_: has a run to start and no thread.
    bool owned = false;  // A run thread is working through it.
  };
  // A run thread of the pool.
  struct Thread {
    std::thread thread;
    bool exited = false;
    std::shared_ptr<Worker> lane;  // The lane it works on now, if any.
  };
  // The mutex outlives the manager: a detached worker checks `alive` before touching it.
  struct Lifeline {
    absl::Mutex mu;
    bool alive = true;
  };

  void ThreadLoop(std::shared_ptr<Lifeline> life, std::shared_ptr<Thread> self);
  // Puts a lane with a run to start on ready_; wakes an idle thread or starts one.
  void Schedule(const std::shared_ptr<Worker>& lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gets a thread to the ready lanes: wakes an idle one, or starts one if none is idle.
  void WakeOrStartThread() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WatchdogLoop();
  Result Execute(RunState& run, const HandlerFn& handler);
  Result ExecuteScript(RunState& run);
  std::shared_ptr<Worker> NewWorker(int64_t job_id);
  // Marks the run done and returns its result unless it was already reported.
  // Sets *ended_line to the run's "ended" log line when the caller is to write it (outside
  // the lock); rarer outcomes are logged here.
  absl::optional<jobwheel::v1::RunResult> Conclude(RunState& run, const Result& result,
                                                   std::string* ended_line);
  // The result of a cancelled run, from the token's reason. Marks it reported.
  jobwheel::v1::RunResult CancelledResult(RunState& run);
  jobwheel::v1::RunResult MakeResult(const RunState& run, jobwheel::v1::RunStatus status, int code,
                                     const std::string& message) const;
  void Forget(RunState& run);  // Removes a run from runs_ and remembers its id.
  // Moves a run to `phase`, keeping the queued/running counts.
  void SetPhase(RunState& run, Phase phase) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Has the watchdog look at a running run (it has a deadline, or was cancelled).
  void Watch(const std::shared_ptr<RunState>& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Report(const std::vector<jobwheel::v1::RunResult>& results);
  void UpdateGauges();

  const RunManagerOptions options_;
  const HandlerMap handlers_;
  RunLogStore* const logs_;
  ScriptRunner* const scripts_;
  ResultSink* const sink_;
  const Clock& clock_;
  ExecutorMetrics& metrics_;

  std::shared_ptr<Lifeline> life_;
  absl::Mutex& mu_;
  absl::CondVar watchdog_cv_;
  absl::CondVar changed_cv_;  // A run ended, a thread exited or a report finished.
  absl::CondVar pool_cv_;     // A lane became ready (idle run threads wait here).
  // Lanes of jobs with queued or running runs.
  absl::flat_hash_map<int64_t, std::shared_ptr<Worker>> workers_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Worker>> ready_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Thread>> threads_ ABSL_GUARDED_BY(mu_);
  size_t live_threads_ ABSL_GUARDED_BY(mu_) = 0;
  size_t idle_threads_ ABSL_GUARDED_BY(mu_) = 0;
  // Threads sent to the ready lanes (an idle one signalled, or a new one) that have not
  // looked at them yet: 0 or 1. See WakeOrStartThread.
  size_t wakeups_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int64_t, std::shared_ptr<RunState>> runs_ ABSL_GUARDED_BY(mu_);
  // Of runs_: how many are queued and running (for the gauges, without a scan per change).
  int queued_count_ ABSL_GUARDED_BY(mu_) = 0;
  int running_count_ ABSL_GUARDED_BY(mu_) = 0;
  // The runs the watchdog checks: running with a deadline, or cancelled. The others never
  // need it, so a busy executor does not scan thousands of runs every tick.
  absl::flat_hash_map<int64_t, std::shared_ptr<RunState>> watched_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> recent_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> recent_order_ ABSL_GUARDED_BY(mu_);
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool watchdog_stop_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::string executor_address_ ABSL_GUARDED_BY(mu_);
  int in_report_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread watchdog_;
};

// "succeeded", "failed", "timed_out", "killed", "discarded", ...
absl::string_view RunStatusLabel(jobwheel::v1::RunStatus status);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_MANAGER_H_
