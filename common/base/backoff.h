#ifndef JOBWHEEL_COMMON_BASE_BACKOFF_H_
#define JOBWHEEL_COMMON_BASE_BACKOFF_H_

#include "absl/random/bit_gen_ref.h"
#include "absl/time/time.h"

namespace jobwheel {

// Exponential backoff with jitter for reconnect and retry loops. After each failure the step
// doubles from `initial` up to `max`; the wait is uniform in [step/2, step] so that many
// clients failing together do not come back together. Not thread-safe.
class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max);

  // The wait after one more failure; `cap` lowers the step's ceiling for this call (e.g. while
  // flushing at shutdown).
  absl::Duration Next(absl::BitGenRef gen, absl::Duration cap = absl::InfiniteDuration());
  // After a success: the next failure waits about `initial` again.
  void Reset();

  int failures() const { return failures_; }
  // The step the last Next() drew from (zero before any failure).
  absl::Duration step() const { return step_; }

 private:
  absl::Duration initial_;
  absl::Duration max_;
  absl::Duration step_ = absl::ZeroDuration();
  int failures_ = 0;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_BACKOFF_H_
