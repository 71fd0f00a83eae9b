#ifndef JOBWHEEL_BENCH_FIRE_SETS_H_
#define JOBWHEEL_BENCH_FIRE_SETS_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace jobwheel::bench {

// A fire's identity: (job id, scheduled time in Unix µs).
using FireKey = std::pair<int64_t, int64_t>;

// A bench job's schedule: due at first_us, then every period_us.
struct JobSchedule {
  int64_t job_id = 0;
  int64_t first_us = 0;
  int64_t period_us = 0;
};

// Every (job, due time) of `jobs` in [from_us, to_us): the set a correct scheduler records,
// computed from the schedules alone.
std::vector<FireKey> ExpectedFires(const std::vector<JobSchedule>& jobs, int64_t from_us,
                                   int64_t to_us);

// The expected set against what was recorded (one entry per execution or row, so repeats
// are duplicates). Recorded keys outside [from_us, to_us) are ignored.
struct SetComparison {
  int64_t expected = 0;
  int64_t recorded = 0;    // Distinct keys recorded in the range.
  int64_t missing = 0;     // Expected, never recorded: lost.
  int64_t duplicate = 0;   // Recordings beyond the first of a key.
  int64_t unexpected = 0;  // Recorded in the range but not due by any schedule.
};
SetComparison CompareFireSets(const std::vector<FireKey>& expected,
                              const std::vector<FireKey>& recorded, int64_t from_us, int64_t to_us);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_FIRE_SETS_H_
