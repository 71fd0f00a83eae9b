#include "services/scheduler/monitors.h"

#include <algorithm>
#include <vector>

#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

Monitors::Monitors(Options options, FireStore& store, Clock& clock, SchedulerMetrics& metrics)
    : options_(options),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      followups_(options_, store, clock, metrics),
      delay_chains_(options_, store, clock, metrics),
      retention_(options_, store, clock) {}

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
  absl::StatusOr<FollowupPass::Counts> followups = followups_.Run();
  if (!followups.ok()) return followups.status();
  Counts counts;
  static_cast<FollowupPass::Counts&>(counts) = *std::move(followups);
  // After the follow-ups: a retry written above is waited for.
  absl::StatusOr<FireStore::DelayChainResult> chains = AdvanceDelayChains();
  if (!chains.ok()) return chains.status();
  counts.delay_chains_advanced = chains->advanced;
  counts.delay_chains_waiting = chains->waiting;
  return counts;
}

absl::StatusOr<FireStore::DelayChainResult> Monitors::AdvanceDelayChains() {
  return delay_chains_.Run();
}

absl::StatusOr<int> Monitors::Retain() { return retention_.Run(); }

}  // namespace jobwheel::scheduler
