#include "sdk/internal/write_all.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace jobwheel::sdk {

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path, int64_t offset) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = offset < 0
                          ? ::write(fd, data.data() + done, data.size() - done)
                          : ::pwrite(fd, data.data() + done, data.size() - done,
                                     static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("write ", path, ": ", std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::sdk
