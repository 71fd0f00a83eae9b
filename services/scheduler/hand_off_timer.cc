#include "services/scheduler/hand_off_timer.h"

namespace jobwheel::scheduler {

bool HandOffTimer::Add(int64_t id, absl::Time due) {
  absl::MutexLock lock(&mu_);
  if (!ids_.insert(id).second) return false;
  heap_.push(Entry{due, id});
  return true;
}

std::vector<int64_t> HandOffTimer::WaitDue(size_t max) {
  absl::MutexLock lock(&mu_);
  const uint64_t gen = generation_;
  while (generation_ == gen && !stopped_) {
    const absl::Time now = clock_.Now();
    if (!heap_.empty() && heap_.top().due <= now) return PopDueLocked(now, max);
    // Only an earlier entry matters: waking on every Add would wake this thread thousands
    // of times during one claim that adds fires due seconds from now.
    const absl::Time top = heap_.empty() ? absl::InfiniteFuture() : heap_.top().due;
    auto changed = [this, top, gen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return generation_ != gen || (!heap_.empty() && heap_.top().due < top);
    };
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&changed), top);
  }
  return {};
}

std::vector<int64_t> HandOffTimer::PopDue(absl::Time now, size_t max) {
  absl::MutexLock lock(&mu_);
  return PopDueLocked(now, max);
}

std::vector<int64_t> HandOffTimer::PopDueLocked(absl::Time now, size_t max) {
  std::vector<int64_t> out;
  while (!heap_.empty() && heap_.top().due <= now && out.size() < max) {
    out.push_back(heap_.top().id);
    ids_.erase(heap_.top().id);
    heap_.pop();
  }
  return out;
}

void HandOffTimer::Clear() {
  absl::MutexLock lock(&mu_);
  heap_ = {};
  ids_.clear();
  ++generation_;
}

void HandOffTimer::WakeUp() {
  absl::MutexLock lock(&mu_);
  ++generation_;
}

void HandOffTimer::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  ++generation_;
}

size_t HandOffTimer::size() const {
  absl::MutexLock lock(&mu_);
  return heap_.size();
}

}  // namespace jobwheel::scheduler
