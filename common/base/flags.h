#ifndef JOBWHEEL_COMMON_BASE_FLAGS_H_
#define JOBWHEEL_COMMON_BASE_FLAGS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace jobwheel {

// Flags that only the command line may set: an environment variable must never switch off
// authentication (a leaked or inherited environment, a container default, a `.env` file).
// Today: insecure_dev.
bool IsCommandLineOnlyFlag(absl::string_view name);

// Parses the command line with Abseil flags after taking defaults from the environment:
// flag `--foo_bar` may also come from `JOBWHEEL_FOO_BAR`; the command line wins. A
// command-line-only flag is never read from the environment: when its variable is set, the
// process refuses to start (exit 2) with a message saying so.
// Returns the positional arguments.
std::vector<char*> ParseFlagsWithEnv(int argc, char** argv, const std::string& usage);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_FLAGS_H_
