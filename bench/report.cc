#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/json_escape.h"

namespace jobwheel::bench {

Percentiles ComputePercentiles(std::vector<double>& values) {
  Percentiles p;
  p.n = values.size();
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto rank = [&](double q) {
    // Nearest rank: the smallest value with at least q of the sample at or below it.
    size_t k = static_cast<size_t>(std::ceil(q * values.size()));
    return values[std::min(values.size() - 1, k == 0 ? 0 : k - 1)];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.p999 = rank(0.999);
  p.max = values.back();
  double sum = 0;
  for (double v : values) sum += v;
  p.mean = sum / values.size();
  return p;
}

std::string Fixed(double value, int digits) { return absl::StrFormat("%.*f", digits, value); }

std::string JsonString(absl::string_view text) {
  return absl::StrCat("\"", JsonEscape(text), "\"");
}

void Report::Add(absl::string_view key, double value, int digits) {
  const std::string v = std::isfinite(value) ? Fixed(value, digits) : "null";
  fields_.push_back({std::string(key), v, v, false});
}

void Report::Add(absl::string_view key, int64_t value) {
  fields_.push_back({std::string(key), absl::StrCat(value), absl::StrCat(value), false});
}

void Report::AddText(absl::string_view key, absl::string_view value) {
  fields_.push_back({std::string(key), JsonString(value), std::string(value), false});
}

void Report::AddObject(absl::string_view key, const Report& object) {
  fields_.push_back({std::string(key), object.Json(), "", true});
}

std::string Report::Line(absl::string_view name) const {
  std::vector<std::string> kv;
  for (const Field& f : fields_) {
    if (f.nested) continue;
    const bool quote = f.plain.find(' ') != std::string::npos || f.plain.empty();
    kv.push_back(absl::StrCat(f.key, "=", quote ? absl::StrCat("\"", f.plain, "\"") : f.plain));
  }
  return absl::StrCat(name, ": ", absl::StrJoin(kv, " "));
}

std::string Report::Json() const {
  std::vector<std::string> kv;
  for (const Field& f : fields_) kv.push_back(absl::StrCat(JsonString(f.key), ": ", f.json));
  return absl::StrCat("{", absl::StrJoin(kv, ", "), "}");
}

void Results::Emit(absl::string_view name, const Report& report) {
  std::printf("%s\n", report.Line(name).c_str());
  std::fflush(stdout);
  Keep(name, report);
}

void Results::Keep(absl::string_view name, const Report& report) {
  scenarios_.emplace_back(std::string(name), report);
}

absl::Status Results::WriteJson(const std::string& path) const {
  std::ofstream json(path);
  if (!json) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  json << "{\n";
  std::map<std::string, int> times;
  for (size_t i = 0; i < scenarios_.size(); ++i) {
    const std::string& name = scenarios_[i].first;
    const int n = ++times[name];
    json << "  " << JsonString(n > 1 ? absl::StrCat(name, "_", n) : name) << ": "
         << scenarios_[i].second.Json() << (i + 1 < scenarios_.size() ? ",\n" : "\n");
  }
  json << "}\n";
  json.close();
  if (!json) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
