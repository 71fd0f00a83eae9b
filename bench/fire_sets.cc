#include "bench/fire_sets.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace jobwheel::bench {

std::vector<FireKey> ExpectedFires(const std::vector<JobSchedule>& jobs, int64_t from_us,
                                   int64_t to_us) {
  std::vector<FireKey> out;
  for (const JobSchedule& j : jobs) {
    if (j.period_us <= 0) continue;
    int64_t t = j.first_us;
    if (t < from_us) t += (from_us - t + j.period_us - 1) / j.period_us * j.period_us;
    for (; t < to_us; t += j.period_us) out.emplace_back(j.job_id, t);
  }
  return out;
}

SetComparison CompareFireSets(const std::vector<FireKey>& expected,
                              const std::vector<FireKey>& recorded, int64_t from_us,
                              int64_t to_us) {
  SetComparison c;
  const absl::flat_hash_set<FireKey> want(expected.begin(), expected.end());
  c.expected = static_cast<int64_t>(want.size());
  absl::flat_hash_map<FireKey, int64_t> seen;
  for (const FireKey& k : recorded) {
    if (k.second < from_us || k.second >= to_us) continue;
    ++seen[k];
  }
  c.recorded = static_cast<int64_t>(seen.size());
  for (const auto& [key, n] : seen) {
    c.duplicate += n - 1;
    if (!want.contains(key)) ++c.unexpected;
  }
  for (const FireKey& k : want) {
    if (!seen.contains(k)) ++c.missing;
  }
  return c;
}

}  // namespace jobwheel::bench
