#ifndef JOBWHEEL_BENCH_OPTIONS_H_
#define JOBWHEEL_BENCH_OPTIONS_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace jobwheel::bench {

// Everything the harness is told (main.cc fills it from the flags; see their help).
struct BenchOptions {
  std::string bin_dir;
  std::string work_dir;
  std::string dsn;
  std::string pg_data;
  std::string pgbench_dsn;
  std::string pgbench;
  std::string token_dir;
  std::string results_dir;
  std::string git_commit;
  std::set<std::string> scenarios;
  int executors = 2;

  // Load scenarios.
  int jobs = 5000;
  absl::Duration duration = absl::Seconds(60);
  absl::Duration warmup = absl::Seconds(8);
  absl::Duration completion_grace = absl::Seconds(2);
  absl::Duration drain_timeout = absl::Seconds(60);
  int burst_jobs = 5000;
  absl::Duration burst_duration = absl::Seconds(15);
  int memory_jobs = 100000;
  int memory_period_s = 50;
  absl::Duration memory_duration = absl::Seconds(30);

  // The peak search.
  int peak_start = 2500;
  int peak_max = 64000;
  double peak_tolerance = 0.02;
  double peak_resolution = 0.05;
  absl::Duration peak_p99_limit = absl::Seconds(1);
  absl::Duration peak_duration = absl::Seconds(15);
  absl::Duration peak_budget = absl::Minutes(6);

  // Overload: factors of the peak offered, and the peak when the search did not run.
  std::vector<int> overload_factors = {2, 4};
  int overload_peak = 5000;
  absl::Duration overload_warmup = absl::Seconds(20);
  absl::Duration overload_duration = absl::Seconds(15);
  absl::Duration overload_recovery = absl::Seconds(15);

  int failover_jobs = 1000;
  int detection_trials = 3;
  int flood_clients = 200;
  int flood_jobs = 500;
  absl::Duration flood_duration = absl::Seconds(15);

  // Attach to a running stack instead of starting one.
  std::string attach_registry;
  std::string attach_dispatcher;
  int attach_dispatcher_metrics_port = 0;

  bool attached() const { return !attach_registry.empty(); }
  bool Wants(const std::string& scenario) const { return scenarios.count(scenario) > 0; }
  absl::Status Validate() const;
};

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_OPTIONS_H_
