#include "sdk/internal/run_manager.h"

#include <pthread.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/time/proto_time.h"
#include "sdk/internal/script_environment.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {
namespace {

using jobwheel::v1::RunDisposition;
using jobwheel::v1::RunRequest;
using jobwheel::v1::RunResult;
using jobwheel::v1::RunStatus;

TriggerType FromProtoTrigger(jobwheel::v1::TriggerType t) {
  switch (t) {
    case jobwheel::v1::TRIGGER_TYPE_CRON:
      return TriggerType::kCron;
    case jobwheel::v1::TRIGGER_TYPE_FIX_RATE:
      return TriggerType::kFixRate;
    case jobwheel::v1::TRIGGER_TYPE_MANUAL:
      return TriggerType::kManual;
    case jobwheel::v1::TRIGGER_TYPE_MISFIRE:
      return TriggerType::kMisfire;
    case jobwheel::v1::TRIGGER_TYPE_RETRY:
      return TriggerType::kRetry;
    case jobwheel::v1::TRIGGER_TYPE_PARENT:
      return TriggerType::kParent;
    default:
      return TriggerType::kUnspecified;
  }
}

bool IsScript(jobwheel::v1::GlueType g) {
  return g == jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL || g == jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON;
}

std::string StatusName(RunStatus s) {
  std::string name = jobwheel::v1::RunStatus_Name(s);
  absl::string_view v(name);
  if (absl::ConsumePrefix(&v, "RUN_STATUS_")) return std::string(v);
  return name;
}

}  // namespace

absl::string_view RunStatusLabel(RunStatus status) {
  switch (status) {
    case jobwheel::v1::RUN_STATUS_SUCCEEDED:
      return "succeeded";
    case jobwheel::v1::RUN_STATUS_FAILED:
      return "failed";
    case jobwheel::v1::RUN_STATUS_TIMED_OUT:
      return "timed_out";
    case jobwheel::v1::RUN_STATUS_KILLED:
      return "killed";
    case jobwheel::v1::RUN_STATUS_LOST:
      return "lost";
    case jobwheel::v1::RUN_STATUS_DISCARDED:
      return "discarded";
    default:
      return "other";
  }
}

RunManager::RunManager(RunManagerOptions options, HandlerMap handlers, RunLogStore* logs,
                       ScriptRunner* scripts, ResultSink* sink, const Clock& clock,
                       ExecutorMetrics& metrics)
    : options_(std::move(options)),
      handlers_(std::move(handlers)),
      logs_(logs),
      scripts_(scripts),
      sink_(sink),
      clock_(clock),
      metrics_(metrics),
      life_(std::make_shared<Lifeline>()),
      mu_(life_->mu),
      executor_address_(options_.executor_address) {}

void RunManager::SetExecutorAddress(const std::string& address) {
  absl::MutexLock lock(&mu_);
  executor_address_ = address;
}

RunManager::~RunManager() { Shutdown(absl::ZeroDuration(), absl::Seconds(1)); }

void RunManager::Start() {
  absl::MutexLock lock(&mu_);
  if (watchdog_.joinable() || shut_down_) return;
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

absl::Status RunManager::Validate(const RunRequest& r) {
  if (r.run_id() <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  if (r.job_id() <= 0) return absl::InvalidArgumentError("job_id: must be positive");
  if (!jobwheel::v1::GlueType_IsValid(r.glue_type())) {
    return absl::InvalidArgumentError(absl::StrCat("glue_type: unknown value ", r.glue_type()));
  }
  if (!jobwheel::v1::BlockStrategy_IsValid(r.block_strategy())) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_strategy: unknown value ", r.block_strategy()));
  }
  if (r.shard_total() < 0) {
    return absl::InvalidArgumentError("shard_total: must not be negative");
  }
  if (r.shard_total() > 0 && (r.shard_index() < 0 || r.shard_index() >= r.shard_total())) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard_index: must be in [0, ", r.shard_total(), ")"));
  }
  if (r.shard_total() == 0 && r.shard_index() != 0) {
    return absl::InvalidArgumentError("shard_index: set without shard_total");
  }
  if (r.has_timeout() && FromProto(r.timeout()) < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeout: must not be negative");
  }
  if (IsScript(r.glue_type())) {
    if (r.script_source().empty()) {
      return absl::InvalidArgumentError("script_source: must not be empty for a script job");
    }
    if (r.script_version() < 0) {
      return absl::InvalidArgumentError("script_version: must not be negative");
    }
  } else if (r.handler().empty()) {
    return absl::InvalidArgumentError("handler: must not be empty");
  }
  return absl::OkStatus();
}

