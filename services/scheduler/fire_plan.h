#ifndef JOBWHEEL_SERVICES_SCHEDULER_FIRE_PLAN_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FIRE_PLAN_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/schedule.h"

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
  // Admission (AdmissionPacer): jobs are planned in order while the PENDING fires planned so
  // far are fewer than this; the rest are left out of the plan (as they are, still due).
  int64_t max_pending_fires = std::numeric_limits<int64_t>::max();
  // Shedding (overload: AdmissionPacer::Shedding): every due time already past at `now` is a
  // misfire (the misfire strategy sheds it: one row for the range), not only those older than
  // misfire_threshold, so what is admitted fires on time.
  bool shed_past_due = false;
  // Shedding and past max_pending_fires, a job already behind is not left waiting unrecorded:
  // its due times up to now + shed_span are shed in one row and it waits that long for its turn.
  absl::Duration shed_span = absl::Seconds(5);
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

// A FIX_DELAY job's fire: the job now waits for it (and its runs) to end.
struct DelayChainFire {
  int64_t job_id = 0;
  absl::Time scheduled;
};

struct ClaimPlan {
  std::vector<PlannedFire> fires;
  // The FIX_DELAY jobs among them (their fire is in `fires`, their next fire time cleared).
  std::vector<DelayChainFire> delay_chains;
  // One per claimed job, in the order of the jobs.
  std::vector<NextFire> next;
  std::vector<MisfireCount> misfires;
  // Jobs whose stored schedule does not parse: they are not fired and their next fire time is
  // cleared.
  std::vector<std::pair<int64_t, absl::Status>> invalid;
  // Jobs left out at max_pending_fires (they stay due for a later claim).
  int64_t held_back = 0;
  // Due times shed under load (shed_past_due: past, but not older than misfire_threshold).
  int64_t shed = 0;
};

// How many missed fire times a misfire counts before giving up counting.
inline constexpr int64_t kMaxMissedCounted = 100000;

// A walk over consecutive due times of a schedule: from `first` (one of its due times) while
// before `before`, at most kMaxMissedCounted of them.
struct DueWalk {
  int64_t count = 0;
  absl::Time last;  // The last one walked (`first` when none was).
  // How many of them are at or after the `mark` the walk was given.
  int64_t at_or_after_mark = 0;
  // The due time the walk stopped at (not walked): at or after `before`, beyond the count limit,
  // or none.
  std::optional<absl::Time> stopped_at;
};
DueWalk WalkDueTimes(const Schedule& schedule, absl::Time first, absl::Time before,
                     absl::Time mark = absl::InfinitePast());

// "misfire: N fire(s) from FIRST to LAST": how every record of skipped due times begins.
std::string MisfireRange(int64_t count, absl::Time first, absl::Time last);
// The N of a reason that begins as MisfireRange writes it; nullopt for any other reason.
std::optional<int64_t> MisfireRangeCount(absl::string_view reason);
// A reason read back whole: N, FIRST and LAST as MisfireRange wrote them (text after LAST, such
// as " skipped (DO_NOTHING)", is ignored); nullopt for any other reason or a malformed range
// (count < 1, a bad time, first after last).
struct MisfireRangeParts {
  int64_t count = 0;
  absl::Time first;
  absl::Time last;
};
std::optional<MisfireRangeParts> ParseMisfireRange(absl::string_view reason);

// The fires and next fire times of claimed `jobs` (each with its schedule, create_time,
// next_fire_time and misfire_strategy) at `now`:
//  - due times older than now - misfire_threshold are a misfire: one row at the first of them,
//    a MISFIRE fire (FIRE_ONCE_NOW) or a SKIPPED row of the job's type (DO_NOTHING), whose
//    reason names how many were missed (counting stops at kMaxMissedCounted, and the next
//    fire time then jumps to the first one after the threshold);
//    a FIRE_ONCE_NOW job whose first missed time is at or before `fired_once_through[job]`
//    (it fired once this term for late fires up to there, e.g. those a takeover found pending:
//    the same outage) gets a SKIPPED row instead, its misfire counted all the same;
//  - every due time from there up to ClaimHorizon + claim_ahead gets a PENDING fire;
//  - the next fire time is the first one after that.
// With `window.shed_past_due`, "older than now - misfire_threshold" above reads "before now" (the
// reason says the fires were shed under load). Jobs are planned in order until their PENDING fires
// reach `window.max_pending_fires` (the first job always); past it, with shed_past_due, a job
// behind (next fire time before now, not FIX_DELAY) gets its misfire row for every due time before
// now + shed_span and no PENDING fire (a FIRE_ONCE_NOW job still its one MISFIRE fire), and the
// others are counted in held_back and have no entry in `next` (the store leaves them as they are).
// A FIX_DELAY job gets one PENDING fire at its next fire time, or at `now` when that has passed
// (it never misfires: nothing piles up while it waits), and no next fire time: the monitors set
// it once that fire's runs have ended (see FireStore::AdvanceDelayChains).
ClaimPlan PlanClaim(const std::vector<jobwheel::v1::Job>& jobs, absl::Time now,
                    const ClaimWindow& window,
                    const absl::flat_hash_map<int64_t, absl::Time>& fired_once_through = {});

// --- Late pending fires ---
// Fires recorded PENDING that are handed off late: those an old leader had claimed, found by a
// new one on takeover, and those held back through an outage (database or dispatcher
// unreachable). A late one follows its job's misfire strategy, as a misfire found by the claim
// does.

// Whether a fire handed off at `now` is a misfire: a schedule-driven one (CRON, FIX_RATE) more
// than `threshold` past its scheduled time. Manual, retry and child fires are never misfires;
// a MISFIRE fire is the misfire strategy's answer already.
bool IsLateFire(jobwheel::v1::TriggerType type, absl::Time scheduled, absl::Time now,
                absl::Duration threshold);

// A decision about one late fire row.
struct LateFire {
  int64_t fire_id = 0;
  int64_t job_id = 0;
  std::string reason;
};

struct LatePlan {
  // DO_NOTHING (or unspecified), and FIRE_ONCE_NOW beyond the one: the row becomes SKIPPED.
  std::vector<LateFire> skipped;
  // FIRE_ONCE_NOW: the one late fire of the job handed off now; the row becomes a MISFIRE fire.
  std::vector<LateFire> fired_once;
  // Per job and strategy, how many late fires it had (the misfire metric).
  std::vector<MisfireCount> misfires;
  bool empty() const { return skipped.empty() && fired_once.empty(); }
};

// What becomes of the late ones among `fires` (each with its fire id, scheduled time, trigger
// type, and job id and misfire strategy in `job`) handed off at `now`: a DO_NOTHING job's late
// fires are all skipped; of a FIRE_ONCE_NOW job's late fires the earliest is fired once (it
// becomes a MISFIRE fire) and the others are skipped. A FIRE_ONCE_NOW job that already fired
// once for these fires is not fired again: one with a MISFIRE fire among `fires`, and late fires
// scheduled at or before `fired_once_through[job]` (the late fires an earlier plan of this term
// covered, e.g. an earlier page of the same load) are skipped. Fires that are not late are not
// in the plan.
LatePlan PlanLateFires(const std::vector<jobwheel::v1::Fire>& fires, absl::Time now,
                       absl::Duration threshold,
                       const absl::flat_hash_map<int64_t, absl::Time>& fired_once_through = {});

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
