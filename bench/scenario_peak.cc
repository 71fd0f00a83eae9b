// peak: searches for the highest rate the machine sustains. A rate is sustained when, over a
// --peak_duration window, the fires offered, the fires whose handler started and the fires
// completed (result durable) agree within --peak_tolerance, the p99 lateness is at most
// --peak_p99_limit, and nothing is lost, doubled or unexpected. The search doubles from
// --peak_start until a rate fails (or --peak_max holds), then bisects between the last
// sustained and the first failed rate down to --peak_resolution, within --peak_budget.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/load.h"
#include "bench/scenario.h"
#include "common/status_macros.h"

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

// A rate between lo and hi, rounded to two significant digits' step (e.g. 7,500 → step 100).
int Middle(int lo, int hi) {
  const double mid = (lo + hi) / 2.0;
  const int step = std::max(1, static_cast<int>(std::pow(10, std::floor(std::log10(mid)) - 1)));
  return static_cast<int>(std::lround(mid / step)) * step;
}

}  // namespace

absl::Status RunPeak(Context& ctx) {
  const BenchOptions& opt = ctx.options;
  const absl::Time began = absl::Now();
  // A probe's cost: its load plus setting up, the grace, draining and clean-up.
  const absl::Duration probe_cost =
      opt.warmup + opt.peak_duration + opt.completion_grace + absl::Seconds(15);
  auto can_probe = [&] { return absl::Now() - began + probe_cost <= opt.peak_budget; };

  int lo = 0, hi = 0, probes = 0;
  bool have_best = false, ceiling = false;
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
    ++probes;
    const std::string why = Unsustained(o, opt);
    r.Add("sustained", static_cast<int64_t>(why.empty() ? 1 : 0));
    if (!why.empty()) r.AddText("failed_on", why);
    ctx.results.Emit("peak_probe", r);
    if (why.empty()) {
      lo = rate;
      best = o;
      have_best = true;
    } else {
      hi = rate;
      last_failure = why;
    }
    return why.empty();
  };

  // Doubling.
  for (int rate = opt.peak_start; can_probe();) {
    ASSIGN_OR_RETURN(const bool ok, probe(rate));
    if (!ok) break;
    if (rate >= opt.peak_max) {
      ceiling = true;
      break;
    }
    rate = std::min(rate * 2, opt.peak_max);
  }
  // Bisection between the last sustained and the first failed rate.
  bool converged = ceiling;
  while (hi > 0) {
    if (hi - lo <= std::max(1.0, opt.peak_resolution * std::max(lo, 1))) {
      converged = true;
      break;
    }
    const int mid = Middle(lo, hi);
    if (mid <= lo || mid >= hi) {
      converged = true;
      break;
    }
    if (!can_probe()) break;
    RETURN_IF_ERROR(probe(mid).status());
  }

  Report r;
  r.Add("max_sustained_per_s", static_cast<int64_t>(lo));
  r.Add("first_unsustained_per_s", static_cast<int64_t>(hi));
  if (!last_failure.empty()) r.AddText("failed_on", last_failure);
  r.Add("probes", static_cast<int64_t>(probes));
  r.Add("converged", static_cast<int64_t>(converged ? 1 : 0));
  r.Add("ceiling_reached", static_cast<int64_t>(ceiling ? 1 : 0));
  r.Add("search_s", absl::ToDoubleSeconds(absl::Now() - began), 0);
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
  if (probes == 0) {
    return absl::DeadlineExceededError("peak: --peak_budget too small for a single probe");
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
