#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMISSION_PACER_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMISSION_PACER_H_

#include <cstdint>

#include "absl/time/time.h"

namespace jobwheel::scheduler {

// How many fires the claim may admit, paced by what the hand-off absorbs (back-pressure, not a
// fixed lead). Until the hand-off falls behind, admission is unlimited. Once the hand-offs came
// later than `lag_limit` past their hand-off time in `lagging_seconds` seconds in a row (one
// slow commit or busy core does not count), the admission rate becomes the most the hand-off
// absorbed in a second of the last five, times `backoff`; while the claim is held at that rate
// and the hand-off keeps up, the rate grows by `growth` a second (it probes for more); while the
// claim is not held, it stays at least `growth` times what is handed off; after `calm_seconds`
// seconds neither behind nor held back, admission is unlimited again. The claim may hold
// `rate × window` fires (the fires held count against it), so the fires due in any coming second
// stay about `rate`. A claim held back by the budget makes the engine shed (see Shedding). Pure
// arithmetic on the times it is given; not thread-safe (FireEngine guards it).
class AdmissionPacer {
 public:
  struct Options {
    // How far ahead a claimed job's fires are held (FireEngine: preread_window + claim_ahead).
    absl::Duration window = absl::Seconds(10);
    // A hand-off later than this past its hand-off time means the hand-off is behind (the
    // dispatch lead is 300 ms: later than that, fires start late), once it happened in
    // `lagging_seconds` seconds in a row.
    absl::Duration lag_limit = absl::Milliseconds(500);
    int lagging_seconds = 2;
    double backoff = 0.9;
    double growth = 1.1;
    int calm_seconds = 10;
    // The admission rate never goes below this (fires/s).
    double min_rate = 50;
    // How long after the claim was last held back the engine still sheds.
    absl::Duration shed_hold = absl::Seconds(10);
  };

  explicit AdmissionPacer(Options options) : options_(options) {}

  // `fires` handed off at `now`, the latest of them `lateness` past its hand-off time.
  void OnHandOff(absl::Time now, int64_t fires, absl::Duration lateness);
  // The fires the claim may add at `now` with `held` fires held (INT64_MAX: unlimited).
  int64_t Budget(absl::Time now, int64_t held);
  // The claim stopped at the budget at `now`.
  void OnHeldBack(absl::Time now);
  // Whether the claim was held back within `shed_hold` of `now`: due times it finds already
  // past are then shed through the jobs' misfire strategies (the capacity is spoken for).
  bool Shedding(absl::Time now) const;
  // The admission rate in fires/s (0: unlimited).
  double rate() const { return rate_; }
  // A new term: unlimited again, nothing measured.
  void Reset();

 private:
  // Closes the measuring second(s) before `now`.
  void Advance(absl::Time now);

  const Options options_;
  double rate_ = 0;  // 0: unlimited.
  absl::Time second_start_ = absl::InfinitePast();
  int64_t second_fires_ = 0;
  absl::Duration second_lateness_ = absl::ZeroDuration();
  bool second_held_back_ = false;
  absl::Time last_held_back_ = absl::InfinitePast();
  int lagging_seconds_ = 0;
  int calm_seconds_ = 0;
  static constexpr int kRecentSeconds = 5;
  double recent_[kRecentSeconds] = {};
  int recent_next_ = 0;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMISSION_PACER_H_
