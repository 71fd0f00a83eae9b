#include "sdk/internal/run_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "sdk/internal/run_request.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {

using jobwheel::v1::RunRequest;
using jobwheel::v1::RunResult;

RunManager::RunManager(RunManagerOptions options, HandlerMap handlers, RunLogStore* logs,
                       ScriptRunner* scripts, ResultSink* sink, Clock& clock,
                       ExecutorMetrics& metrics)
    : options_(std::move(options)),
      handlers_(std::move(handlers)),
      logs_(logs),
      scripts_(scripts),
      clock_(clock),
      metrics_(metrics),
      life_(std::make_shared<Lifeline>()),
      mu_(life_->mu),
      ledger_(options_.recent_runs, options_.fenced_runs),
      earlier_(logs),
      ledger_sink_(&ledger_, sink),
      results_(&ledger_sink_, clock, metrics, options_.executor_address),
      watchdog_(mu_, clock, results_, options_.cancel_grace, options_.watchdog_interval),
      threads_(clock, RunThreadsOptions{options_.worker_idle_timeout, options_.max_threads},
               [this, life = life_](std::shared_ptr<Lane> lane) { RunLane(life, lane); }) {}

RunManager::~RunManager() { Shutdown(absl::ZeroDuration(), absl::Seconds(1)); }

void RunManager::SetExecutorAddress(const std::string& address) {
  results_.SetExecutorAddress(address);
}

void RunManager::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_ || shut_down_) return;
    started_ = true;
  }
  watchdog_.Start();
}

absl::Status RunManager::Validate(const RunRequest& request) { return ValidateRunRequest(request); }