absl::StatusOr<RunManager::SubmitOutcome> RunManager::Submit(const RunRequest& request) {
  absl::Status valid = Validate(request);
  if (!valid.ok()) {
    if (request.run_id() <= 0) return valid;
    return absl::InvalidArgumentError(
        absl::StrCat("run ", request.run_id(), ": ", valid.message()));
  }
  const int64_t run_id = request.run_id();
  const int64_t job_id = request.job_id();
  if (IsScript(request.glue_type())) {
    if (!options_.allow_scripts || scripts_ == nullptr) {
      return SubmitOutcome{jobwheel::v1::RUN_DISPOSITION_REJECTED,
                           "scripts are disabled on this executor"};
    }
  } else if (!handlers_.contains(request.handler())) {
    std::vector<std::string> names;
    for (const auto& [name, fn] : handlers_) names.push_back(name);
    std::sort(names.begin(), names.end());
    return SubmitOutcome{jobwheel::v1::RUN_DISPOSITION_REJECTED,
                         absl::StrCat("handler \"", request.handler(),
                                      "\" is not registered on this executor (has: ",
                                      absl::StrJoin(names, ", "), ")")};
  }

  // The run's log is made before taking the lock (no I/O: its file is created at its first
  // write). A run refused below gets its new log discarded again, so it leaves no file.
  bool created_log = false;
  auto log = logs_->Create(run_id, &created_log);
  auto refuse = [&](SubmitOutcome refusal) {
    if (created_log) logs_->Remove(run_id);
    return refusal;
  };

  std::vector<RunResult> to_report;
  std::vector<std::shared_ptr<RunLogFile>> to_close;  // Written outside the lock.
  SubmitOutcome outcome;
  {
    absl::ReleasableMutexLock lock(&mu_);
    if (!accepting_) {
      lock.Release();
      return refuse(SubmitOutcome{jobwheel::v1::RUN_DISPOSITION_REJECTED, "shutting down"});
    }
    if (auto it = runs_.find(run_id); it != runs_.end()) {
      return SubmitOutcome{it->second->phase == Phase::kQueued
                               ? jobwheel::v1::RUN_DISPOSITION_QUEUED
                               : jobwheel::v1::RUN_DISPOSITION_STARTED,
                           absl::StrCat("run ", run_id, " already accepted")};
    }
    if (recent_.contains(run_id)) {
      return SubmitOutcome{
          jobwheel::v1::RUN_DISPOSITION_STARTED,
          absl::StrCat("run ", run_id, " already ran here; its result is reported")};
    }
    std::shared_ptr<Worker> worker;
    if (auto it = workers_.find(job_id); it != workers_.end()) worker = it->second;
    const bool busy = worker != nullptr && (worker->current != nullptr || !worker->queue.empty());
    const int64_t blocker = !busy                        ? 0
                            : worker->current != nullptr ? worker->current->request.run_id()
                                                         : worker->queue.front()->request.run_id();
    const auto strategy = request.block_strategy();
    if (busy && strategy == jobwheel::v1::BLOCK_STRATEGY_DISCARD_LATER) {
      lock.Release();
      return refuse(SubmitOutcome{jobwheel::v1::RUN_DISPOSITION_DISCARDED,
                                  absl::StrCat("block strategy DISCARD_LATER: job ", job_id,
                                               " is busy with run ", blocker)});
    }
    const absl::Time now = clock_.Now();
    std::string covered;
    if (busy && strategy == jobwheel::v1::BLOCK_STRATEGY_COVER_EARLY) {
      const std::string message = absl::StrCat("covered by run ", run_id);
      std::vector<int64_t> ids;
      for (auto& queued : worker->queue) {
        queued->token->Cancel(CancelReason::kCovered, message);
        queued->cancelled_at = now;
        to_report.push_back(CancelledResult(*queued));
        queued->Log(absl::StrCat("run ", queued->request.run_id(), " ", message,
                                 " (COVER_EARLY) before it started"));
        to_close.push_back(queued->log);
        Forget(*queued);
        ids.push_back(queued->request.run_id());
      }
      worker->queue.clear();
      if (worker->current != nullptr) {
        RunState& cur = *worker->current;
        if (cur.token->Cancel(CancelReason::kCovered, message)) cur.cancelled_at = now;
        Watch(worker->current);
        cur.Log(
            absl::StrCat("run ", cur.request.run_id(), " cancelled: ", message, " (COVER_EARLY)"));
        ids.insert(ids.begin(), cur.request.run_id());
      }
      workers_.erase(job_id);
      worker = nullptr;
      covered = absl::StrCat("; covered run(s) ", absl::StrJoin(ids, ", "));
      watchdog_cv_.Signal();
    }

    auto run = std::make_shared<RunState>();
    run->request = request;
    run->accepted = now;
    if (log.ok()) {
      run->log = *log;
    } else {
      spdlog::error("run {}: cannot create its log: {}", run_id, log.status().ToString());
    }
    if (worker == nullptr) worker = NewWorker(job_id);
    const bool queued = worker->current != nullptr || !worker->queue.empty();
    run->worker = worker.get();
    worker->queue.push_back(run);
    runs_[run_id] = run;
    ++queued_count_;
    if (!worker->owned && !worker->ready) Schedule(worker);
    outcome.disposition =
        queued ? jobwheel::v1::RUN_DISPOSITION_QUEUED : jobwheel::v1::RUN_DISPOSITION_STARTED;
    outcome.message = queued ? absl::StrCat("queued behind run ", blocker, " of job ", job_id)
                             : absl::StrCat("started", covered);
    const std::string what =
        IsScript(request.glue_type())
            ? absl::StrCat("script ", jobwheel::v1::GlueType_Name(request.glue_type()), " v",
                           request.script_version())
            : absl::StrCat("handler ", request.handler());
    run->Log(absl::StrCat(
        "run ", run_id, " accepted: job ", job_id, ", ", what, ", fire ", request.fire_id(),
        ", trigger ", TriggerTypeName(FromProtoTrigger(request.trigger_type())), ", attempt ",
        request.attempt(),
        request.shard_total() > 0
            ? absl::StrCat(", shard ", request.shard_index(), "/", request.shard_total())
            : "",
        "; ", outcome.message));
    UpdateGauges();
  }
  for (const auto& log : to_close) {
    if (log != nullptr) log->Close();
  }
  Report(to_report);
  return outcome;
}

