#ifndef JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_
#define JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jobwheel::sdk {

// Writes all of `data` to `fd` — at `offset` (pwrite) when it is not negative, else at the
// file position — continuing after short writes and EINTR. INTERNAL naming `path` and the
// errno on failure (part of `data` may have been written).
absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path, int64_t offset = -1);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_
