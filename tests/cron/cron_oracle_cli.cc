// Reads cron differential-test cases (expression TAB zone TAB start-epoch-ms)
// from stdin and prints what CronExpression says about each, in the format of
// QuartzOracle.java: "invalid", or "valid<TAB>t1,t2,..." with up to 12 fire
// times (epoch ms) and "<TAB>loops" / "<TAB>throws" where Quartz would loop
// forever or throw.

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "services/scheduler/cron.h"

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::vector<std::string> parts = absl::StrSplit(line, '\t');
    int64_t start_ms = 0;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[2], &start_ms)) {
      std::cerr << "bad case line: " << line << "\n";
      return 2;
    }
    auto cron = jobwheel::scheduler::CronExpression::Parse(parts[0], parts[1]);
    if (!cron.ok()) {
      std::cout << "invalid\n";
      continue;
    }
    std::string out = "valid\t";
    absl::Time t = absl::FromUnixMillis(start_ms);
    for (int i = 0; i < 12; ++i) {
      const jobwheel::scheduler::CronSearch next = cron->Search(t);
      if (next.stop == jobwheel::scheduler::CronSearch::kQuartzLoops) {
        absl::StrAppend(&out, "\tloops");
        break;
      }
      if (next.stop == jobwheel::scheduler::CronSearch::kQuartzThrows) {
        absl::StrAppend(&out, "\tthrows");
        break;
      }
      if (!next.time.has_value()) break;
      absl::StrAppend(&out, i > 0 ? "," : "", absl::ToUnixMillis(*next.time));
      t = *next.time;
    }
    std::cout << out << "\n";
  }
  return 0;
}
