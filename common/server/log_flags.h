#ifndef JOBWHEEL_COMMON_SERVER_LOG_FLAGS_H_
#define JOBWHEEL_COMMON_SERVER_LOG_FLAGS_H_

#include <string>

namespace jobwheel {

// The logging flags of the servers, defined once here: --log_json (one JSON object per line)
// and --log_level (trace, debug, info, warn or error). A binary that links this takes both;
// call after the flags are parsed.
void InitLoggingFromFlags(const std::string& component);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_LOG_FLAGS_H_
