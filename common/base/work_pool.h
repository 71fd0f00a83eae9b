#ifndef JOBWHEEL_COMMON_BASE_WORK_POOL_H_
#define JOBWHEEL_COMMON_BASE_WORK_POOL_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace jobwheel {

// A fixed set of worker threads draining a FIFO queue: blocking (database) work kept off gRPC
// reactor threads. `max_queue` bounds the queue (0: unbounded) and Submit refuses work beyond
// it; `depth_observer` sees the queue length after every change. The workers start at
// construction; Shutdown() (idempotent, joining; also the destructor) runs the work already
// queued, then stops. Thread-safe.
class WorkPool {
 public:
  WorkPool(int threads, size_t max_queue = 0, std::function<void(size_t)> depth_observer = nullptr);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Queues `task`; false when the queue is full or the pool is shutting down (`task` is not
  // run).
  bool Submit(std::function<void()> task);
  // Queues `task` even when the queue is full, for work that must run (like closing a
  // stream); after Shutdown it runs on a new detached thread.
  void SubmitMustRun(std::function<void()> task);
  size_t depth() const;
  void Shutdown();

 private:
  void Worker();

  const size_t max_queue_;
  const std::function<void(size_t)> depth_observer_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex join_mu_;  // Serializes Shutdown's join.
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_WORK_POOL_H_
