#ifndef JOBWHEEL_BENCH_REPORT_H_
#define JOBWHEEL_BENCH_REPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jobwheel::bench {

// Order statistics of a sample (any unit). Empty sample: n = 0, everything else 0.
struct Percentiles {
  size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, mean = 0;
};
// Nearest-rank percentiles; sorts `values` in place. The only percentile helper of the bench.
Percentiles ComputePercentiles(std::vector<double>& values);

// `value` with `digits` decimals, for printing.
std::string Fixed(double value, int digits);

// `text` as a JSON string literal, quotes included.
std::string JsonString(absl::string_view text);

// One scenario's results, in insertion order: printed as "name: k=v ..." and written as a
// JSON object. Not thread-safe.
class Report {
 public:
  void Add(absl::string_view key, double value, int digits);
  void Add(absl::string_view key, int64_t value);
  void AddText(absl::string_view key, absl::string_view value);
  // A nested JSON object (not printed on the line; e.g. the flags).
  void AddObject(absl::string_view key, const Report& object);

  // "name: k=v k2=v2"; a text value with spaces is quoted.
  std::string Line(absl::string_view name) const;
  std::string Json() const;

 private:
  struct Field {
    std::string key;
    std::string json;     // The value as JSON.
    std::string plain;    // The value as printed.
    bool nested = false;  // An object: JSON only.
  };
  std::vector<Field> fields_;
};

// Every scenario's report of one bench run, in the order they ran.
class Results {
 public:
  // Prints the report's line on stdout (flushed) and keeps it.
  void Emit(absl::string_view name, const Report& report);
  // Kept but not printed (the run's description).
  void Keep(absl::string_view name, const Report& report);
  // Writes {"<name>": {...}, ...} to `path`; a name seen again gets _2, _3...
  absl::Status WriteJson(const std::string& path) const;

 private:
  std::vector<std::pair<std::string, Report>> scenarios_;
};

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_REPORT_H_