std::shared_ptr<RunManager::Worker> RunManager::NewWorker(int64_t job_id) {
  auto worker = std::make_shared<Worker>();
  worker->job_id = job_id;
  workers_[job_id] = worker;
  return worker;
}

void RunManager::Schedule(const std::shared_ptr<Worker>& lane) {
  lane->ready = true;
  ready_.push_back(lane);
  WakeOrStartThread();
}

void RunManager::WakeOrStartThread() {
  // One thread at a time is sent to the ready lanes; it takes one and, if more are ready,
  // sends the next. A RunBatch of short runs is then often done by one or two threads
  // instead of waking one per run (a wake-up costs more than a short handler), and runs
  // that block still each get a thread, one wake-up or thread start apart.
  if (wakeups_ > 0) return;
  if (idle_threads_ > 0) {
    ++wakeups_;
    pool_cv_.Signal();
    return;
  }
  // Every thread is busy (its handler may block for long): one more, up to the limit.
  if (live_threads_ < std::max<size_t>(1, options_.max_threads)) {
    ++wakeups_;
    auto t = std::make_shared<Thread>();
    t->thread = std::thread(&RunManager::ThreadLoop, this, life_, t);
    threads_.push_back(t);
    ++live_threads_;
  }
}

void RunManager::ThreadLoop(std::shared_ptr<Lifeline> life, std::shared_ptr<Thread> self) {
  pthread_setname_np(pthread_self(), "jobwheel-run");
  // Only `life` and `self` may be touched without checking life->alive first.
  absl::Mutex& mu = life->mu;
  mu.Lock();
  absl::Time idle_deadline = absl::Now() + options_.worker_idle_timeout;
  bool arrived = false;
  while (true) {
    if (!life->alive) {
      mu.Unlock();
      return;
    }
    if (!arrived) {
      arrived = true;
      if (wakeups_ > 0) --wakeups_;  // Started for the ready lanes: here now.
    }
    if (ready_.empty()) {
      if (stopping_ || absl::Now() >= idle_deadline) break;
      ++idle_threads_;
      pool_cv_.WaitWithDeadline(&mu, idle_deadline);
      --idle_threads_;
      if (wakeups_ > 0) --wakeups_;  // Whatever woke this thread, it looks at ready_ now.
      continue;
    }
    std::shared_ptr<Worker> w = std::move(ready_.front());
    ready_.pop_front();
    if (!ready_.empty()) WakeOrStartThread();  // Pass the rest on.
    w->ready = false;
    w->owned = true;
    self->lane = w;
    // The lane's runs one after the other, as long as it has any.
    while (!w->queue.empty()) {
      std::shared_ptr<RunState> run = w->queue.front();
      w->queue.pop_front();
      w->current = run;
      SetPhase(*run, Phase::kRunning);
      run->started = clock_.Now();
      const RunRequest& req = run->request;
      if (req.has_timeout() && FromProto(req.timeout()) > absl::ZeroDuration()) {
        run->deadline = run->started + FromProto(req.timeout());
        Watch(run);
      }
      const absl::Time deadline = run->deadline;
      UpdateGauges();
      HandlerFn handler;
      if (!IsScript(req.glue_type())) handler = handlers_.at(req.handler());
      mu.Unlock();

      run->Log(absl::StrCat(
          "run ", req.run_id(), " started",
          deadline != absl::InfiniteFuture()
              ? absl::StrCat(" (timeout ", absl::FormatDuration(FromProto(req.timeout())), ")")
              : ""));

      Result result = Execute(*run, handler);

      mu.Lock();
      if (!life->alive) {
        // The manager was shut down while this handler ignored its cancellation.
        mu.Unlock();
        return;
      }
      w->current = nullptr;
      std::string ended;
      absl::optional<RunResult> final = Conclude(*run, result, &ended);
      // The log line and the report happen outside the lock; the run stays in runs_ (marked
      // reported) until then, so a Log reader never sees it inactive before its last line.
      ++in_report_;
      mu.Unlock();
      if (!ended.empty()) run->Log(ended);
      // Its last lines go to the file before the run is forgotten (one write for a short run).
      if (run->log != nullptr) run->log->Close();
      if (final.has_value()) Report({*final});
      mu.Lock();
      Forget(*run);
      --in_report_;
      changed_cv_.SignalAll();
    }
    w->owned = false;
    self->lane = nullptr;
    // An idle lane goes; Submit makes a new one for the job's next run.
    auto it = workers_.find(w->job_id);
    if (it != workers_.end() && it->second == w && w->current == nullptr) workers_.erase(it);
    idle_deadline = absl::Now() + options_.worker_idle_timeout;
  }
  self->exited = true;
  --live_threads_;
  changed_cv_.SignalAll();
  watchdog_cv_.Signal();
  mu.Unlock();
}

