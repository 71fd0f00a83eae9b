#include "bench/options.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace jobwheel::bench {

absl::Status BenchOptions::Validate() const {
  if (work_dir.empty() || dsn.empty() || token_dir.empty()) {
    return absl::InvalidArgumentError("--work_dir, --dsn and --token_dir are required");
  }
  if (attached() != !attach_dispatcher.empty()) {
    return absl::InvalidArgumentError("--attach_registry and --attach_dispatcher go together");
  }
  if (attached() && attach_dispatcher_metrics_port <= 0) {
    return absl::InvalidArgumentError("--attach_dispatcher_metrics_port is required to attach");
  }
  if (executors < 1 || jobs < 1 || burst_jobs < 1 || memory_jobs < 1 || failover_jobs < 1) {
    return absl::InvalidArgumentError("--executors and the job counts must be positive");
  }
  if (memory_period_s < 1) return absl::InvalidArgumentError("--memory_period_s must be >= 1");
  if (flood_clients < 2 || flood_jobs < 1 || flood_duration < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        "--flood_clients must be >= 2, --flood_jobs >= 1 and --flood_duration >= 1s");
  }
  if (duration < absl::Seconds(1) || burst_duration < absl::Seconds(1) ||
      peak_duration < absl::Seconds(1) || memory_duration < absl::Seconds(1)) {
    return absl::InvalidArgumentError("measurement windows must be at least 1s");
  }
  if (peak_start < 1 || peak_max < peak_start) {
    return absl::InvalidArgumentError(
        absl::StrCat("--peak_start (", peak_start, ") must be in [1, --peak_max]"));
  }
  if (!(peak_tolerance >= 0 && peak_tolerance < 1) ||
      !(peak_resolution > 0 && peak_resolution < 1)) {
    return absl::InvalidArgumentError("--peak_tolerance and --peak_resolution must be in [0, 1)");
  }
  if (overload_peak < 1 || overload_factors.empty() ||
      std::any_of(overload_factors.begin(), overload_factors.end(), [](int f) { return f < 1; })) {
    return absl::InvalidArgumentError(
        "--overload_peak and every factor of --overload_factors must be >= 1");
  }
  if (overload_duration < absl::Seconds(1) || overload_recovery < absl::Seconds(1)) {
    return absl::InvalidArgumentError("--overload_duration and --overload_recovery must be >= 1s");
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
