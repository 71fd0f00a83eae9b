#ifndef JOBWHEEL_COMMON_FLAGS_H_
#define JOBWHEEL_COMMON_FLAGS_H_

#include <string>
#include <vector>

namespace jobwheel {

// Parses the command line with Abseil flags after taking defaults from the environment:
// flag `--foo_bar` may also come from `JOBWHEEL_FOO_BAR`; the command line wins.
// Returns the positional arguments.
std::vector<char*> ParseFlagsWithEnv(int argc, char** argv, const std::string& usage);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_FLAGS_H_