Result RunManager::Execute(RunState& run, const HandlerFn& handler) {
  const RunRequest& req = run.request;
  RunInfo info;
  info.job_id = req.job_id();
  info.run_id = req.run_id();
  info.fire_id = req.fire_id();
  info.handler = req.handler();
  info.param = req.param();
  info.shard_index = req.shard_index();
  info.shard_total = req.shard_total();
  info.trigger_type = FromProtoTrigger(req.trigger_type());
  info.attempt = req.attempt();
  if (req.has_scheduled_time()) info.scheduled_time = FromProto(req.scheduled_time());
  info.deadline = run.deadline;
  if (IsScript(req.glue_type())) return ExecuteScript(run);
  std::shared_ptr<RunLogFile> log = run.log;
  JobContext ctx(std::move(info), run.token, [log](absl::string_view line) {
    if (log != nullptr) log->Append(line);
  });
  try {
    return handler(ctx);
  } catch (const std::exception& e) {
    return Result::Fail(absl::StrCat("handler threw: ", e.what()));
  } catch (...) {
    return Result::Fail("handler threw an unknown exception");
  }
}

Result RunManager::ExecuteScript(RunState& run) {
  const RunRequest& req = run.request;
  const auto language = req.glue_type() == jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON
                            ? ScriptRunner::Language::kPython
                            : ScriptRunner::Language::kShell;
  auto path =
      scripts_->Materialize(req.job_id(), req.script_version(), language, req.script_source());
  if (!path.ok())
    return Result::Fail(absl::StrCat("cannot write script: ", path.status().message()));
  std::vector<std::string> args = {req.param(), absl::StrCat(req.shard_index()),
                                   absl::StrCat(req.shard_total())};
  std::shared_ptr<RunLogFile> log = run.log;
  auto output = [log](absl::string_view line) {
    if (log != nullptr) log->Append(line);
  };
  auto on_start = [log, &path](pid_t pid) {
    if (log != nullptr) log->Append(absl::StrCat("script ", *path, " started, pid ", pid));
  };
  auto outcome = scripts_->Run(language, *path, args, *run.token, output, on_start,
                               ScriptContext{req.run_id(), ScriptJobVars(req)});
  if (!outcome.ok()) return Result::Fail(std::string(outcome.status().message()));
  if (outcome->exited && outcome->exit_code == 0) return Result::Ok("exit code 0");
  if (outcome->exited) {
    return Result::Fail(outcome->exit_code,
                        absl::StrCat("script exited with code ", outcome->exit_code));
  }
  return Result::Fail(128 + outcome->term_signal,
                      absl::StrCat("script killed by signal ", outcome->term_signal));
}

