#include "services/scheduler/admin/work_pool.h"

#include <utility>

namespace jobwheel::scheduler::admin {

WorkPool::WorkPool(int threads, int max_queued)
    : threads_(threads < 1 ? 1 : threads), max_queued_(max_queued < 1 ? 1 : max_queued) {}

WorkPool::~WorkPool() { Shutdown(); }

void WorkPool::Start() {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_) return;
    started_ = true;
  }
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { Loop(); });
}

bool WorkPool::Submit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || static_cast<int>(queue_.size()) >= max_queued_) return false;
  queue_.push_back(std::move(task));
  return true;
}

void WorkPool::Shutdown() {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  bool run_inline = false;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    run_inline = !started_;
  }
  if (run_inline) {
    // Never started: run what was queued so no caller waits forever.
    std::deque<std::function<void()>> left;
    {
      absl::MutexLock lock(&mu_);
      left.swap(queue_);
    }
    for (auto& task : left) task();
    return;
  }
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void WorkPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &WorkPool::HasWorkOrStopping));
      if (queue_.empty()) return;  // Stopping and drained.
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace jobwheel::scheduler::admin
