#ifndef JOBWHEEL_SERVICES_SCHEDULER_SCHEDULE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_SCHEDULE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/cron.h"

namespace jobwheel::scheduler {

// A validated job schedule: computes fire times for CRON, FIX_RATE and NONE. A FIX_DELAY
// schedule has no fire times of its own: its first fire is at its start time (or at once), each
// next one `delay()` after the previous run ended (the leader's monitors decide when). Immutable.
class Schedule {
 public:
  // INVALID_ARGUMENT naming the field (prefixed with `field_prefix`, e.g. "job.schedule").
  // `created` anchors a FIX_RATE schedule without a start time.
  static absl::StatusOr<Schedule> FromProto(const jobwheel::v1::Schedule& proto, absl::Time created,
                                            absl::string_view field_prefix = "schedule");

  // The first fire time strictly after `after`; nullopt when the schedule never fires again
  // (NONE, or a cron expression past its last year). FIX_DELAY: the chain's first fire, the
  // start time when it is after `after`, else `after` itself.
  std::optional<absl::Time> NextAfter(absl::Time after) const;

  // Up to `n` successive fire times strictly after `after` (none for FIX_DELAY).
  std::vector<absl::Time> Preview(absl::Time after, int n) const;

  // In words, for previews: "delay 300ms after each run ends" (FIX_DELAY), else empty.
  std::string Describe() const;

  bool fires_on_its_own() const { return kind_ != Kind::kNone; }
  bool fixed_delay() const { return kind_ == Kind::kFixDelay; }
  // FIX_DELAY: the wait after a run ends (zero otherwise).
  absl::Duration delay() const {
    return kind_ == Kind::kFixDelay ? interval_ : absl::ZeroDuration();
  }
  // TRIGGER_TYPE_CRON or TRIGGER_TYPE_FIX_RATE (also FIX_DELAY; UNSPECIFIED for NONE).
  jobwheel::v1::TriggerType trigger_type() const;

 private:
  enum class Kind { kCron, kFixRate, kFixDelay, kNone };
  Schedule(Kind kind, std::optional<CronExpression> cron, absl::Time start, absl::Duration interval)
      : kind_(kind), cron_(std::move(cron)), start_(start), interval_(interval) {}

  Kind kind_;
  std::optional<CronExpression> cron_;
  absl::Time start_;
  absl::Duration interval_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_SCHEDULE_H_