RunResult RunManager::MakeResult(const RunState& run, RunStatus status, int code,
                                 const std::string& message) const {
  RunResult r;
  r.set_run_id(run.request.run_id());
  r.set_status(status);
  r.set_code(code);
  r.set_message(message);
  if (run.started != absl::InfinitePast()) *r.mutable_start_time() = ToProto(run.started);
  *r.mutable_end_time() = ToProto(clock_.Now());
  r.set_executor_address(executor_address_);
  return r;
}

RunResult RunManager::CancelledResult(RunState& run) {
  run.reported = true;
  const std::string message = run.token->message();
  RunResult r;
  switch (run.token->reason()) {
    case CancelReason::kKilled:
      r = MakeResult(run, jobwheel::v1::RUN_STATUS_KILLED, Result::kFailCode, message);
      break;
    case CancelReason::kTimedOut:
      r = MakeResult(run, jobwheel::v1::RUN_STATUS_TIMED_OUT, Result::kTimeoutCode, message);
      break;
    case CancelReason::kCovered:
      r = MakeResult(run, jobwheel::v1::RUN_STATUS_DISCARDED, Result::kFailCode, message);
      break;
    case CancelReason::kShutdown:
    case CancelReason::kNone:
      r = MakeResult(run, jobwheel::v1::RUN_STATUS_FAILED, Result::kFailCode, "executor shut down");
      break;
  }
  run.Log(absl::StrCat("run ", run.request.run_id(), " ended: ", StatusName(r.status()), " (code ",
                       r.code(), ") ", r.message()));
  return r;
}

absl::optional<RunResult> RunManager::Conclude(RunState& run, const Result& result,
                                               std::string* ended_line) {
  const absl::Time now = clock_.Now();
  if (run.started != absl::InfinitePast()) {
    metrics_.run_duration_seconds.Observe(absl::ToDoubleSeconds(now - run.started));
  }
  if (run.reported) {
    run.Log(absl::StrCat("handler returned after the run was reported; its result (",
                         result.ok() ? "ok" : "fail", ", code ", result.code(), ") ",
                         result.message(), " is dropped"));
    return absl::nullopt;
  }
  if (run.token->cancelled()) return CancelledResult(run);
  run.reported = true;
  RunResult r = MakeResult(
      run, result.ok() ? jobwheel::v1::RUN_STATUS_SUCCEEDED : jobwheel::v1::RUN_STATUS_FAILED,
      result.code(), result.message());
  *ended_line = absl::StrCat("run ", run.request.run_id(), " ended: ", StatusName(r.status()),
                             " (code ", r.code(), ") ", r.message());
  return r;
}

void RunManager::SetPhase(RunState& run, Phase phase) {
  if (run.phase == phase) return;
  if (run.phase == Phase::kQueued) --queued_count_;
  if (run.phase == Phase::kRunning) --running_count_;
  run.phase = phase;
  if (phase == Phase::kQueued) ++queued_count_;
  if (phase == Phase::kRunning) ++running_count_;
}

void RunManager::Watch(const std::shared_ptr<RunState>& run) {
  if (run == nullptr) return;
  watched_[run->request.run_id()] = run;
  watchdog_cv_.Signal();
}

