#ifndef JOBWHEEL_SERVICES_DISPATCHER_WORK_POOL_H_
#define JOBWHEEL_SERVICES_DISPATCHER_WORK_POOL_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace jobwheel::dispatcher {

// A fixed set of worker threads draining a FIFO queue. `max_queue` bounds the queue (0 =
// unbounded): Submit refuses work beyond it. `depth_observer` sees the queue length after
// every change. Shutdown() (idempotent, joining) runs the work already queued, then stops.
// Thread-safe.
class WorkPool {
 public:
  WorkPool(std::string name, int threads, size_t max_queue = 0,
           std::function<void(size_t)> depth_observer = nullptr);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // False when the pool is shutting down or its queue is full.
  bool Submit(std::function<void()> task);
  void Shutdown();
  size_t depth() const;

 private:
  void Worker();

  const std::string name_;
  const size_t max_queue_;
  const std::function<void(size_t)> depth_observer_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_WORK_POOL_H_
