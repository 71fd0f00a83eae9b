#ifndef JOBWHEEL_BENCH_LOAD_H_
#define JOBWHEEL_BENCH_LOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/fire_sets.h"
#include "bench/report.h"
#include "bench/sampling.h"
#include "bench/scenario.h"

namespace jobwheel::bench {

// One steady load: `jobs` jobs, each due every `period_s` (FIX_RATE, first due times spread
// evenly over a period) or, for a burst, cron `* * * * * ?` jobs all due on the same second.
// The first fires are due at t0 (a whole second a few seconds ahead); the window is
// [t0 + warmup, t0 + warmup + window).
struct LoadSpec {
  std::string tag;
  int jobs = 0;
  int64_t period_s = 1;
  bool cron_burst = false;
  absl::Duration warmup;
  absl::Duration window;
};

// What a load achieved. Rates are per second of the window.
struct LoadOutcome {
  double window_s = 0;
  // Fires due in the window by the jobs' schedules.
  double offered_per_s = 0;
  // Fires whose handler started on a bench executor inside the window (the executors' own
  // record of the handler start), each fire once.
  double achieved_per_s = 0;
  // Fires due in the window whose SUCCEEDED result was durable in the database by the end of
  // the window plus --completion_grace.
  double completed_per_s = 0;
  // The same as achieved_per_s from the runs' start times in the database (the executors'
  // reports): a cross-check of the executors' records.
  double db_achieved_per_s = 0;
  // Handler start − scheduled time of every fire due in the window that started.
  Percentiles lateness_ms;
  // Over everything due from t0 to the window's end: the expected set of (job, scheduled
  // time) from the schedules against the executors' records and against the fire rows.
  SetComparison executed;
  SetComparison fire_rows;
  int64_t db_failed = 0;
  int64_t db_skipped = 0;
  int64_t db_pending = 0;
};

// Runs one load (after removing the bench's previous one) and adds its figures to `report`.
// Fails if a wait times out (the load does not drain) or the database refuses a statement.
absl::StatusOr<LoadOutcome> RunLoad(Context& ctx, const LoadSpec& spec, Report& report);

// Adds "<component>_cpu_s", "_cpu_pct" and the RSS field of each component.
void AddUsage(Report& report, const std::vector<ComponentUsage>& usage, absl::Duration window);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_LOAD_H_
