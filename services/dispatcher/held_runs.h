#ifndef JOBWHEEL_SERVICES_DISPATCHER_HELD_RUNS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_HELD_RUNS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/routed_run.h"

namespace jobwheel::dispatcher {

// Runs recorded ahead of their time (a fire handed over before it is due), held until that
// time on `clock` and then handed to `on_due` on the timer's own thread, never earlier. The
// timer is keyed by due time: the runs of one due time (a trigger tick) go out together, in
// the order they were held, and the thread wakes only for the earliest due time.
//
// Thread-safe. Start() before use. Shutdown() (idempotent, joining) stops taking runs; the
// held ones still go when due, and whatever is left once `max_hold` + 1s has passed on the
// clock since Shutdown (every run is due by then unless the clock is not the one they were
// held on) goes early rather than never.
class HeldRuns {
 public:
  // Receives the runs that are due, on the timer's thread; must not block for long (the next
  // due time waits for it).
  using DueFn = std::function<void(std::vector<RoutedRun>)>;

  HeldRuns(Clock& clock, absl::Duration max_hold, DispatcherMetrics& metrics, DueFn on_due);
  ~HeldRuns();

  void Start();
  void Shutdown();

  // Holds each run until its time. After Shutdown holds nothing and returns false, leaving
  // `runs` to the caller.
  bool Hold(std::vector<std::pair<RoutedRun, absl::Time>>& runs);

  // Runs held now.
  size_t size() const;
  // Whether Shutdown has been called.
  bool stopping() const;

 private:
  void Loop();
  // Takes every run due by `now` (every run when `all`), earliest first.
  std::vector<RoutedRun> TakeDueLocked(absl::Time now, bool all) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock& clock_;
  const absl::Duration max_hold_;
  DispatcherMetrics& metrics_;
  const DueFn on_due_;

  mutable absl::Mutex mu_;
  std::map<absl::Time, std::vector<RoutedRun>> by_due_ ABSL_GUARDED_BY(mu_);
  size_t count_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Once stopping: when the runs not yet due go anyway.
  absl::Time give_up_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::thread thread_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_HELD_RUNS_H_
