#include "bench/run_records.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_set.h"
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

Executions CollectExecutions(const std::vector<RunRecord>& records,
                             const std::vector<JobSchedule>& jobs) {
  absl::flat_hash_set<int64_t> own;
  for (const JobSchedule& j : jobs) own.insert(j.job_id);
  Executions out;
  for (const RunRecord& r : records) {
    if (!own.contains(r.job_id)) continue;
    const FireKey key(r.job_id, r.scheduled_us);
    out.keys.push_back(key);
    auto [it, inserted] = out.first_start_us.emplace(key, r.received_us);
    if (!inserted) it->second = std::min(it->second, r.received_us);
  }
  return out;
}

}  // namespace jobwheel::bench
