#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMISSION_PACER_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMISSION_PACER_H_

#include <cstdint>

#include "absl/time/time.h"

namespace jobwheel::scheduler {

// How many fires the claim may admit, paced by what the hand-off absorbs (back-pressure, not a
// fixed lead), and whether the engine sheds. Until the hand-off falls behind, admission is
// unlimited. Once the hand-offs came later than `lag_limit` past their hand-off time in
// `lagging_seconds` seconds in a row (one slow commit or busy core does not count), the admission
// rate becomes the most the hand-off absorbed in a second of the last five, times `backoff`;
// while the claim is held at that rate and the hand-off keeps up, the rate grows by `growth` a
// second (it probes for more); while the claim is not held, it stays at least `growth` times what
// is handed off; after `calm_seconds` seconds neither behind nor held back, admission is unlimited
// again. The claim may hold `rate × window` fires (the fires held count against it), so the fires
// due in any coming second stay about `rate`.
//
// Shedding (see Shedding) keeps the misfire threshold's promise — a fire up to that late still
// fires — wherever it can be kept, and breaks it only where it cannot:
//  - A backlog that shrinks is drained, late, in order: after an outage (the database failing
//    over, a dispatcher unreachable) the hand-off is late, but it absorbs more than is offered, so
//    the lag falls second by second and the fires go out late; only those older than the
//    threshold when they go follow the misfire strategy, as always. Shedding the others would
//    throw away fires the capacity was about to fire.
//  - A backlog that does not shrink is overload: the lag (of each second's least late hand-off)
//    did not fall over `trend_seconds` seconds in a row of lagging hand-offs, so the offered rate
//    is above what the hand-off absorbs and the late fires would reach the threshold anyway, having
//    pushed every fire behind them late too. Only then, and while the claim is held back, the
//    engine sheds: the newest fires go first and the late ones are shed oldest first through their
//    jobs' misfire strategies.
// A stalled second (work waiting, nothing handed off — the outage itself, or hand-offs slower
// than a second) tells nothing about the capacity: it is left out of both judgements (not
// lagging, not a measure of what the hand-off absorbs, not a point of the trend, which goes on
// with the next second that hands off). A failed hand-off makes a second without any hand-off
// stalled even when nothing waited long. Pure arithmetic on the times it is given; not
// thread-safe (FireEngine guards it).
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
    // Shedding starts once the lag did not shrink over this many seconds of lagging hand-offs
    // (at most kMaxTrendSeconds): at 2x the capacity the lag grows half a second a second, a
    // drain at 1.2x the offered rate shrinks it 0.2 s a second.
    int trend_seconds = 3;
  };
  static constexpr int kMaxTrendSeconds = 8;

  explicit AdmissionPacer(Options options) : options_(options) {}

  // `fires` handed off at `now`, the latest of them `lateness` past its hand-off time.
  void OnHandOff(absl::Time now, int64_t fires, absl::Duration lateness);
  // The fires the claim may add at `now` with `held` fires held (INT64_MAX: unlimited).
  int64_t Budget(absl::Time now, int64_t held);
  // A hand-off failed at `now` (the dispatcher or the database out of reach, or too slow).
  void OnHandOffFailed(absl::Time now);
  // The claim stopped at the budget at `now`.
  void OnHeldBack(absl::Time now);
  // Whether the engine sheds at `now`: the backlog did not shrink (overload, see above) and the
  // claim was held back within `shed_hold`. Due times already past are then shed through the
  // jobs' misfire strategies (the capacity is spoken for).
  bool Shedding(absl::Time now) const;
  // Whether the lag was judged growing (overload) and not yet calm again.
  bool overloaded() const { return overloaded_; }
  // The admission rate in fires/s (0: unlimited).
  double rate() const { return rate_; }
  // A new term: unlimited again, nothing measured.
  void Reset();

 private:
  // Closes the measuring second(s) before `now`.
  void Advance(absl::Time now);
  // Judges a closed second in which the hand-off worked (`lagging`: it came late).
  void Judge(absl::Duration elapsed, bool lagging);

  const Options options_;
  double rate_ = 0;  // 0: unlimited.
  absl::Time second_start_ = absl::InfinitePast();
  int64_t second_fires_ = 0;
  absl::Duration second_lateness_ = absl::ZeroDuration();
  // The least late hand-off of the second that carried fires (the trend's measure).
  absl::Duration second_least_late_ = absl::InfiniteDuration();
  bool second_held_back_ = false;
  bool second_failed_ = false;
  // The lag of the last consecutive lagging seconds, oldest first (the trend).
  absl::Duration trend_[kMaxTrendSeconds + 1] = {};
  int trend_size_ = 0;
  bool overloaded_ = false;
  // When the trend last said overload.
  absl::Time overload_seen_ = absl::InfinitePast();
  absl::Time last_held_back_ = absl::InfinitePast();
  int lagging_seconds_ = 0;
  int calm_seconds_ = 0;
  static constexpr int kRecentSeconds = 5;
  double recent_[kRecentSeconds] = {};
  int recent_next_ = 0;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMISSION_PACER_H_
