#ifndef JOBWHEEL_COMMON_TESTING_COMMAND_H_
#define JOBWHEEL_COMMON_TESTING_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace jobwheel::testing {

// What a finished command printed and how it exited.
struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed by one.
  std::string out;     // stdout
  std::string err;     // stderr
};

// Runs `binary` with `args` to completion (stdin /dev/null), capturing stdout and stderr
// separately. DEADLINE_EXCEEDED (after killing it) when it runs longer than `timeout`.
absl::StatusOr<CommandResult> RunCommand(const std::string& binary,
                                         const std::vector<std::string>& args,
                                         absl::Duration timeout = absl::Seconds(30));

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_COMMAND_H_
