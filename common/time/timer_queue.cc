#include "common/time/timer_queue.h"

#include <algorithm>

namespace jobwheel {

bool TimerQueue::Add(int64_t id, absl::Time due) {
  absl::MutexLock lock(&mu_);
  if (!ids_.insert(id).second) return false;
  heap_.push(Entry{due, id});
  return true;
}

bool TimerQueue::Contains(int64_t id) const {
  absl::MutexLock lock(&mu_);
  return ids_.contains(id);
}

std::vector<int64_t> TimerQueue::PopDue(absl::Time now, size_t max) {
  absl::MutexLock lock(&mu_);
  return PopDueLocked(now, max);
}

std::vector<int64_t> TimerQueue::PopDueLocked(absl::Time now, size_t max) {
  std::vector<int64_t> out;
  while (!heap_.empty() && heap_.top().due <= now && out.size() < max) {
    out.push_back(heap_.top().id);
    ids_.erase(heap_.top().id);
    heap_.pop();
  }
  return out;
}

void TimerQueue::Clear() {
  absl::MutexLock lock(&mu_);
  heap_ = {};
  ids_.clear();
  ++generation_;
}

void TimerQueue::WakeUp() {
  absl::MutexLock lock(&mu_);
  ++generation_;
}

void TimerQueue::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  ++generation_;
}

bool TimerQueue::stopped() const {
  absl::MutexLock lock(&mu_);
  return stopped_;
}

size_t TimerQueue::size() const {
  absl::MutexLock lock(&mu_);
  return heap_.size();
}

std::vector<int64_t> TimerQueue::WaitDue(Clock& clock, size_t max, absl::Time give_up) {
  absl::MutexLock lock(&mu_);
  const uint64_t gen = generation_;
  while (generation_ == gen && !stopped_) {
    const absl::Time now = clock.Now();
    if (!heap_.empty() && heap_.top().due <= now) return PopDueLocked(now, max);
    if (now >= give_up) break;
    // Until the earliest due time or give-up, or until an Add of an earlier entry, a Clear or
    // a WakeUp. Only an earlier entry matters: waking on every Add would wake this thread
    // thousands of times during one claim that adds fires due seconds from now.
    const absl::Time top = heap_.empty() ? absl::InfiniteFuture() : heap_.top().due;
    auto changed = [this, top, gen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return generation_ != gen || (!heap_.empty() && heap_.top().due < top);
    };
    clock.AwaitWithDeadline(&mu_, absl::Condition(&changed), std::min(top, give_up));
  }
  return {};
}

}  // namespace jobwheel
