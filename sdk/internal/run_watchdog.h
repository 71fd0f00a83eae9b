#ifndef JOBWHEEL_SDK_INTERNAL_RUN_WATCHDOG_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_WATCHDOG_H_

#include <cstdint>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "sdk/internal/run_results.h"
#include "sdk/internal/run_state.h"

namespace jobwheel::sdk {

// Enforces running runs' timeouts and cancel graces on the injected Clock: a run past its
// deadline is cancelled TIMED_OUT; a cancelled run whose handler has not returned
// `cancel_grace` after the cancel is reported then (its handler's later result is dropped).
// Looks only at the runs it is told to watch (running with a deadline, or cancelled), so a
// busy executor does not scan thousands of runs every tick; checks them at their next due
// time, at least every `interval` while it watches any. Shares the RunManager's mutex, which
// guards the runs' state. Owns its thread (Start/Stop).
class RunWatchdog {
 public:
  RunWatchdog(absl::Mutex& mu, Clock& clock, RunResults& results, absl::Duration cancel_grace,
              absl::Duration interval);
  ~RunWatchdog();  // Stop().
  RunWatchdog(const RunWatchdog&) = delete;
  RunWatchdog& operator=(const RunWatchdog&) = delete;

  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Joins the thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Has the watchdog look at a running run (it has a deadline, or was cancelled).
  void Watch(const std::shared_ptr<RunState>& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The run ended.
  void Unwatch(const RunState& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 private:
  void Loop();

  absl::Mutex& mu_;
  Clock& clock_;
  RunResults& results_;
  const absl::Duration cancel_grace_;
  const absl::Duration interval_;
  absl::flat_hash_map<int64_t, std::shared_ptr<RunState>> watched_ ABSL_GUARDED_BY(mu_);
  bool wake_ ABSL_GUARDED_BY(mu_) = false;  // Something to look at (a new watched run).
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_WATCHDOG_H_
