#include "bench/run_records.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace jobwheel::bench {

std::vector<RunRecord> ParseRecords(absl::string_view text) {
  std::vector<RunRecord> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() != 6) continue;
    RunRecord r;
    if (!absl::SimpleAtoi(f[0], &r.run_id) || !absl::SimpleAtoi(f[1], &r.job_id) ||
        !absl::SimpleAtoi(f[2], &r.fire_id) || !absl::SimpleAtoi(f[3], &r.attempt) ||
        !absl::SimpleAtoi(f[4], &r.scheduled_us) || !absl::SimpleAtoi(f[5], &r.received_us)) {
      continue;
    }
    out.push_back(r);
  }
  return out;
}

std::vector<RunRecord> ReadNewRecords(const std::string& path, size_t* offset) {
  std::ifstream in(path);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(*offset));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const size_t end = text.rfind('\n');
  if (end == std::string::npos) return {};
  *offset += end + 1;
  return ParseRecords(absl::string_view(text).substr(0, end + 1));
}

}  // namespace jobwheel::bench
