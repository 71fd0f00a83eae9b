#include "services/scheduler/admission_pacer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace jobwheel::scheduler {

void AdmissionPacer::Advance(absl::Time now) {
  if (second_start_ == absl::InfinitePast()) {
    second_start_ = now;
    return;
  }
  const absl::Duration elapsed = now - second_start_;
  if (elapsed < absl::Seconds(1)) return;
  const bool lagging = second_lateness_ > options_.lag_limit;
  const bool stalled = second_fires_ == 0 && (lagging || second_failed_);
  // Nothing went while work waited (an outage, or a hand-off slower than a second): it says
  // nothing about the capacity nor about the trend, which goes on with the next second that
  // hands off. The backlog an outage leaves is judged once the hand-off works again.
  if (!stalled) Judge(elapsed, lagging);
  if (now - std::max(last_held_back_, overload_seen_) > options_.shed_hold) overloaded_ = false;
  second_start_ = now;
  second_fires_ = 0;
  second_lateness_ = absl::ZeroDuration();
  second_least_late_ = absl::InfiniteDuration();
  second_held_back_ = false;
  second_failed_ = false;
}

void AdmissionPacer::Judge(absl::Duration elapsed, bool lagging) {
  const double handed_off = second_fires_ / absl::ToDoubleSeconds(elapsed);
  // What the hand-off has shown it absorbs: its best second of the last few (a stall of a
  // second or two, which hands off little, does not make it look smaller).
  recent_[recent_next_] = handed_off;
  recent_next_ = (recent_next_ + 1) % kRecentSeconds;
  const double best = *std::max_element(recent_, recent_ + kRecentSeconds);
  lagging_seconds_ = lagging ? lagging_seconds_ + 1 : 0;
  calm_seconds_ = lagging_seconds_ == 0 && !second_held_back_ ? calm_seconds_ + 1 : 0;
  if (lagging_seconds_ >= options_.lagging_seconds) {
    // Behind: admit what the hand-off absorbs.
    rate_ = std::max(options_.min_rate, best * options_.backoff);
  } else if (lagging_seconds_ > 0) {
    // One slow second (a slow commit, a busy core): wait and see.
  } else if (rate_ > 0 && calm_seconds_ >= options_.calm_seconds) {
    // Neither behind nor held back for a while: the load is under the capacity.
    rate_ = 0;
    overloaded_ = false;
  } else if (rate_ > 0) {
    // Keeping up: probe for more while the budget holds the claim back; otherwise stay ahead
    // of what is handed off.
    rate_ =
        second_held_back_ ? rate_ * options_.growth : std::max(rate_, handed_off * options_.growth);
  }
  // The trend: the lag of consecutive lagging seconds (stalled ones left out), read from the
  // least late hand-off of each second — the youngest fires going out. Fires requeued after a
  // failed hand-off come back older than the queue around them: they raise a second's latest
  // hand-off but not its least late one, so they do not pass for a growing backlog. Not shrinking
  // over trend_seconds means overload; shrinking, a backlog being drained. A second with failed
  // hand-offs that handed off some counts as any other: a database slowed down by the load makes
  // some hand-offs time out, and that is overload too.
  const int span = std::clamp(options_.trend_seconds, 1, kMaxTrendSeconds);
  if (!lagging) {
    trend_size_ = 0;
    return;
  }
  if (trend_size_ == span + 1) {
    std::copy(trend_ + 1, trend_ + trend_size_, trend_);
    --trend_size_;
  }
  trend_[trend_size_++] = second_least_late_;
  if (trend_size_ == span + 1 && trend_[span] >= trend_[0]) {
    overloaded_ = true;
    overload_seen_ = second_start_ + elapsed;
  }
}

void AdmissionPacer::OnHandOff(absl::Time now, int64_t fires, absl::Duration lateness) {
  Advance(now);
  second_fires_ += fires;
  second_lateness_ = std::max(second_lateness_, lateness);
  if (fires > 0) second_least_late_ = std::min(second_least_late_, lateness);
}

int64_t AdmissionPacer::Budget(absl::Time now, int64_t held) {
  Advance(now);
  if (rate_ <= 0) return std::numeric_limits<int64_t>::max();
  const double allowed = rate_ * absl::ToDoubleSeconds(options_.window);
  return std::max<int64_t>(0, static_cast<int64_t>(std::llround(allowed)) - held);
}

void AdmissionPacer::OnHandOffFailed(absl::Time now) {
  Advance(now);
  second_failed_ = true;
}

void AdmissionPacer::OnHeldBack(absl::Time now) {
  Advance(now);
  second_held_back_ = true;
  last_held_back_ = now;
}

bool AdmissionPacer::Shedding(absl::Time now) const {
  return overloaded_ && now - last_held_back_ <= options_.shed_hold;
}

void AdmissionPacer::Reset() {
  rate_ = 0;
  second_start_ = absl::InfinitePast();
  second_fires_ = 0;
  second_lateness_ = absl::ZeroDuration();
  second_least_late_ = absl::InfiniteDuration();
  second_held_back_ = false;
  second_failed_ = false;
  trend_size_ = 0;
  overloaded_ = false;
  overload_seen_ = absl::InfinitePast();
  last_held_back_ = absl::InfinitePast();
  lagging_seconds_ = 0;
  calm_seconds_ = 0;
  std::fill(recent_, recent_ + kRecentSeconds, 0.0);
  recent_next_ = 0;
}

}  // namespace jobwheel::scheduler
