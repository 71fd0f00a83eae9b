#include "services/registry/work_pool.h"

#include <utility>

namespace jobwheel::registry {

WorkPool::WorkPool(int threads, size_t max_queue) : max_queue_(max_queue) {
  for (int i = 0; i < (threads < 1 ? 1 : threads); ++i) {
    threads_.emplace_back([this] { Worker(); });
  }
}

WorkPool::~WorkPool() { Shutdown(); }

bool WorkPool::Submit(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || queue_.size() >= max_queue_) return false;
  queue_.push_back(std::move(fn));
  return true;
}

void WorkPool::SubmitMustRun(std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(std::move(fn));
      return;
    }
  }
  std::thread(std::move(fn)).detach();
}

void WorkPool::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void WorkPool::Worker() {
  while (true) {
    std::function<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // Stopping and drained.
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

}  // namespace jobwheel::registry
