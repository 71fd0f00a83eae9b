#include "services/scheduler/monitors.h"

#include <algorithm>
#include <vector>

#include "services/scheduler/followup_plan.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {
namespace {

// Runs and fires deleted per retention transaction, and transactions per retention pass.
constexpr int kRetentionBatch = 1000;
constexpr int kRetentionRounds = 100;

}  // namespace

Monitors::Monitors(Options options, FireStore& store, Clock& clock, SchedulerMetrics& metrics)
    : options_(options), store_(store), clock_(clock), metrics_(metrics) {}

Monitors::~Monitors() { Shutdown(); }

void Monitors::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Monitors::Shutdown() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void Monitors::OnExecutorChanged() {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  wakes_.insert(now + options_.offline_grace + options_.wake_margin);
  wakes_.insert(now + options_.restart_grace + options_.wake_margin);
  ++wake_version_;
}

bool Monitors::WaitForPass(absl::Time until, bool* woken) {
  absl::MutexLock lock(&mu_);
  *woken = false;
  while (true) {
    const absl::Time due = wakes_.empty() ? until : std::min(until, *wakes_.begin());
    const int64_t seen = wake_version_;
    auto stopping_or_new_wake = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || wake_version_ != seen;
    };
    if (!clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_or_new_wake), due)) break;
    if (stopping_) return false;
    // A new wake-up: wait again, for whichever comes first now.
  }
  const absl::Time now = clock_.Now();
  while (!wakes_.empty() && *wakes_.begin() <= now) {
    wakes_.erase(wakes_.begin());
    *woken = true;
  }
  return true;
}

void Monitors::Loop() {
  absl::Time last_retention = clock_.Now();
  absl::Time sweep = clock_.Now() + options_.interval;
  bool chains_waiting = false;
  while (true) {
    const absl::Time until =
        chains_waiting ? std::min(sweep, clock_.Now() + options_.delay_chain_interval) : sweep;
    bool woken = false;
    if (!WaitForPass(until, &woken)) return;
    const bool full = woken || clock_.Now() >= sweep;
    if (full) sweep = clock_.Now() + options_.interval;
    if (!store_.IsLeader()) {
      metrics_.jobs.Set(0);  // Only the leader counts enabled jobs.
      chains_waiting = false;
      continue;
    }
    if (!full) {
      auto chains = AdvanceDelayChains();
      chains_waiting = chains.ok() && chains->waiting > 0;
      continue;
    }
    auto counts = RunOnce();
    if (!counts.ok() && counts.status().code() != absl::StatusCode::kFailedPrecondition) {
      spdlog::warn("monitors: {}", counts.status().ToString());
    }
    chains_waiting = counts.ok() && counts->delay_chains_waiting > 0;
    if (clock_.Now() - last_retention >= options_.retention_interval) {
      last_retention = clock_.Now();
      auto deleted = Retain();
      if (deleted.ok() && *deleted > 0) spdlog::info("retention: deleted {} rows", *deleted);
    }
  }
}

absl::StatusOr<Monitors::Counts> Monitors::RunOnce() {
  const absl::Time now = clock_.Now();
  FireStore::MonitorLimits limits;
  limits.batch = options_.batch;
  limits.lost_started_before = now - options_.lost_after;
  limits.restarted_before = now - options_.restart_grace;
  limits.offline_grace = options_.offline_grace;
  limits.restart_grace = options_.restart_grace;
  limits.pending_before = now - options_.pending_timeout;
  // The decision is pure (followup_plan.h); the store makes it inside the monitors'
  // transaction, on the runs it locked.
  FollowupPlan plan;
  const absl::Time start = clock_.Now();
  absl::StatusOr<FireStore::MonitorResult> result = store_.RunMonitorPass(
      limits,
      [&](const std::vector<FinishedRun>& runs,
          const std::vector<jobwheel::v1::Job>& unscheduled) -> const FollowupPlan& {
        plan = PlanFollowups(runs);
        PlanScheduleStops(unscheduled, plan);
        return plan;
      });
  metrics_.DbQuery("monitors", clock_.Now() - start, result.ok());
  if (!result.ok()) return result.status();
  Counts counts;
  counts.retries = result->retries;
  counts.children = result->children;
  counts.alarms = result->alarms_queued;
  counts.stopped_jobs = result->stopped_jobs;
  counts.lost = result->lost;
  counts.stale_pending = result->stale_pending;
  counts.lost_runs = result->lost_runs;
  metrics_.jobs.Set(static_cast<double>(result->enabled_jobs));
  metrics_.retries.Increment(counts.retries);
  metrics_.child_fires.Increment(counts.children);
  metrics_.lost_runs.Increment(counts.lost + counts.stale_pending);
  int offline = 0, restarted = 0;
  for (const FireStore::LostRun& run : result->lost_runs) {
    const bool was_offline = run.reason == FireStore::LostReason::kExecutorOffline;
    ++(was_offline ? offline : restarted);
    if (run.after_offline) metrics_.OfflineToLost(*run.after_offline);
    spdlog::warn("run {} LOST: executor {}/{} {}", run.run_id, run.app, run.executor_address,
                 was_offline ? "went offline" : "restarted");
  }
  if (offline > 0) metrics_.RunsLost("executor_offline", offline);
  if (restarted > 0) metrics_.RunsLost("executor_restarted", restarted);
  if (counts.stale_pending > 0) metrics_.RunsLost("trigger_never_completed", counts.stale_pending);
  if (!result->lost_runs.empty() && lost_listener_) lost_listener_(result->lost_runs);
  metrics_.alarms_queued.Increment(counts.alarms);
  for (const ScheduleStop& stop : plan.stops) {
    spdlog::error("job {} stopped: {}", stop.job_id, stop.error);
  }
  // After the follow-ups: a retry written above is waited for.
  absl::StatusOr<FireStore::DelayChainResult> chains = AdvanceDelayChains();
  if (!chains.ok()) return chains.status();
  counts.delay_chains_advanced = chains->advanced;
  counts.delay_chains_waiting = chains->waiting;
  return counts;
}

absl::StatusOr<FireStore::DelayChainResult> Monitors::AdvanceDelayChains() {
  const absl::Time start = clock_.Now();
  absl::StatusOr<FireStore::DelayChainResult> result = store_.AdvanceDelayChains(options_.batch);
  metrics_.DbQuery("delay_chains", clock_.Now() - start, result.ok());
  if (!result.ok() && result.status().code() != absl::StatusCode::kFailedPrecondition) {
    spdlog::warn("delay chains: {}", result.status().ToString());
  }
  return result;
}

absl::StatusOr<int> Monitors::Retain() {
  int deleted = 0;
  const absl::Time cutoff = clock_.Now() - options_.retention;
  for (int round = 0; round < kRetentionRounds; ++round) {
    absl::StatusOr<int> n = store_.DeleteHistory(cutoff, kRetentionBatch);
    if (!n.ok()) return n.status();
    deleted += *n;
    if (*n == 0) break;
  }
  const absl::Time audit_cutoff = clock_.Now() - options_.audit_retention;
  for (int round = 0; round < kRetentionRounds; ++round) {
    absl::StatusOr<int> n = store_.DeleteAuditHistory(audit_cutoff, kRetentionBatch);
    if (!n.ok()) return n.status();
    deleted += *n;
    if (*n == 0) break;
  }
  return deleted;
}

}  // namespace jobwheel::scheduler
