#include "bench/shed_ranges.h"

#include "absl/container/flat_hash_map.h"
#include "services/scheduler/fire_plan.h"

namespace jobwheel::bench {

int64_t CoveredCount(absl::string_view reason) {
  return scheduler::MisfireRangeCount(reason).value_or(1);
}

absl::flat_hash_set<FireKey> CoveredFires(const std::vector<SkippedRow>& rows,
                                          const std::vector<JobSchedule>& jobs) {
  absl::flat_hash_map<int64_t, const JobSchedule*> by_id;
  for (const JobSchedule& j : jobs) by_id.emplace(j.job_id, &j);
  absl::flat_hash_set<FireKey> out;
  for (const SkippedRow& r : rows) {
    auto it = by_id.find(r.job_id);
    if (it == by_id.end() || it->second->period_us <= 0) continue;
    const int64_t n = CoveredCount(r.reason);
    for (int64_t i = 0; i < n; ++i) {
      out.insert({r.job_id, r.scheduled_us + i * it->second->period_us});
    }
  }
  return out;
}

}  // namespace jobwheel::bench
