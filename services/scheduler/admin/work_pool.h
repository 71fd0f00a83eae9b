#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_WORK_POOL_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_WORK_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace jobwheel::scheduler::admin {

// A fixed set of worker threads with a bounded FIFO queue, for blocking (database) work that
// must stay off gRPC reactor threads. Thread-safe.
class WorkPool {
 public:
  WorkPool(int threads, int max_queued);
  ~WorkPool();  // Calls Shutdown().

  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  void Start();
  // Queues `task`; false when the queue is full or the pool is shut down (the task is dropped).
  bool Submit(std::function<void()> task);
  // Runs every task already queued, then joins the workers. Idempotent.
  void Shutdown();

 private:
  void Loop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  }

  const int threads_;
  const int max_queued_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;  // Touched only by Start/Shutdown.
  absl::Mutex lifecycle_mu_;          // Serializes Start and Shutdown.
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_WORK_POOL_H_
