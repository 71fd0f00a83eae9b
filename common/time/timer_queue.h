#ifndef JOBWHEEL_COMMON_TIME_TIMER_QUEUE_H_
#define JOBWHEEL_COMMON_TIME_TIMER_QUEUE_H_

#include <cstdint>
#include <queue>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"

namespace jobwheel {

// Ids ordered by due time, to the millisecond (the scheduler's fires until their hand-off,
// the dispatcher's runs until their trigger). One thread blocks in WaitDue() until the
// earliest entry is due. An id is held at most once. Thread-safe.
//
// Stop() ends the queue's waits for good: a waiter that has not started waiting yet when Stop
// is called returns at once as well (WakeUp only wakes a waiter that is already waiting).
class TimerQueue {
 public:
  // Returns false when the id is already queued.
  bool Add(int64_t id, absl::Time due);
  // Whether the id is queued.
  bool Contains(int64_t id) const;
  // Blocks until at least one entry is due at `clock`'s now (or WakeUp is called / the queue is
  // cleared / stopped / the clock reaches `give_up`), then returns all due ids (at most `max`),
  // earliest first. Empty on wake-up, stop and give-up. The wait itself goes through the clock,
  // so a simulated clock moving past the earliest due time (or `give_up`) wakes the waiter.
  std::vector<int64_t> WaitDue(Clock& clock, size_t max,
                               absl::Time give_up = absl::InfiniteFuture());
  // Returns all ids due at `now` without blocking (for tests and draining).
  std::vector<int64_t> PopDue(absl::Time now, size_t max);
  // Drops everything (leadership lost) and wakes the waiter.
  void Clear();
  // Wakes a blocked WaitDue (it returns empty); a WaitDue that starts later waits as usual.
  void WakeUp();
  // Shutdown: wakes a blocked WaitDue, and every WaitDue from now on returns at once, empty
  // (also one called after Stop, so a waiter cannot miss it by starting to wait late).
  // Entries stay; PopDue still returns them.
  void Stop();
  bool stopped() const;
  size_t size() const;

 private:
  struct Entry {
    absl::Time due;
    int64_t id;
    bool operator>(const Entry& o) const { return due > o.due || (due == o.due && id > o.id); }
  };
  std::vector<int64_t> PopDueLocked(absl::Time now, size_t max) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> ids_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_TIME_TIMER_QUEUE_H_
