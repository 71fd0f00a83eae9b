#ifndef JOBWHEEL_BENCH_BENCH_UTIL_H_
#define JOBWHEEL_BENCH_BENCH_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace jobwheel::bench {

// Order statistics of a sample (any unit). Empty sample: n = 0, everything else 0.
struct Percentiles {
  size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, mean = 0;
};
// Nearest-rank percentiles; sorts `values` in place.
Percentiles ComputePercentiles(std::vector<double>& values);

// One run as the bench executor saw it (a line of its --record_file).
struct RunRecord {
  int64_t run_id = 0;
  int64_t job_id = 0;
  int64_t fire_id = 0;
  int attempt = 0;
  int64_t scheduled_us = 0;  // The fire's scheduled time, Unix µs.
  int64_t received_us = 0;   // When the handler started, Unix µs.
};
// Parses "run_id job_id fire_id attempt scheduled_us received_us" lines; a torn last line
// (the file is still being appended to) is skipped.
std::vector<RunRecord> ParseRecords(absl::string_view text);

// CPU time and memory of one process from /proc.
struct ProcSample {
  double cpu_seconds = 0;   // utime + stime.
  int64_t rss_kb = 0;       // VmRSS.
  int64_t peak_rss_kb = 0;  // VmHWM (since start or the last ResetPeakRss).
};
absl::StatusOr<ProcSample> ReadProc(pid_t pid);
// Resets VmHWM to the current RSS (writes 5 to /proc/PID/clear_refs); false if not allowed.
bool ResetPeakRss(pid_t pid);
// The direct children of `parent` (for PostgreSQL's backends).
std::vector<pid_t> ChildrenOf(pid_t parent);

// GET http://127.0.0.1:port/path (HTTP/1.0); the body.
absl::StatusOr<std::string> HttpGet(int port, absl::string_view path, int timeout_ms = 1000);
// The sum of every sample of metric `name` (any labels) in a Prometheus text body; nullopt
// when absent.
absl::optional<double> MetricSum(absl::string_view body, absl::string_view name);

// "1 ms" style rounding for printing: value with `digits` decimals.
std::string Fixed(double value, int digits);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_BENCH_UTIL_H_
