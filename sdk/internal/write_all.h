#ifndef JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_
#define JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jobwheel::sdk {

// Writes all of `data` to `fd`, continuing after short writes and EINTR. INTERNAL naming
// `path` and the errno on failure (part of `data` may have been written).
absl::Status WriteAll(int fd, absl::string_view data, const std::string& path);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_