absl::StatusOr<RunManager::SubmitOutcome> RunManager::Submit(const RunRequest& request) {
  absl::Status valid = Validate(request);
  if (!valid.ok()) {
    if (request.run_id() <= 0) return valid;
    return absl::InvalidArgumentError(
        absl::StrCat("run ", request.run_id(), ": ", valid.message()));
  }
  const int64_t run_id = request.run_id();
  const int64_t job_id = request.job_id();
  // Before the ledger: a run for another executor says nothing about the runs of this one, so
  // it is neither recorded nor able to fence or shadow one of ours.
  if (std::optional<std::string> foreign = NotForThisExecutor(request)) {
    spdlog::warn("run {}: refused: {}", run_id, *foreign);
    return SubmitOutcome{jobwheel::v1::RUN_DISPOSITION_REJECTED, *std::move(foreign)};
  }
  {
    absl::MutexLock lock(&mu_);
    if (std::optional<SubmitOutcome> known = KnownLocked(run_id)) return *known;
  }
  // Not known in memory: a log on disk means it ran here before (an earlier process).
  if (earlier_.Logged(run_id, ledger_.largest_forgotten())) {
    absl::MutexLock lock(&mu_);
    // Accepted meanwhile by a concurrent call: answered from memory.
    if (std::optional<SubmitOutcome> known = KnownLocked(run_id)) return *known;
    NoteEarlierRunLocked(run_id);
    return SubmitOutcome{
        jobwheel::v1::RUN_DISPOSITION_STARTED,
        absl::StrCat("run ", run_id, " already ran here (its run log exists); not run again")};
  }
  if (IsScript(request.glue_type())) {
    if (!options_.allow_scripts || scripts_ == nullptr) {
      return Refuse(run_id, jobwheel::v1::RUN_DISPOSITION_REJECTED,
                    "scripts are disabled on this executor");
    }
  } else if (!handlers_.contains(request.handler())) {
    std::vector<std::string> names;
    for (const auto& [name, fn] : handlers_) names.push_back(name);
    std::sort(names.begin(), names.end());
    return Refuse(run_id, jobwheel::v1::RUN_DISPOSITION_REJECTED,
                  absl::StrCat("handler \"", request.handler(),
                               "\" is not registered on this executor (has: ",
                               absl::StrJoin(names, ", "), ")"));
  }

  // The run's log is made before taking the lock (no I/O: its file is created at its first
  // write). A run refused below gets its new log discarded again, so it leaves no file.
  bool created_log = false;
  auto log = logs_->Create(run_id, &created_log);
  auto refuse = [&](jobwheel::v1::RunDisposition disposition, std::string message) {
    if (created_log) logs_->Remove(run_id);
    return Refuse(run_id, disposition, std::move(message));
  };

  std::vector<RunResult> to_report;
  std::vector<std::shared_ptr<RunLogFile>> to_close;  // Written outside the lock.
  SubmitOutcome outcome;
  {
    absl::ReleasableMutexLock lock(&mu_);
    if (!accepting_) {
      lock.Release();
      return refuse(jobwheel::v1::RUN_DISPOSITION_REJECTED, "shutting down");
    }
    // Checked again under the lock that admits the run: a concurrent call of the same id, or a
    // fence, may have come first.
    if (std::optional<SubmitOutcome> known = KnownLocked(run_id)) return *known;
    Admission admission = lanes_.Admit(job_id, request.block_strategy());
    if (admission.kind == Admission::Kind::kDiscard) {
      lock.Release();
      return refuse(jobwheel::v1::RUN_DISPOSITION_DISCARDED,
                    absl::StrCat("block strategy DISCARD_LATER: job ", job_id, " is busy with run ",
                                 admission.blocker));
    }
    const absl::Time now = clock_.Now();
    std::string covered;
    if (!admission.covered_queued.empty() || admission.covered_running != nullptr) {
      const std::string message = absl::StrCat("covered by run ", run_id);
      std::vector<int64_t> ids;
      for (const auto& queued : admission.covered_queued) {
        CancelQueued(queued, CancelReason::kCovered, message, now, /*note_before=*/"",
                     absl::StrCat("run ", queued->run_id(), " ", message,
                                  " (COVER_EARLY) before it started"),
                     &to_report, &to_close);
        ids.push_back(queued->run_id());
      }
      if (const std::shared_ptr<RunState>& cur = admission.covered_running) {
        if (cur->token->Cancel(CancelReason::kCovered, message)) cur->cancelled_at = now;
        watchdog_.Watch(cur);
        cur->Log(absl::StrCat("run ", cur->run_id(), " cancelled: ", message, " (COVER_EARLY)"));
        ids.insert(ids.begin(), cur->run_id());
      }
      covered = absl::StrCat("; covered run(s) ", absl::StrJoin(ids, ", "));
    }

    auto run = std::make_shared<RunState>();
    run->request = request;
    run->accepted = now;
    if (log.ok()) {
      run->log = *log;
    } else {
      spdlog::error("run {}: cannot create its log: {}", run_id, log.status().ToString());
    }
    Lane& lane = *admission.lane;
    run->lane = &lane;
    lane.queue.push_back(run);
    runs_.Add(run);
    if (!lane.owned && !lane.ready) {
      lane.ready = true;
      threads_.Schedule(admission.lane);
    }
    const bool queued = admission.kind == Admission::Kind::kQueue;
    outcome.disposition =
        queued ? jobwheel::v1::RUN_DISPOSITION_QUEUED : jobwheel::v1::RUN_DISPOSITION_STARTED;
    outcome.message =
        queued ? absl::StrCat("queued behind run ", admission.blocker, " of job ", job_id)
               : absl::StrCat("started", covered);
    run->Log(AcceptedLine(request, outcome.message));
    UpdateGauges();
  }
  CloseLogs(to_close);
  results_.Report(to_report);
  return outcome;
}

std::optional<RunManager::SubmitOutcome> RunManager::KnownLocked(int64_t run_id) {
  if (std::shared_ptr<RunState> known = runs_.Find(run_id)) {
    return SubmitOutcome{known->phase == RunPhase::kQueued ? jobwheel::v1::RUN_DISPOSITION_QUEUED
                                                           : jobwheel::v1::RUN_DISPOSITION_STARTED,
                         absl::StrCat("run ", run_id, " already accepted")};
  }
  std::optional<RunLedger::Entry> entry = ledger_.Find(run_id);
  if (entry.has_value() && entry->kind == RunLedger::Kind::kFenced) {
    return SubmitOutcome{jobwheel::v1::RUN_DISPOSITION_REJECTED,
                         absl::StrCat("run ", run_id, " was fenced (GetRuns): never run here")};
  }
  if (entry.has_value() && entry->kind == RunLedger::Kind::kRefused) {
    return SubmitOutcome{entry->disposition,
                         absl::StrCat("run ", run_id, " already refused here: ", entry->message)};
  }
  if (entry.has_value()) {
    return SubmitOutcome{jobwheel::v1::RUN_DISPOSITION_STARTED,
                         absl::StrCat("run ", run_id, " already ran here; its result is reported")};
  }
  return std::nullopt;
}