void RunManager::Forget(RunState& run) {
  SetPhase(run, Phase::kDone);
  const int64_t id = run.request.run_id();
  auto it = runs_.find(id);
  if (it != runs_.end() && it->second.get() == &run) runs_.erase(it);
  auto w = watched_.find(id);
  if (w != watched_.end() && w->second.get() == &run) watched_.erase(w);
  if (recent_.insert(id).second) {
    recent_order_.push_back(id);
    while (recent_order_.size() > options_.recent_runs) {
      recent_.erase(recent_order_.front());
      recent_order_.pop_front();
    }
  }
  UpdateGauges();
  changed_cv_.SignalAll();
}

void RunManager::Report(const std::vector<RunResult>& results) {
  for (const RunResult& r : results) {
    metrics_.RunsTotal(RunStatusLabel(r.status())).Increment();
    sink_->Submit(r);
  }
}

void RunManager::UpdateGauges() {
  metrics_.running.Set(running_count_);
  metrics_.queue_depth.Set(queued_count_);
}

RunManager::KillOutcome RunManager::Kill(int64_t run_id, absl::string_view reason) {
  std::vector<RunResult> to_report;
  std::shared_ptr<RunLogFile> to_close;  // Written outside the lock.
  KillOutcome outcome;
  {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end() || it->second->reported) {
      return {false, absl::StrCat("run ", run_id, " is not running or queued here")};
    }
    std::shared_ptr<RunState> run = it->second;
    const std::string message = reason.empty() ? "killed" : absl::StrCat("killed: ", reason);
    const absl::Time now = clock_.Now();
    if (run->phase == Phase::kQueued) {
      auto& q = run->worker->queue;
      q.erase(std::remove(q.begin(), q.end(), run), q.end());
      run->token->Cancel(CancelReason::kKilled, message);
      run->cancelled_at = now;
      run->Log(absl::StrCat("run ", run_id, " ", message, " while queued"));
      to_report.push_back(CancelledResult(*run));
      to_close = run->log;
      Forget(*run);
      outcome = {true, absl::StrCat("run ", run_id, " removed from the queue")};
    } else if (run->token->Cancel(CancelReason::kKilled, message)) {
      run->cancelled_at = now;
      run->Log(absl::StrCat("run ", run_id, " ", message, "; cancelling"));
      Watch(run);
      outcome = {true, absl::StrCat("run ", run_id, " cancelled")};
    } else {
      outcome = {true, absl::StrCat("run ", run_id, " is already being cancelled (",
                                    CancelReasonName(run->token->reason()), ")")};
    }
  }
  if (to_close != nullptr) to_close->Close();
  Report(to_report);
  return outcome;
}

RunManager::Load RunManager::JobLoad(int64_t job_id) const {
  absl::MutexLock lock(&mu_);
  Load load;
  for (const auto& [id, run] : runs_) {
    if (run->request.job_id() != job_id) continue;
    if (run->phase == Phase::kRunning) ++load.running;
    if (run->phase == Phase::kQueued) ++load.queued;
  }
  return load;
}

RunManager::Snapshot RunManager::GetSnapshot() const {
  absl::MutexLock lock(&mu_);
  Snapshot s;
  absl::flat_hash_set<int64_t> jobs;
  for (const auto& [id, run] : runs_) {
    if (run->phase == Phase::kRunning) {
      ++s.running;
      jobs.insert(run->request.job_id());
    }
    if (run->phase == Phase::kQueued) ++s.queued;
  }
  s.running_job_ids.assign(jobs.begin(), jobs.end());
  std::sort(s.running_job_ids.begin(), s.running_job_ids.end());
  return s;
}

bool RunManager::IsActive(int64_t run_id) const {
  absl::MutexLock lock(&mu_);
  return runs_.contains(run_id);
}

size_t RunManager::WorkerThreads() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& w : threads_) {
    if (!w->exited) ++n;
  }
  return n;
}

void RunManager::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

