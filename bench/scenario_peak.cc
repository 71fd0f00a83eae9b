// peak: searches for the highest rate the machine sustains. A rate is sustained when, over a
// --peak_duration window, the fires offered, the fires whose handler started and the fires
// completed (result durable) agree within --peak_tolerance, the p99 lateness is at most
// --peak_p99_limit, and nothing is lost, doubled or unexpected. The search doubles from
// --peak_start until a rate fails (or --peak_max holds), then bisects between the last
// sustained and the first failed rate down to --peak_resolution, within --peak_budget.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/load.h"
#include "bench/peak_search.h"
#include "bench/scenario.h"
#include "common/base/status_macros.h"
#include "common/time/clock.h"

namespace jobwheel::bench {
namespace {

// Why a probe was not sustained; empty if it was.
std::string Unsustained(const LoadOutcome& o, const BenchOptions& opt) {
  const double tol = opt.peak_tolerance * o.offered_per_s;
  if (std::abs(o.achieved_per_s - o.offered_per_s) > tol) return "achieved";
  if (std::abs(o.completed_per_s - o.offered_per_s) > tol) return "completed";
  if (o.lateness_ms.p99 > absl::ToDoubleMilliseconds(opt.peak_p99_limit)) return "p99";
  if (o.executed.missing > 0) return "lost";
  if (o.executed.duplicate > 0 || o.executed.unexpected > 0) return "dup";
  return "";
}

}  // namespace

absl::Status RunPeak(Context& ctx) {
  const BenchOptions& opt = ctx.options;
  const absl::Time began = RealClock::Get().Now();
  // A probe's cost: its load plus setting up, the grace, draining and clean-up.
  const absl::Duration probe_cost =
      opt.warmup + opt.peak_duration + opt.completion_grace + absl::Seconds(15);
  auto can_probe = [&] { return RealClock::Get().Now() - began + probe_cost <= opt.peak_budget; };

  bool have_best = false;
  int best_rate = 0;
  LoadOutcome best;
  std::string last_failure;
  auto probe = [&](int rate) -> absl::StatusOr<bool> {
    LoadSpec spec;
    spec.tag = absl::StrCat("peak", rate);
    spec.jobs = rate;
    spec.warmup = opt.warmup;
    spec.window = opt.peak_duration;
    Report r;
    r.Add("rate", static_cast<int64_t>(rate));
    ASSIGN_OR_RETURN(LoadOutcome o, RunLoad(ctx, spec, r));
    const std::string why = Unsustained(o, opt);
    r.Add("sustained", static_cast<int64_t>(why.empty() ? 1 : 0));
    if (!why.empty()) r.AddText("failed_on", why);
    ctx.results.Emit("peak_probe", r);
    if (why.empty() && (!have_best || rate > best_rate)) {
      best = o;
      best_rate = rate;
      have_best = true;
    }
    if (!why.empty()) last_failure = why;
    return why.empty();
  };
  ASSIGN_OR_RETURN(
      const PeakSearchResult found,
      SearchPeak({opt.peak_start, opt.peak_max, opt.peak_resolution}, probe, can_probe));

  Report r;
  r.Add("max_sustained_per_s", static_cast<int64_t>(found.max_sustained));
  r.Add("first_unsustained_per_s", static_cast<int64_t>(found.first_unsustained));
  if (!last_failure.empty()) r.AddText("failed_on", last_failure);
  r.Add("probes", static_cast<int64_t>(found.probes));
  r.Add("converged", static_cast<int64_t>(found.converged ? 1 : 0));
  r.Add("ceiling_reached", static_cast<int64_t>(found.ceiling ? 1 : 0));
  r.Add("search_s", absl::ToDoubleSeconds(RealClock::Get().Now() - began), 0);
  r.Add("tolerance", opt.peak_tolerance, 3);
  r.Add("p99_limit_ms", absl::ToDoubleMilliseconds(opt.peak_p99_limit), 0);
  r.Add("window_s", absl::ToDoubleSeconds(opt.peak_duration), 0);
  if (have_best) {
    r.Add("at_max_achieved_per_s", best.achieved_per_s, 0);
    r.Add("at_max_completed_per_s", best.completed_per_s, 0);
    r.Add("at_max_p50_ms", best.lateness_ms.p50, 1);
    r.Add("at_max_p99_ms", best.lateness_ms.p99, 1);
  }
  ctx.results.Emit("peak", r);
  ctx.peak_per_s = found.max_sustained;
  if (found.probes == 0) {
    return absl::DeadlineExceededError("peak: --peak_budget too small for a single probe");
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
