#ifndef JOBWHEEL_SERVICES_REGISTRY_WORK_POOL_H_
#define JOBWHEEL_SERVICES_REGISTRY_WORK_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace jobwheel::registry {

// A fixed set of threads running blocking work (database calls) for gRPC
// reactors, with a bounded queue. Thread-safe. Shutdown() (idempotent, joining)
// runs what is queued first.
class WorkPool {
 public:
  WorkPool(int threads, size_t max_queue);
  ~WorkPool();

  // Queues `fn`; false when the queue is full or the pool is shut down (`fn` is
  // not run).
  bool Submit(std::function<void()> fn);
  // Queues `fn` even when the queue is full (for work that must run, like
  // closing a stream). Runs it on a new detached thread when the pool is shut
  // down.
  void SubmitMustRun(std::function<void()> fn);
  void Shutdown();

 private:
  void Worker();

  const size_t max_queue_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_WORK_POOL_H_
