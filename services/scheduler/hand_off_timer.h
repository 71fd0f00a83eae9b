#ifndef JOBWHEEL_SERVICES_SCHEDULER_HAND_OFF_TIMER_H_
#define JOBWHEEL_SERVICES_SCHEDULER_HAND_OFF_TIMER_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"

namespace jobwheel::scheduler {

// Held fire ids ordered by hand-off time, waited on through an injected Clock (TimerQueue's
// shape, but a simulated clock moves it on). One thread blocks in WaitDue() until the earliest
// entry is due. An id is held at most once. Thread-safe.
class HandOffTimer {
 public:
  explicit HandOffTimer(Clock& clock) : clock_(clock) {}

  // Returns false when the id is already queued.
  bool Add(int64_t id, absl::Time due);
  // Blocks until at least one entry is due on the clock (or WakeUp/Clear is called), then
  // returns the due ids (at most `max`), earliest first. Empty on wake-up.
  std::vector<int64_t> WaitDue(size_t max);
  // Returns the ids due at `now` without blocking.
  std::vector<int64_t> PopDue(absl::Time now, size_t max);
  // Drops everything (leadership lost) and wakes the waiter.
  void Clear();
  // Wakes a blocked WaitDue.
  void WakeUp();
  // Wakes a blocked WaitDue, and every later WaitDue returns at once, empty (shutdown).
  void Stop();
  size_t size() const;

 private:
  struct Entry {
    absl::Time due;
    int64_t id;
    bool operator>(const Entry& o) const { return due > o.due || (due == o.due && id > o.id); }
  };
  std::vector<int64_t> PopDueLocked(absl::Time now, size_t max) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock& clock_;
  mutable absl::Mutex mu_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> ids_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_HAND_OFF_TIMER_H_
