#include "common/testing/executions.h"

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace jobwheel::testing {
namespace {

bool Parse(absl::string_view line, Execution* out) {
  std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.empty() || (words[0] != "start" && words[0] != "end")) return false;
  out->start = words[0] == "start";
  int fields = 0;
  for (size_t i = 1; i < words.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(words[i], '=');
    int flag = 0;
    if (kv.first == "handler") {
      out->handler = std::string(kv.second);
      ++fields;
    } else if (kv.first == "job") {
      fields += absl::SimpleAtoi(kv.second, &out->job_id);
    } else if (kv.first == "fire") {
      fields += absl::SimpleAtoi(kv.second, &out->fire_id);
    } else if (kv.first == "run") {
      fields += absl::SimpleAtoi(kv.second, &out->run_id);
    } else if (kv.first == "attempt") {
      fields += absl::SimpleAtoi(kv.second, &out->attempt);
    } else if (kv.first == "ok" && absl::SimpleAtoi(kv.second, &flag)) {
      out->ok = flag != 0;
      ++fields;
    } else if (kv.first == "cancelled" && absl::SimpleAtoi(kv.second, &flag)) {
      out->cancelled = flag != 0;
      ++fields;
    }
  }
  return fields == (out->start ? 5 : 7);
}

std::vector<Execution> Filter(const std::vector<Execution>& executions, int64_t job_id,
                              bool start) {
  std::vector<Execution> out;
  for (const Execution& e : executions) {
    if (e.job_id == job_id && e.start == start) out.push_back(e);
  }
  return out;
}

}  // namespace

std::vector<Execution> ReadExecutions(const std::string& path) {
  std::vector<Execution> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // No newline yet: a line still being written.
    Execution e;
    if (Parse(line, &e)) out.push_back(std::move(e));
  }
  return out;
}

std::vector<Execution> Starts(const std::vector<Execution>& executions, int64_t job_id) {
  return Filter(executions, job_id, true);
}

std::vector<Execution> Ends(const std::vector<Execution>& executions, int64_t job_id) {
  return Filter(executions, job_id, false);
}

}  // namespace jobwheel::testing
