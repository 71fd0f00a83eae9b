// throughput: N every-second jobs spread evenly over the second, a steady N fires/s, for
// --duration after --warmup. precision: the lateness of the same run in detail.
#include "bench/load.h"
#include "bench/scenario.h"
#include "common/base/status_macros.h"

namespace jobwheel::bench {

absl::Status RunThroughput(Context& ctx) {
  LoadSpec spec;
  spec.tag = "throughput";
  spec.jobs = ctx.options.jobs;
  spec.warmup = ctx.options.warmup;
  spec.window = ctx.options.duration;
  Report r;
  ASSIGN_OR_RETURN(const LoadOutcome o, RunLoad(ctx, spec, r));
  if (ctx.pgbench_tps > 0) r.Add("of_pgbench_tps", o.achieved_per_s / ctx.pgbench_tps, 2);
  if (ctx.grpc_calls_per_s > 0) {
    r.Add("of_grpc_calls", o.achieved_per_s / ctx.grpc_calls_per_s, 3);
  }
  ctx.results.Emit("throughput", r);

  Report p;
  p.Add("jobs", static_cast<int64_t>(spec.jobs));
  p.Add("runs", static_cast<int64_t>(o.lateness_ms.n));
  p.Add("p50_ms", o.lateness_ms.p50, 1);
  p.Add("p90_ms", o.lateness_ms.p90, 1);
  p.Add("p99_ms", o.lateness_ms.p99, 1);
  p.Add("p999_ms", o.lateness_ms.p999, 1);
  p.Add("max_ms", o.lateness_ms.max, 1);
  p.Add("mean_ms", o.lateness_ms.mean, 1);
  ctx.results.Emit("precision", p);
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
