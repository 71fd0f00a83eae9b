#include "services/dispatcher/held_runs.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace jobwheel::dispatcher {

HeldRuns::HeldRuns(Clock& clock, absl::Duration max_hold, DispatcherMetrics& metrics, DueFn on_due)
    : clock_(clock), max_hold_(max_hold), metrics_(metrics), on_due_(std::move(on_due)) {}

HeldRuns::~HeldRuns() { Shutdown(); }

void HeldRuns::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void HeldRuns::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) give_up_ = clock_.Now() + max_hold_ + absl::Seconds(1);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

size_t HeldRuns::size() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

bool HeldRuns::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool HeldRuns::Hold(std::vector<std::pair<RoutedRun, absl::Time>>& runs) {
  size_t held;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    // The runs of one call mostly share a few due times: look each one up once in a row.
    auto slot = by_due_.end();
    for (auto& [routed, when] : runs) {
      if (slot == by_due_.end() || slot->first != when) slot = by_due_.try_emplace(when).first;
      slot->second.push_back(std::move(routed));
    }
    count_ += runs.size();
    held = count_;
  }
  metrics_.RunsHeld(held);
  return true;
}

std::vector<RoutedRun> HeldRuns::TakeDueLocked(absl::Time now, bool all) {
  std::vector<RoutedRun> due;
  auto end = all ? by_due_.end() : by_due_.upper_bound(now);
  for (auto it = by_due_.begin(); it != end; it = by_due_.erase(it)) {
    if (due.empty()) {
      due = std::move(it->second);  // Mostly one due time: no copy.
    } else {
      due.insert(due.end(), std::make_move_iterator(it->second.begin()),
                 std::make_move_iterator(it->second.end()));
    }
  }
  count_ -= due.size();
  return due;
}

void HeldRuns::Loop() {
  mu_.Lock();
  while (true) {
    if (stopping_ && by_due_.empty()) break;
    const absl::Time now = clock_.Now();
    const bool all = now >= give_up_;
    if (!by_due_.empty() && (all || by_due_.begin()->first <= now)) {
      std::vector<RoutedRun> due = TakeDueLocked(now, all);
      const size_t left = count_;
      mu_.Unlock();
      metrics_.RunsHeld(left);
      on_due_(std::move(due));
      mu_.Lock();
      continue;
    }
    // Wait for the earliest due time, an earlier one held meanwhile, or Shutdown.
    const absl::Time top = by_due_.empty() ? absl::InfiniteFuture() : by_due_.begin()->first;
    const bool was_stopping = stopping_;
    auto changed = [this, top, was_stopping]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ != was_stopping || (!by_due_.empty() && by_due_.begin()->first < top);
    };
    const absl::Time wake = std::min(top, give_up_);
    if (wake == absl::InfiniteFuture()) {
      mu_.Await(absl::Condition(&changed));
    } else {
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&changed), wake);
    }
  }
  mu_.Unlock();
}

}  // namespace jobwheel::dispatcher
