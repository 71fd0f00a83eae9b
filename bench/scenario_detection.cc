// detection: a bench executor (its own app) gets kill -9 or SIGSTOP, --detection_trials times
// each; measured from the signal to the dispatcher's executors_known dropping (polled every
// 2 ms). A trial whose executor is not seen going within 15 s fails the run after the line.
#include <signal.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "bench/scenario.h"
#include "common/base/status_macros.h"
#include "common/time/clock.h"

namespace jobwheel::bench {

absl::Status RunDetection(Context& ctx) {
  const std::string app = ctx.stack.app() + "-detect";
  Report r;
  int undetected_total = 0;
  for (int sig : {SIGKILL, SIGSTOP}) {
    const std::string name = sig == SIGKILL ? "kill9" : "sigstop";
    std::vector<double> ms;
    int undetected = 0;
    for (int t = 0; t < ctx.options.detection_trials; ++t) {
      Service e;
      e.name = absl::StrCat("detect-", name, "-", t);
      absl::optional<int> base = ctx.stack.ExecutorsKnown();
      if (!base.has_value()) return absl::UnavailableError("detection: executors_known unreadable");
      RETURN_IF_ERROR(ctx.stack.StartExecutor(e, app, /*record=*/false));
      const int want = *base + 1;
      RETURN_IF_ERROR(ctx.stack.WaitExecutorsKnown([want](int n) { return n >= want; },
                                                   absl::Seconds(15),
                                                   "the detection executor to come online"));
      absl::SleepFor(absl::Milliseconds(1500));  // A few beats in.
      const absl::Time sent = RealClock::Get().Now();
      e.proc->Signal(sig);
      absl::Time seen = absl::InfiniteFuture();
      while (RealClock::Get().Now() - sent < absl::Seconds(15)) {
        absl::optional<int> v = ctx.stack.ExecutorsKnown();
        if (v.has_value() && *v <= *base) {
          seen = RealClock::Get().Now();
          break;
        }
        absl::SleepFor(absl::Milliseconds(2));
      }
      if (seen == absl::InfiniteFuture()) {
        ++undetected;
      } else {
        ms.push_back(absl::ToDoubleMilliseconds(seen - sent));
      }
      e.proc->Kill();  // SIGCONT + SIGKILL.
      const int gone = *base;
      RETURN_IF_ERROR(ctx.stack.WaitExecutorsKnown([gone](int n) { return n <= gone; },
                                                   absl::Seconds(10),
                                                   "the detection executor to go offline"));
    }
    std::vector<std::string> each;
    for (double v : ms) each.push_back(Fixed(v, 0));
    const Percentiles p = ComputePercentiles(ms);
    r.AddText(name + "_ms_each", absl::StrJoin(each, ","));
    r.Add(name + "_max_ms", p.max, 0);
    r.Add(name + "_mean_ms", p.mean, 0);
    r.Add(name + "_undetected", static_cast<int64_t>(undetected));
    undetected_total += undetected;
  }
  ctx.results.Emit("detection", r);
  if (undetected_total > 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("detection: ", undetected_total, " executor(s) not seen going within 15s"));
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
