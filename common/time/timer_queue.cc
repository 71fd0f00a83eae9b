#include "common/time/timer_queue.h"

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

size_t TimerQueue::size() const {
  absl::MutexLock lock(&mu_);
  return heap_.size();
}

}  // namespace jobwheel
