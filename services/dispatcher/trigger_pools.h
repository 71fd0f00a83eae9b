#ifndef JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_POOLS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_POOLS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"

namespace jobwheel::dispatcher {

enum class TriggerPool { kFast, kSlow };
const char* TriggerPoolName(TriggerPool pool);

// XXL-JOB's JobTriggerPoolHelper: trigger calls run on a fast pool, except for jobs whose
// calls took longer than `slow_threshold` more than `slow_limit` times in the current minute
// (by the injected clock): those go to the slow pool so they cannot starve the others. The
// counts start afresh every minute.
//
// The pools hold no threads: SubmitAsync() starts a non-blocking call (an asynchronous RPC) at
// once on the caller's thread, at most `*_max_in_flight` per pool at a time (the rest queue and
// start as earlier calls finish), so no thread waits for an executor. SubmitBatchAsync() is
// SubmitAsync for one call carrying the runs of several jobs (RunBatch): it takes one slot of
// the pool it is given, and its duration counts for each of its jobs. Thread-safe; Shutdown()
// waits for the calls in flight and the queued ones.
//
// Bounded, and fair between apps (issue 24): one app's calls take at most
// `max_in_flight_per_app` of a pool's slots, so executors slower than the offered rate hold
// back their own app's calls, not the others'; waiting calls start app by app in turn; and a
// pool queues at most `max_waiting_runs` runs: past that SubmitAppBatchAsync refuses the call
// (RESOURCE_EXHAUSTED naming the pool and the queue), and the caller fails its runs with that
// message instead of queueing without bound.
class TriggerPools {
 public:
  struct Options {
    absl::Duration slow_threshold = absl::Milliseconds(500);
    int slow_limit = 10;
    // SubmitAsync: calls in flight at once, per pool.
    int fast_max_in_flight = 512;
    int slow_max_in_flight = 64;
    // Of those, at most this share per app (at least one slot) for SubmitAppBatchAsync.
    double max_in_flight_per_app = 0.5;
    // Runs of the calls waiting for a slot, per pool (at 10,000 fires/s, 3 s of them).
    size_t max_waiting_runs = 30000;
  };
  // Starts one call; must run `done` exactly once when the call has finished (any thread).
  using AsyncTask = std::function<void(std::function<void()> done)>;
  // Observers (may be null): a finished task's duration per pool; the calls waiting in a pool
  // and the runs they carry, whenever they change.
  using LatencyObserver = std::function<void(TriggerPool, absl::Duration)>;
  using DepthObserver = std::function<void(TriggerPool, size_t calls, size_t runs)>;

  TriggerPools(Clock& clock, Options options, LatencyObserver latency = nullptr,
               DepthObserver depth = nullptr);
  ~TriggerPools();

  // Starts `start` (one trigger call of `job_id`) now if the pool the job belongs to has room,
  // else when it has. Returns the pool; `*accepted` (when given) is false when shutting down.
  TriggerPool SubmitAsync(int64_t job_id, AsyncTask start, bool* accepted = nullptr);
  // One call for several jobs on `pool` (the caller groups jobs by PoolFor): starts now if
  // the pool has room, else when it has. When it finishes, its duration is recorded once for
  // each distinct job of `job_ids` (the slow-pool classification) and once as the pool's
  // latency. `accepted` as SubmitAsync.
  void SubmitBatchAsync(TriggerPool pool, std::vector<int64_t> job_ids, AsyncTask start,
                        bool* accepted = nullptr);
  // SubmitBatchAsync for a call of `app` carrying `runs` runs. OK: started or queued;
  // UNAVAILABLE: shutting down; RESOURCE_EXHAUSTED: the pool's queue is full (`start` never
  // runs in either case).
  absl::Status SubmitAppBatchAsync(TriggerPool pool, const std::string& app, size_t runs,
                                   std::vector<int64_t> job_ids, AsyncTask start);
  // The pool a task of `job_id` would go to now.
  TriggerPool PoolFor(int64_t job_id) const;
  void Shutdown();

 private:
  // `job_ids`: distinct.
  void Record(const std::vector<int64_t>& job_ids, absl::Duration took);
  struct Waiting {
    std::vector<int64_t> job_ids;
    size_t runs = 0;
    AsyncTask start;
  };
  struct AppLane {
    int in_flight = 0;
    std::deque<Waiting> waiting;
  };
  struct Lane {  // SubmitAsync's bookkeeping for one pool.
    int in_flight = 0;
    size_t waiting_runs = 0;
    size_t waiting_calls = 0;
    absl::flat_hash_map<std::string, AppLane> apps;
    // The apps with calls waiting, each once, in turn.
    std::deque<std::string> turn;
  };
  // Starts `start` for `job_ids` of `app` on `pool` (a slot is taken already).
  void StartAsync(TriggerPool pool, std::string app, std::vector<int64_t> job_ids, AsyncTask start);
  void FinishAsync(TriggerPool pool, const std::string& app);
  int MaxInFlight(TriggerPool pool) const;
  int MaxPerApp(TriggerPool pool, const std::string& app) const;
  Lane& LaneOf(TriggerPool pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(async_mu_) {
    return pool == TriggerPool::kSlow ? slow_lane_ : fast_lane_;
  }

  Clock& clock_;
  const Options options_;
  const LatencyObserver latency_;
  const DepthObserver depth_;
  absl::Mutex async_mu_;
  Lane fast_lane_ ABSL_GUARDED_BY(async_mu_);
  Lane slow_lane_ ABSL_GUARDED_BY(async_mu_);
  bool stopping_ ABSL_GUARDED_BY(async_mu_) = false;

  mutable absl::Mutex mu_;
  int64_t minute_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int64_t, int> slow_counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_POOLS_H_
