#include "services/scheduler/misfire_coverage.h"

#include <algorithm>

namespace jobwheel::scheduler {

void MisfireCoverage::Ledger::Cover(int64_t job_id, absl::Time now) {
  absl::Time& t = through_[job_id];
  t = std::max(t, now - threshold_);
}

void MisfireCoverage::Ledger::RecordFiredOnce(const LatePlan& plan, absl::Time now) {
  // Everything late at `now` was in the plan's view; a fire-once covers the job's fires up to
  // there.
  for (const LateFire& f : plan.fired_once) Cover(f.job_id, now);
}

void MisfireCoverage::Ledger::RecordClaim(const ClaimPlan& plan, absl::Time now) {
  // A claim-time fire-once covers the job's late pending fires up to the threshold.
  for (const PlannedFire& f : plan.fires) {
    if (f.trigger_type == jobwheel::v1::TRIGGER_TYPE_MISFIRE) Cover(f.job_id, now);
  }
}

void MisfireCoverage::StartTermLocked() {
  const int64_t term = terms_.load();
  if (term != term_) {
    ledger_.Clear();
    term_ = term;
  }
}

}  // namespace jobwheel::scheduler
