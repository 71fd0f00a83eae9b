#ifndef JOBWHEEL_BENCH_SHED_RANGES_H_
#define JOBWHEEL_BENCH_SHED_RANGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "bench/fire_sets.h"

namespace jobwheel::bench {

// A fire row that stands for due times it did not run: a claim-time misfire row ("misfire: N
// fire(s) from … to …", SKIPPED, or MISFIRE when fired once) covers the job's N due times from
// its scheduled time; any other SKIPPED row (a late pending fire settled) covers its own.
struct SkippedRow {
  int64_t job_id = 0;
  int64_t scheduled_us = 0;
  std::string reason;
};

// How many due times a misfire reason names ("misfire: 60 fire(s) …" → 60); 1 for any other.
int64_t CoveredCount(absl::string_view reason);

// Every (job, due time) the rows stand for, by the jobs' schedules (rows of other jobs are
// ignored).
absl::flat_hash_set<FireKey> CoveredFires(const std::vector<SkippedRow>& rows,
                                          const std::vector<JobSchedule>& jobs);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_SHED_RANGES_H_