std::optional<std::string> RunManager::NotForThisExecutor(const RunRequest& request) const {
  if (!options_.app.empty() && request.app() != options_.app) {
    return absl::StrCat("run is for app \"", request.app(), "\"; this executor serves app \"",
                        options_.app, "\"");
  }
  if (!options_.instance.empty() && request.executor_instance() != options_.instance) {
    return absl::StrCat("run is for executor instance \"", request.executor_instance(),
                        "\"; this is instance ", options_.instance,
                        " (a run meant for another process at this address)");
  }
  return std::nullopt;
}

RunManager::SubmitOutcome RunManager::Refuse(int64_t run_id,
                                             jobwheel::v1::RunDisposition disposition,
                                             std::string message) {
  ledger_.Refused(run_id, disposition, message);
  return SubmitOutcome{disposition, std::move(message)};
}

void RunManager::NoteEarlierRunLocked(int64_t run_id) {
  ledger_.Ended(run_id, jobwheel::v1::RUN_STATUS_UNSPECIFIED,
                "ran here before (its run log exists)");
}

jobwheel::v1::RunPresenceState RunManager::PresenceLocked(int64_t run_id) {
  jobwheel::v1::RunPresenceState state;
  state.set_run_id(run_id);
  std::optional<RunLedger::Entry> entry = ledger_.Find(run_id);
  std::shared_ptr<RunState> run = runs_.Find(run_id);
  if (run != nullptr && !run->reported) {
    state.set_presence(run->phase == RunPhase::kQueued ? jobwheel::v1::RUN_PRESENCE_QUEUED
                                                       : jobwheel::v1::RUN_PRESENCE_RUNNING);
    return state;
  }
  if (entry.has_value()) {
    switch (entry->kind) {
      case RunLedger::Kind::kFenced:
        state.set_presence(jobwheel::v1::RUN_PRESENCE_FENCED);
        break;
      case RunLedger::Kind::kRefused:
        state.set_presence(jobwheel::v1::RUN_PRESENCE_REFUSED);
        break;
      case RunLedger::Kind::kEnded:
        state.set_presence(jobwheel::v1::RUN_PRESENCE_ENDED);
        break;
    }
    state.set_status(entry->status);
    state.set_message(entry->message);
    return state;
  }
  // Reported (its result being handed over).
  if (run != nullptr) {
    state.set_presence(jobwheel::v1::RUN_PRESENCE_ENDED);
    return state;
  }
  state.set_presence(jobwheel::v1::RUN_PRESENCE_NOT_SEEN);
  return state;
}

std::vector<jobwheel::v1::RunPresenceState> RunManager::Presence(
    const std::vector<int64_t>& run_ids, bool fence) {
  std::vector<jobwheel::v1::RunPresenceState> states;
  states.reserve(run_ids.size());
  std::vector<size_t> unseen;
  {
    absl::MutexLock lock(&mu_);
    for (int64_t id : run_ids) {
      states.push_back(PresenceLocked(id));
      if (states.back().presence() == jobwheel::v1::RUN_PRESENCE_NOT_SEEN) {
        unseen.push_back(states.size() - 1);
      }
    }
  }
  if (unseen.empty()) return states;
  // Unknown in memory: a log on disk means it ran here before (an earlier process).
  std::vector<bool> logged(unseen.size());
  for (size_t i = 0; i < unseen.size(); ++i)
    logged[i] = earlier_.Logged(run_ids[unseen[i]], ledger_.largest_forgotten());
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < unseen.size(); ++i) {
    const int64_t id = run_ids[unseen[i]];
    jobwheel::v1::RunPresenceState& state = states[unseen[i]];
    // Looked at again under the lock that fences: a Run of it may have come meanwhile.
    state = PresenceLocked(id);
    if (state.presence() != jobwheel::v1::RUN_PRESENCE_NOT_SEEN) continue;
    if (logged[i]) {
      NoteEarlierRunLocked(id);
      state = PresenceLocked(id);
    } else if (fence) {
      ledger_.Fence(id);
      state.set_presence(jobwheel::v1::RUN_PRESENCE_FENCED);
    }
  }
  return states;
}

