#include "common/server/log_flags.h"

#include "absl/flags/flag.h"
#include "common/base/logging.h"

ABSL_FLAG(bool, log_json, false, "Log one JSON object per line");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn or error");

namespace jobwheel {

void InitLoggingFromFlags(const std::string& component) {
  InitLogging(component, absl::GetFlag(FLAGS_log_json), absl::GetFlag(FLAGS_log_level));
}

}  // namespace jobwheel
