#ifndef JOBWHEEL_COMMON_TESTING_EXECUTIONS_H_
#define JOBWHEEL_COMMON_TESTING_EXECUTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace jobwheel::testing {

// One line of the demo executor's --executions_file: a handler execution started or ended
// on that executor.
struct Execution {
  bool start = false;  // false: "end".
  std::string handler;
  int64_t job_id = 0;
  int64_t fire_id = 0;
  int64_t run_id = 0;
  int attempt = 0;
  bool ok = false;         // "end" lines: the handler returned success.
  bool cancelled = false;  // "end" lines: the run had been cancelled (killed, timed out...).
};

// Parses the lines written so far (a missing file is none; a torn last line is skipped).
std::vector<Execution> ReadExecutions(const std::string& path);

// The lines of `executions` that are starts (or ends) of runs of `job_id`.
std::vector<Execution> Starts(const std::vector<Execution>& executions, int64_t job_id);
std::vector<Execution> Ends(const std::vector<Execution>& executions, int64_t job_id);

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_EXECUTIONS_H_
