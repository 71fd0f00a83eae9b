// burst: N cron jobs `* * * * * ?`, all due on the same millisecond every second.
#include "bench/load.h"
#include "bench/scenario.h"
#include "common/base/status_macros.h"

namespace jobwheel::bench {

absl::Status RunBurst(Context& ctx) {
  LoadSpec spec;
  spec.tag = "burst";
  spec.jobs = ctx.options.burst_jobs;
  spec.cron_burst = true;
  spec.warmup = ctx.options.warmup;
  spec.window = ctx.options.burst_duration;
  Report r;
  RETURN_IF_ERROR(RunLoad(ctx, spec, r).status());
  ctx.results.Emit("burst", r);
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
