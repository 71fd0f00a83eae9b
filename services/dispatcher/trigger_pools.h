#ifndef JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_POOLS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_POOLS_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "services/dispatcher/work_pool.h"

namespace jobwheel::dispatcher {

enum class TriggerPool { kFast, kSlow };
const char* TriggerPoolName(TriggerPool pool);

// XXL-JOB's JobTriggerPoolHelper: trigger calls run on a fast pool, except for jobs whose
// calls took longer than `slow_threshold` more than `slow_limit` times in the current minute
// (by the injected clock): those go to the slow pool so they cannot starve the others. The
// counts start afresh every minute. Thread-safe; Shutdown() runs queued work, then joins.
class TriggerPools {
 public:
  struct Options {
    int fast_threads = 8;
    int slow_threads = 4;
    absl::Duration slow_threshold = absl::Milliseconds(500);
    int slow_limit = 10;
  };
  // Observers (may be null): a finished task's duration per pool, queue depth per pool.
  using LatencyObserver = std::function<void(TriggerPool, absl::Duration)>;
  using DepthObserver = std::function<void(TriggerPool, size_t)>;

  TriggerPools(Clock& clock, Options options, LatencyObserver latency = nullptr,
               DepthObserver depth = nullptr);
  ~TriggerPools();

  // Queues `task` (one trigger call) for `job_id` on the pool the job belongs to now.
  // Returns the pool, or nullopt-like false through `accepted` when shutting down.
  TriggerPool Submit(int64_t job_id, std::function<void()> task, bool* accepted = nullptr);
  // The pool a task of `job_id` would go to now.
  TriggerPool PoolFor(int64_t job_id) const;
  void Shutdown();

 private:
  void Record(int64_t job_id, absl::Duration took);

  Clock& clock_;
  const Options options_;
  const LatencyObserver latency_;
  std::unique_ptr<WorkPool> fast_;
  std::unique_ptr<WorkPool> slow_;

  mutable absl::Mutex mu_;
  int64_t minute_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int64_t, int> slow_counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_POOLS_H_