void RunManager::WatchdogLoop() {
  absl::MutexLock lock(&mu_);
  while (!watchdog_stop_) {
    const absl::Time now = clock_.Now();
    std::vector<RunResult> to_report;
    bool timed = false;
    for (auto it = watched_.begin(); it != watched_.end();) {
      const int64_t id = it->first;
      std::shared_ptr<RunState> run = it->second;
      if (run->phase != Phase::kRunning || run->reported) {
        watched_.erase(it++);  // Ended or already reported: nothing left to enforce.
        continue;
      }
      ++it;
      if (!run->token->cancelled() && run->deadline != absl::InfiniteFuture()) {
        timed = true;
        if (now >= run->deadline) {
          const std::string message = absl::StrCat(
              "timed out after ", absl::FormatDuration(FromProto(run->request.timeout())));
          if (run->token->Cancel(CancelReason::kTimedOut, message)) {
            run->cancelled_at = now;
            run->Log(absl::StrCat("run ", id, " ", message, "; cancelling"));
          }
        }
      }
      if (run->token->cancelled()) {
        timed = true;
        if (run->cancelled_at == absl::InfiniteFuture()) run->cancelled_at = now;
        if (now - run->cancelled_at >= options_.cancel_grace) {
          run->Log(absl::StrCat("handler has not returned ",
                                absl::FormatDuration(now - run->cancelled_at),
                                " after cancellation; reporting now, a later result is dropped"));
          to_report.push_back(CancelledResult(*run));
        }
      }
    }
    std::vector<std::thread> exited;
    for (auto it = threads_.begin(); it != threads_.end();) {
      if ((*it)->exited) {
        exited.push_back(std::move((*it)->thread));
        it = threads_.erase(it);
      } else {
        ++it;
      }
    }
    if (!to_report.empty() || !exited.empty()) {
      mu_.Unlock();
      Report(to_report);
      for (auto& t : exited) t.join();
      mu_.Lock();
      continue;
    }
    watchdog_cv_.WaitWithTimeout(&mu_, timed ? options_.watchdog_interval : absl::Seconds(1));
  }
}

void RunManager::Shutdown(absl::Duration grace, absl::Duration join_timeout) {
  std::vector<RunResult> to_report;
  std::vector<std::shared_ptr<RunLogFile>> to_close;  // Written outside the lock.
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
    accepting_ = false;
    const absl::Time deadline = absl::Now() + grace;
    while (!runs_.empty()) {
      if (changed_cv_.WaitWithDeadline(&mu_, deadline)) break;
    }
    const absl::Time now = clock_.Now();
    std::vector<std::shared_ptr<RunState>> rest;
    for (auto& [id, run] : runs_) {
      if (!run->reported) rest.push_back(run);
    }
    for (auto& run : rest) {
      if (run->token->Cancel(CancelReason::kShutdown, "executor shut down")) {
        run->cancelled_at = now;
      }
      if (run->phase == Phase::kQueued) {
        auto& q = run->worker->queue;
        q.erase(std::remove(q.begin(), q.end(), run), q.end());
        to_report.push_back(CancelledResult(*run));
        to_close.push_back(run->log);
        Forget(*run);
      } else {
        to_report.push_back(CancelledResult(*run));
      }
      spdlog::warn("run {} (job {}): not finished within the shutdown grace period; reported {}",
                   run->request.run_id(), run->request.job_id(),
                   StatusName(to_report.back().status()));
    }
    stopping_ = true;
    pool_cv_.SignalAll();
  }
  for (const auto& log : to_close) {
    if (log != nullptr) log->Close();
  }
  Report(to_report);

  std::vector<std::thread> joinable;
  std::vector<std::thread> stuck;
  absl::MutexLock lock(&mu_);
  const absl::Time join_deadline = absl::Now() + join_timeout;
  auto all_exited = [this]() {
    for (auto& w : threads_) {
      if (!w->exited) return false;
    }
    return true;
  };
  while (!all_exited()) {
    if (changed_cv_.WaitWithDeadline(&mu_, join_deadline)) break;
  }
  watchdog_stop_ = true;
  watchdog_cv_.SignalAll();
  if (watchdog_.joinable()) {
    mu_.Unlock();
    watchdog_.join();
    mu_.Lock();
  }
  for (auto& w : threads_) {
    if (w->exited) {
      joinable.push_back(std::move(w->thread));
    } else {
      const std::shared_ptr<Worker>& lane = w->lane;
      spdlog::error(
          "job {}: handler of run {} ignored cancellation; detaching its thread",
          lane != nullptr ? lane->job_id : 0,
          lane != nullptr && lane->current != nullptr ? lane->current->request.run_id() : 0);
      stuck.push_back(std::move(w->thread));
    }
  }
  threads_.clear();
  while (in_report_ > 0) changed_cv_.Wait(&mu_);
  life_->alive = false;
  mu_.Unlock();
  for (auto& t : joinable) t.join();
  for (auto& t : stuck) t.detach();
  // What detached handlers logged so far reaches the files now (later lines within the log
  // store's flush interval).
  if (logs_ != nullptr) logs_->FlushAll();
  mu_.Lock();
}

}  // namespace jobwheel::sdk
