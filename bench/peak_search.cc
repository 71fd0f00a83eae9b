#include "bench/peak_search.h"

#include <algorithm>
#include <cmath>

namespace jobwheel::bench {

int MiddleRate(int lo, int hi) {
  const double mid = (lo + hi) / 2.0;
  if (mid < 1) return 1;
  const int step = std::max(1, static_cast<int>(std::pow(10, std::floor(std::log10(mid)) - 1)));
  return static_cast<int>(std::lround(mid / step)) * step;
}

absl::StatusOr<PeakSearchResult> SearchPeak(const PeakSearchOptions& options,
                                            const std::function<absl::StatusOr<bool>(int)>& probe,
                                            const std::function<bool()>& can_probe) {
  PeakSearchResult r;
  auto run = [&](int rate) -> absl::StatusOr<bool> {
    absl::StatusOr<bool> ok = probe(rate);
    if (!ok.ok()) return ok.status();
    ++r.probes;
    if (*ok) {
      r.max_sustained = rate;
    } else {
      r.first_unsustained = rate;
    }
    return *ok;
  };
  // Doubling.
  for (int rate = options.start; can_probe();) {
    absl::StatusOr<bool> ok = run(rate);
    if (!ok.ok()) return ok.status();
    if (!*ok) break;
    if (rate >= options.max) {
      r.ceiling = r.converged = true;
      return r;
    }
    rate = std::min(rate * 2, options.max);
  }
  // Bisection between the last sustained and the first failed rate.
  while (r.first_unsustained > 0) {
    const int lo = r.max_sustained, hi = r.first_unsustained;
    const int mid = MiddleRate(lo, hi);
    if (hi - lo <= std::max(1.0, options.resolution * lo) || mid <= lo || mid >= hi) {
      r.converged = true;
      break;
    }
    if (!can_probe()) break;
    absl::StatusOr<bool> ok = run(mid);
    if (!ok.ok()) return ok.status();
  }
  return r;
}

}  // namespace jobwheel::bench