void RunManager::CancelQueued(const std::shared_ptr<RunState>& run, CancelReason reason,
                              const std::string& message, absl::Time now,
                              absl::string_view note_before, absl::string_view note_after,
                              std::vector<RunResult>* to_report,
                              std::vector<std::shared_ptr<RunLogFile>>* to_close) {
  if (run->lane != nullptr) run->lane->Unqueue(run);
  if (run->token->Cancel(reason, message)) run->cancelled_at = now;
  if (!note_before.empty()) run->Log(note_before);
  to_report->push_back(results_.Cancelled(*run));
  if (!note_after.empty()) run->Log(note_after);
  to_close->push_back(run->log);
  Forget(*run);
}

HandlerFn RunManager::StartRun(RunState& run) {
  runs_.SetPhase(run, RunPhase::kRunning);
  run.started = clock_.Now();
  const RunRequest& req = run.request;
  if (req.has_timeout() && FromProto(req.timeout()) > absl::ZeroDuration()) {
    run.deadline = run.started + FromProto(req.timeout());
  }
  UpdateGauges();
  if (IsScript(req.glue_type())) return nullptr;
  return handlers_.at(req.handler());
}

void RunManager::RunLane(const std::shared_ptr<Lifeline>& life, const std::shared_ptr<Lane>& lane) {
  // Only `life` and what this function holds may be touched without checking life->alive.
  absl::Mutex& mu = life->mu;
  mu.Lock();
  if (!life->alive) {
    mu.Unlock();
    return;
  }
  lane->ready = false;
  lane->owned = true;
  ScriptRunner* const scripts = scripts_;
  while (!lane->queue.empty()) {
    std::shared_ptr<RunState> run = lane->queue.front();
    lane->queue.pop_front();
    lane->current = run;
    HandlerFn handler = StartRun(*run);
    if (run->deadline != absl::InfiniteFuture()) watchdog_.Watch(run);
    mu.Unlock();

    Result result = ExecuteRun(*run, handler, scripts);

    mu.Lock();
    if (!life->alive) {
      // The manager was shut down while this handler ignored its cancellation.
      mu.Unlock();
      return;
    }
    lane->current = nullptr;
    std::string ended;
    absl::optional<RunResult> final = results_.Concluded(*run, result, &ended);
    // The log line and the report happen outside the lock; the run stays in runs_ (marked
    // reported) until then, so a Log reader never sees it inactive before its last line.
    ++in_report_;
    mu.Unlock();
    if (!ended.empty()) run->Log(ended);
    // Its last lines go to the file before the run is forgotten (one write for a short run).
    if (run->log != nullptr) run->log->Close();
    if (final.has_value()) results_.Report({*final});
    mu.Lock();
    Forget(*run);
    --in_report_;
  }
  lane->owned = false;
  // An idle lane goes; Submit makes a new one for the job's next run.
  lanes_.DropIfIdle(lane);
  mu.Unlock();
}

void RunManager::Forget(RunState& run) {
  // Its status is noted already when its result went through ledger_sink_.
  ledger_.Ended(run.run_id(), jobwheel::v1::RUN_STATUS_UNSPECIFIED, "");
  runs_.Forget(run);
  watchdog_.Unwatch(run);
  UpdateGauges();
}

void RunManager::UpdateGauges() {
  metrics_.running.Set(runs_.running());
  metrics_.queue_depth.Set(runs_.queued());
}

void RunManager::CloseLogs(const std::vector<std::shared_ptr<RunLogFile>>& logs) {
  for (const auto& log : logs) {
    if (log != nullptr) log->Close();
  }
}

