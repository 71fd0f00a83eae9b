// memory: many jobs defined (100,000 each every 50 s by default: 2,000 fires/s); the peak RSS
// of the leading scheduler (VmHWM, reset when the load starts) is in the line.
#include <string>

#include "absl/time/time.h"
#include "bench/load.h"
#include "bench/scenario.h"
#include "common/base/status_macros.h"

namespace jobwheel::bench {

absl::Status RunMemory(Context& ctx) {
  LoadSpec spec;
  spec.tag = "memory";
  spec.jobs = ctx.options.memory_jobs;
  spec.period_s = ctx.options.memory_period_s;
  spec.warmup = absl::Seconds(10);
  spec.window = ctx.options.memory_duration;
  Report r;
  RETURN_IF_ERROR(RunLoad(ctx, spec, r).status());
  ASSIGN_OR_RETURN(pqxx::result l, ctx.db.Query("SELECT holder_id FROM leadership"));
  if (!l.empty()) r.AddText("leader", l[0][0].as<std::string>());
  ctx.results.Emit("memory", r);
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
