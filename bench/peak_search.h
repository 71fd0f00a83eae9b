#ifndef JOBWHEEL_BENCH_PEAK_SEARCH_H_
#define JOBWHEEL_BENCH_PEAK_SEARCH_H_

#include <functional>

#include "absl/status/statusor.h"

namespace jobwheel::bench {

struct PeakSearchOptions {
  int start = 2500;          // The first rate tried.
  int max = 64000;           // The highest rate tried.
  double resolution = 0.05;  // Stop when hi - lo <= resolution × lo.
};

struct PeakSearchResult {
  int max_sustained = 0;      // The highest rate that held (0: none did).
  int first_unsustained = 0;  // The lowest rate that did not (0: none failed).
  int probes = 0;
  bool converged = false;  // The bracket is within the resolution (or the ceiling held).
  bool ceiling = false;    // options.max held.
};

// The highest sustained rate: doubles from `start` until a probe fails or `max` holds, then
// bisects between the last sustained and the first failed rate. `probe(rate)` runs one probe
// (true: sustained); `can_probe()` says whether another probe fits the time budget. A probe's
// error ends the search with that error.
absl::StatusOr<PeakSearchResult> SearchPeak(const PeakSearchOptions& options,
                                            const std::function<absl::StatusOr<bool>(int)>& probe,
                                            const std::function<bool()>& can_probe);

// A rate between lo and hi, rounded to a step of two significant digits (7,450 → 7,500).
int MiddleRate(int lo, int hi);

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_PEAK_SEARCH_H_
