#ifndef JOBWHEEL_BENCH_SAMPLING_H_
#define JOBWHEEL_BENCH_SAMPLING_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace jobwheel::bench {

// The fields of /proc/<pid>/stat the bench uses.
struct ProcStat {
  pid_t ppid = 0;
  int64_t utime_ticks = 0;
  int64_t stime_ticks = 0;
};
// Parses the text of /proc/<pid>/stat (the command name may hold spaces and parentheses). The
// one parser of that file in the bench.
absl::StatusOr<ProcStat> ParseProcStat(absl::string_view text);

// CPU time and memory of one process from /proc.
struct ProcSample {
  double cpu_seconds = 0;   // utime + stime.
  int64_t rss_kb = 0;       // VmRSS.
  int64_t peak_rss_kb = 0;  // VmHWM (since start or the last ResetPeakRss).
};
absl::StatusOr<ProcSample> ReadProc(pid_t pid);
// Resets VmHWM to the current RSS (writes 5 to /proc/PID/clear_refs); false if not allowed.
bool ResetPeakRss(pid_t pid);
// The direct children of `parent` (PostgreSQL's backends).
std::vector<pid_t> ChildrenOf(pid_t parent);
// The postmaster of the data directory `pg_data` and its children; empty if unknown.
std::vector<pid_t> PostgresPids(const std::string& pg_data);
// "1.00/0.50/0.25" from /proc/loadavg.
std::string LoadAvg();

// Processes by component ("dispatcher", "executors", "postgres"...).
using ProcSet = std::map<std::string, std::vector<pid_t>>;
using Samples = std::map<std::string, std::map<pid_t, ProcSample>>;
Samples SampleAll(const ProcSet& set);
void ResetPeaks(const ProcSet& set);

// One component's use of the machine between two samples.
struct ComponentUsage {
  std::string name;
  double cpu_seconds = 0;
  // PostgreSQL: the sum of its processes' current RSS (shared buffers counted per process, so
  // an overestimate); the others: the largest peak RSS of the component's processes.
  int64_t rss_kb = 0;
  bool rss_is_sum = false;
};
std::vector<ComponentUsage> Usage(const Samples& before, const Samples& after);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_SAMPLING_H_
