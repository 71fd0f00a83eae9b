#ifndef JOBWHEEL_COMMON_BASE_LOGGING_H_
#define JOBWHEEL_COMMON_BASE_LOGGING_H_

#include <string>

#include "spdlog/spdlog.h"

namespace jobwheel {

// Sets up the default spdlog logger on stderr: human-readable, or one JSON object per line.
// `level` is one of trace, debug, info, warn, error.
void InitLogging(const std::string& component, bool json, const std::string& level);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_LOGGING_H_
