#include "common/base/work_pool.h"

#include <utility>

namespace jobwheel {

WorkPool::WorkPool(int threads, size_t max_queue, std::function<void(size_t)> depth_observer)
    : max_queue_(max_queue), depth_observer_(std::move(depth_observer)) {
  const int n = threads < 1 ? 1 : threads;
  absl::MutexLock lock(&join_mu_);  // Only for the annotation: nothing else sees us yet.
  threads_.reserve(n);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Worker(); });
}

WorkPool::~WorkPool() { Shutdown(); }

bool WorkPool::Submit(std::function<void()> task) {
  size_t depth;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    if (max_queue_ > 0 && queue_.size() >= max_queue_) return false;
    queue_.push_back(std::move(task));
    depth = queue_.size();
  }
  if (depth_observer_) depth_observer_(depth);
  return true;
}

void WorkPool::SubmitMustRun(std::function<void()> task) {
  size_t depth;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      std::thread(std::move(task)).detach();
      return;
    }
    queue_.push_back(std::move(task));
    depth = queue_.size();
  }
  if (depth_observer_) depth_observer_(depth);
}

size_t WorkPool::depth() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

void WorkPool::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  absl::MutexLock lock(&join_mu_);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WorkPool::Worker() {
  while (true) {
    std::function<void()> task;
    size_t depth;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // Stopping and drained.
      task = std::move(queue_.front());
      queue_.pop_front();
      depth = queue_.size();
    }
    if (depth_observer_) depth_observer_(depth);
    task();
  }
}

}  // namespace jobwheel
