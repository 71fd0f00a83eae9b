#ifndef JOBWHEEL_COMMON_BASE_READ_FILE_H_
#define JOBWHEEL_COMMON_BASE_READ_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwheel {

// The whole file at `path`; INVALID_ARGUMENT "<what>: cannot read <path>" when it cannot be
// read (`what` names the flag or setting the path came from).
absl::StatusOr<std::string> ReadFileToString(const std::string& path, absl::string_view what);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_READ_FILE_H_
