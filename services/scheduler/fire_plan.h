#ifndef JOBWHEEL_SERVICES_SCHEDULER_FIRE_PLAN_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FIRE_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::scheduler {

// The claim's arithmetic, free of the database and of the clock: given the time, which jobs
// are due, which fire rows a due job gets, where its next fire time moves, and when a held
// fire is handed to a dispatcher.

struct ClaimWindow {
  // Jobs due within this window are claimed.
  absl::Duration preread_window = absl::Seconds(5);
  // A claimed job gets its fires up to preread_window + claim_ahead recorded.
  absl::Duration claim_ahead = absl::Seconds(5);
  // A due time older than this is a misfire and follows the job's misfire strategy.
  absl::Duration misfire_threshold = absl::Seconds(5);
};

// Jobs whose next fire time is at or before this are due.
absl::Time ClaimHorizon(absl::Time now, const ClaimWindow& window);

// One fire row the claim records.
struct PlannedFire {
  int64_t job_id = 0;
  absl::Time scheduled;
  jobwheel::v1::TriggerType trigger_type = jobwheel::v1::TRIGGER_TYPE_UNSPECIFIED;
  // SKIPPED (a DO_NOTHING misfire), else PENDING.
  bool skipped = false;
  std::string reason;
};

// Where a claimed job's next fire time moves (nullopt: it never fires again, or its stored
// schedule is invalid).
struct NextFire {
  int64_t job_id = 0;
  std::optional<absl::Time> next;
};

struct MisfireCount {
  jobwheel::v1::MisfireStrategy strategy = jobwheel::v1::MISFIRE_STRATEGY_UNSPECIFIED;
  int64_t missed = 0;
};

struct ClaimPlan {
  std::vector<PlannedFire> fires;
  // One per claimed job, in the order of the jobs.
  std::vector<NextFire> next;
  std::vector<MisfireCount> misfires;
  // Jobs whose stored schedule does not parse: they are not fired and their next fire time is
  // cleared.
  std::vector<std::pair<int64_t, absl::Status>> invalid;
};

// How many missed fire times a misfire counts before giving up counting.
inline constexpr int64_t kMaxMissedCounted = 100000;

// The fires and next fire times of claimed `jobs` (each with its schedule, create_time,
// next_fire_time and misfire_strategy) at `now`:
//  - due times older than now - misfire_threshold are a misfire: one row at the first of them,
//    a MISFIRE fire (FIRE_ONCE_NOW) or a SKIPPED row of the job's type (DO_NOTHING), whose
//    reason names how many were missed (counting stops at kMaxMissedCounted, and the next
//    fire time then jumps to the first one after the threshold);
//  - every due time from there up to ClaimHorizon + claim_ahead gets a PENDING fire;
//  - the next fire time is the first one after that.
ClaimPlan PlanClaim(const std::vector<jobwheel::v1::Job>& jobs, absl::Time now,
                    const ClaimWindow& window);

// When a fire scheduled at `scheduled` is handed to a dispatcher: `lead` before it, rounded
// down to a multiple of `interval` since the Unix epoch (so one hand-off carries an interval's
// fires); no rounding when either is zero or less.
absl::Time HandOffTime(absl::Time scheduled, absl::Duration lead, absl::Duration interval);

// How late a hand-off at `sent` is: against the hand-off time for schedule-driven fires (CRON,
// FIX_RATE), against the scheduled time for the others (written due now).
absl::Duration HandOffLateness(jobwheel::v1::TriggerType type, absl::Time scheduled,
                               absl::Time sent, absl::Duration lead, absl::Duration interval);

// Failed hand-offs of one fire are counted up to this.
inline constexpr int kMaxHandOffFailures = 5;
// The wait before handing a fire off again after its `failures`-th failed hand-off (1..5):
// 100 ms doubling, 1.6 s at most.
absl::Duration HandOffBackoff(int failures);

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_FIRE_PLAN_H_
