#ifndef JOBWHEEL_BENCH_SCENARIO_H_
#define JOBWHEEL_BENCH_SCENARIO_H_

#include "absl/status/status.h"
#include "bench/bench_db.h"
#include "bench/options.h"
#include "bench/report.h"
#include "bench/stack.h"

namespace jobwheel::bench {

// What every scenario works with. Each scenario emits its line(s) into `results` and fails
// (non-OK) when a wait times out or the stack misbehaves, so a run never reports figures it
// did not measure.
struct Context {
  const BenchOptions& options;
  Stack& stack;
  BenchDb& db;
  Results& results;
  // The references, once measured (0: not measured).
  double pgbench_tps = 0;
  double grpc_calls_per_s = 0;
  // The peak search's max_sustained_per_s, once it ran (0: not run).
  int peak_per_s = 0;
};

// One function per scenario, one file each (scenario_<name>.cc).
absl::Status RunRefs(Context& ctx);        // Before the stack starts.
absl::Status RunThroughput(Context& ctx);  // Also emits "precision".
absl::Status RunBurst(Context& ctx);
absl::Status RunFailover(Context& ctx);
absl::Status RunMemory(Context& ctx);
absl::Status RunPeak(Context& ctx);
absl::Status RunOverload(Context& ctx);  // After peak: 2× and 4× the searched peak.
absl::Status RunDetection(Context& ctx);
absl::Status RunFlood(Context& ctx);  // Not against an attached stack.

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_SCENARIO_H_