RunManager::KillOutcome RunManager::Kill(int64_t run_id, absl::string_view reason) {
  std::vector<RunResult> to_report;
  std::vector<std::shared_ptr<RunLogFile>> to_close;  // Written outside the lock.
  KillOutcome outcome;
  {
    absl::MutexLock lock(&mu_);
    std::shared_ptr<RunState> run = runs_.Find(run_id);
    if (run == nullptr || run->reported) {
      return {false, absl::StrCat("run ", run_id, " is not running or queued here")};
    }
    const std::string message = reason.empty() ? "killed" : absl::StrCat("killed: ", reason);
    const absl::Time now = clock_.Now();
    if (run->phase == RunPhase::kQueued) {
      CancelQueued(run, CancelReason::kKilled, message, now,
                   absl::StrCat("run ", run_id, " ", message, " while queued"),
                   /*note_after=*/"", &to_report, &to_close);
      outcome = {true, absl::StrCat("run ", run_id, " removed from the queue")};
    } else if (run->token->Cancel(CancelReason::kKilled, message)) {
      run->cancelled_at = now;
      run->Log(absl::StrCat("run ", run_id, " ", message, "; cancelling"));
      watchdog_.Watch(run);
      outcome = {true, absl::StrCat("run ", run_id, " cancelled")};
    } else {
      outcome = {true, absl::StrCat("run ", run_id, " is already being cancelled (",
                                    CancelReasonName(run->token->reason()), ")")};
    }
  }
  CloseLogs(to_close);
  results_.Report(to_report);
  return outcome;
}

RunManager::Load RunManager::JobLoad(int64_t job_id) const {
  absl::MutexLock lock(&mu_);
  const RunTable::Counts counts = runs_.JobCounts(job_id);
  return Load{counts.running, counts.queued};
}

RunManager::Snapshot RunManager::GetSnapshot() const {
  absl::MutexLock lock(&mu_);
  Snapshot s;
  s.running_job_ids = runs_.RunningJobs();
  s.running = runs_.running();
  s.queued = runs_.queued();
  return s;
}

bool RunManager::IsActive(int64_t run_id) const {
  absl::MutexLock lock(&mu_);
  return runs_.Find(run_id) != nullptr;
}

size_t RunManager::WorkerThreads() const { return threads_.Threads(); }

void RunManager::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

void RunManager::Shutdown(absl::Duration grace, absl::Duration join_timeout) {
  std::vector<RunResult> to_report;
  std::vector<std::shared_ptr<RunLogFile>> to_close;  // Written outside the lock.
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
    accepting_ = false;
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return runs_.empty(); };
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&idle), clock_.Now() + grace);
    const absl::Time now = clock_.Now();
    for (const std::shared_ptr<RunState>& run : runs_.Unreported()) {
      if (run->phase == RunPhase::kQueued) {
        CancelQueued(run, CancelReason::kShutdown, "executor shut down", now, "", "", &to_report,
                     &to_close);
      } else {
        if (run->token->Cancel(CancelReason::kShutdown, "executor shut down")) {
          run->cancelled_at = now;
        }
        to_report.push_back(results_.Cancelled(*run));
      }
      spdlog::warn("run {} (job {}): not finished within the shutdown grace period; reported {}",
                   run->run_id(), run->request.job_id(), RunStatusName(to_report.back().status()));
    }
  }
  CloseLogs(to_close);
  results_.Report(to_report);

  // Idle run threads exit now; busy ones finish their runs (whose results are reported
  // already), or are detached once join_timeout has passed.
  const size_t detached = threads_.Shutdown(clock_.Now() + join_timeout);
  watchdog_.Stop();
  {
    absl::MutexLock lock(&mu_);
    if (detached > 0) {
      for (const std::shared_ptr<RunState>& run : runs_.Running()) {
        spdlog::error("job {}: handler of run {} ignored cancellation; detaching its thread",
                      run->request.job_id(), run->run_id());
      }
    }
    auto reported = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_report_ == 0; };
    mu_.Await(absl::Condition(&reported));
    life_->alive = false;
  }
  // What detached handlers logged so far reaches the files now (later lines within the log
  // store's flush interval).
  if (logs_ != nullptr) logs_->FlushAll();
}

}  // namespace jobwheel::sdk
