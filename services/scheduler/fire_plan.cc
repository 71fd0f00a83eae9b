#include "services/scheduler/fire_plan.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"
#include "services/scheduler/schedule.h"

namespace jobwheel::scheduler {

using jobwheel::v1::Job;

absl::Time ClaimHorizon(absl::Time now, const ClaimWindow& window) {
  return now + window.preread_window;
}

ClaimPlan PlanClaim(const std::vector<Job>& jobs, absl::Time now, const ClaimWindow& window) {
  ClaimPlan plan;
  const absl::Time fill_until = ClaimHorizon(now, window) + window.claim_ahead;
  const absl::Time misfire_before = now - window.misfire_threshold;
  plan.next.reserve(jobs.size());
  for (const Job& job : jobs) {
    auto schedule = Schedule::FromProto(job.schedule(), FromProto(job.create_time()));
    if (!schedule.ok()) {
      plan.invalid.emplace_back(job.id(), schedule.status());
      plan.next.push_back({job.id(), std::nullopt});
      continue;
    }
    const jobwheel::v1::TriggerType type = schedule->trigger_type();
    std::optional<absl::Time> t = FromProto(job.next_fire_time());
    // Misfire: the due times older than the threshold.
    if (t && *t < misfire_before) {
      const absl::Time first = *t;
      absl::Time last = *t;
      int64_t missed = 0;
      while (t && *t < misfire_before && missed < kMaxMissedCounted) {
        last = *t;
        ++missed;
        t = schedule->NextAfter(*t);
      }
      if (t && *t < misfire_before) {
        t = schedule->NextAfter(misfire_before - absl::Seconds(1));
      }
      const bool once = job.misfire_strategy() == jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW;
      plan.misfires.push_back({job.misfire_strategy(), missed});
      PlannedFire f;
      f.job_id = job.id();
      f.scheduled = first;
      f.trigger_type = once ? jobwheel::v1::TRIGGER_TYPE_MISFIRE : type;
      f.skipped = !once;
      f.reason =
          absl::StrCat("misfire: ", missed, " fire(s) from ", absl::FormatTime(first), " to ",
                       absl::FormatTime(last),
                       once ? " missed; fired once now (FIRE_ONCE_NOW)" : " skipped (DO_NOTHING)");
      plan.fires.push_back(std::move(f));
    }
    while (t && *t <= fill_until) {
      PlannedFire f;
      f.job_id = job.id();
      f.scheduled = *t;
      f.trigger_type = type;
      plan.fires.push_back(std::move(f));
      t = schedule->NextAfter(*t);
    }
    plan.next.push_back({job.id(), t});
  }
  return plan;
}

absl::Time HandOffTime(absl::Time scheduled, absl::Duration lead, absl::Duration interval) {
  const absl::Time at = scheduled - lead;
  if (lead <= absl::ZeroDuration() || interval <= absl::ZeroDuration()) return at;
  return absl::UnixEpoch() + absl::Floor(at - absl::UnixEpoch(), interval);
}

absl::Duration HandOffLateness(jobwheel::v1::TriggerType type, absl::Time scheduled,
                               absl::Time sent, absl::Duration lead, absl::Duration interval) {
  const bool by_schedule =
      type == jobwheel::v1::TRIGGER_TYPE_CRON || type == jobwheel::v1::TRIGGER_TYPE_FIX_RATE;
  return sent - (by_schedule ? HandOffTime(scheduled, lead, interval) : scheduled);
}

absl::Duration HandOffBackoff(int failures) {
  const int n = std::clamp(failures, 1, kMaxHandOffFailures);
  return absl::Milliseconds(100) * (1 << (n - 1));
}

}  // namespace jobwheel::scheduler
